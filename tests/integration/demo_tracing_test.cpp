// glassbox-demo with tracing from the environment, as a person runs it: the
// trace file is valid JSON after SIGINT or SIGTERM mid-run, and with an OTLP
// endpoint set as well both receive the same spans.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "otlp_collector.hpp"
#include "trace_file_reader.hpp"

extern char** environ;

namespace fs = std::filesystem;
using glassbox::testing::read_all;
using glassbox::testing::read_trace_file;
using namespace std::chrono_literals;

namespace {

// The demo as a child process with extra environment variables; its stdout
// is read through a pipe.
class Demo {
 public:
  Demo(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> argv_s{GLASSBOX_DEMO_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = extra_env;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    auto argv = pointers(argv_s), envp = pointers(env_s);
    int rc = ::posix_spawn(&pid_, GLASSBOX_DEMO_PATH, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) throw std::runtime_error("posix_spawn failed: " + std::to_string(rc));
    out_ = ::fdopen(fds[0], "r");
  }
  ~Demo() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  std::string read_line() {
    char buf[1024];
    return std::fgets(buf, sizeof buf, out_) ? std::string(buf) : std::string();
  }
  void signal(int sig) { ::kill(pid_, sig); }
  std::uint64_t pid() const { return static_cast<std::uint64_t>(pid_); }
  /// The exit status; -1 when it did not exit normally within `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(10ms);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  static std::vector<char*> pointers(std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  }
  pid_t pid_ = -1;
  std::FILE* out_ = nullptr;
};

std::string temp_path(const std::string& tag) {
  return (fs::temp_directory_path() / ("glassbox-demo-" + std::to_string(::getpid()) + "-" + tag + ".json")).string();
}

bool wait_for_text(const std::string& path, const std::string& text, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (read_all(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);  // polling a file another process writes
  }
  return true;
}

const std::vector<std::string> kArgs{"--iterations", "0",   "--threads",      "4",   "--interval-ms",
                                     "10",           "--device", "cpu", "--metrics-addr", "127.0.0.1:0"};

}  // namespace

class DemoSignal : public ::testing::TestWithParam<int> {};

TEST_P(DemoSignal, TheTraceFileIsValidAfterTheSignal) {
  std::string path = temp_path(std::to_string(GetParam()));
  Demo demo(kArgs, {"GLASSBOX_TRACE_FILE=" + path, "OTEL_BSP_SCHEDULE_DELAY=50"});
  std::string banner = demo.read_line();
  EXPECT_NE(banner.find("traces: file " + path), std::string::npos) << banner;
  ASSERT_TRUE(wait_for_text(path, "glassbox.demo.round", 20s)) << "no round span reached the file";
  demo.signal(GetParam());
  std::uint64_t pid = demo.pid();
  ASSERT_EQ(demo.wait(20s), 0);
  auto t = read_trace_file(path, pid);
  fs::remove(path);
  std::set<std::string> names;
  for (const auto& s : t.slices) names.insert(s.name);
  EXPECT_TRUE(names.count("glassbox.demo.round") && names.count("glassbox.demo.worker") &&
              names.count("glassbox.handle_pool.create"));
  EXPECT_GE(t.flows, 4u);  // each round's span hands off to 4 worker threads
  std::set<std::string> thread_names;
  for (const auto& [tid, name] : t.thread_names) thread_names.insert(name);
  EXPECT_TRUE(thread_names.count("churn-0") && thread_names.count("churn-3")) << "worker threads are not named";
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, DemoSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& param_info) { return param_info.param == SIGINT ? "SIGINT" : "SIGTERM"; });

TEST(DemoTracing, OtlpAndTheTraceFileReceiveTheSameSpans) {
  glassbox::testing::OtlpCollector collector;
  std::string path = temp_path("fanout");
  Demo demo({"--iterations", "3", "--threads", "2", "--interval-ms", "0", "--device", "cpu", "--metrics-addr",
             "127.0.0.1:0"},
            {"GLASSBOX_TRACE_FILE=" + path, "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.base_url(),
             "OTEL_SERVICE_NAME=demo-under-test"});
  std::string banner = demo.read_line();
  EXPECT_NE(banner.find("otlp -> " + collector.traces_url()), std::string::npos) << banner;
  std::uint64_t pid = demo.pid();
  ASSERT_EQ(demo.wait(30s), 0);

  std::set<std::string> from_otlp;
  for (const auto& req : collector.requests()) {
    auto body = nlohmann::json::parse(req.body);
    for (const auto& rs : body["resourceSpans"]) {
      for (const auto& a : rs["resource"]["attributes"]) {
        if (a["key"] == "service.name") {
          EXPECT_EQ(a["value"]["stringValue"], "demo-under-test");
        }
      }
      for (const auto& ss : rs["scopeSpans"]) {
        for (const auto& s : ss["spans"]) from_otlp.insert(s["spanId"].get<std::string>());
      }
    }
  }
  auto t = read_trace_file(path, pid);
  fs::remove(path);
  std::set<std::string> from_file;
  for (const auto& s : t.slices) from_file.insert(s.args["span_id"].get<std::string>());
  EXPECT_EQ(from_otlp, from_file);
  EXPECT_GE(from_file.size(), 3u * (1 + 2));  // per round: the round and 2 workers, plus handle creations
  EXPECT_EQ(t.process_name, "demo-under-test");
}
