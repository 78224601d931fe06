#pragma once
// A program the test starts and stops, as a person would from a shell: extra
// environment variables on top of the test's own, stdout and stderr into a
// log file the test reads while it runs. The destructor kills and reaps a
// child that is still running, so a failed assertion leaves no process behind.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace glassbox::testing {

class ChildProcess {
 public:
  /// Output goes to `log_path`, or to a temporary file removed with the object.
  ChildProcess(const std::string& program, const std::vector<std::string>& args,
               const std::vector<std::string>& extra_env = {}, const std::string& log_path = {})
      : log_path_(log_path.empty() ? temp_log() : log_path), own_log_(log_path.empty()) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<std::string> argv_s{program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = extra_env;  // first, so they win over the test's own
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    auto argv = pointers(argv_s), envp = pointers(env_s);
    int rc = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (own_log_) std::remove(log_path_.c_str());
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    if (::waitpid(pid_, &status_, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  /// Everything the child has written so far.
  std::string log() const {
    std::ifstream in(log_path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// The first capture group of `pattern` in what the child has written, once
  /// it appears; empty when the child exits or `timeout` passes first.
  std::string wait_for_log(const std::regex& pattern, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const bool alive = running();  // read after this, so a last line is not missed
      const std::string text = log();
      if (std::smatch m; std::regex_search(text, m, pattern)) return m[1];
      if (!alive || std::chrono::steady_clock::now() > deadline) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the log is a file the child writes
    }
  }
  /// The next whole line the child writes (with its newline), once written;
  /// empty when the child has exited and every line was read, or at `timeout`.
  std::string read_line(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const bool alive = running();  // read after this, so a last line is not missed
      const std::string text = log();
      if (auto nl = text.find('\n', read_pos_); nl != std::string::npos) {
        std::string line = text.substr(read_pos_, nl + 1 - read_pos_);
        read_pos_ = nl + 1;
        return line;
      }
      if (!alive || std::chrono::steady_clock::now() > deadline) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  /// The exit status once it exits within `timeout`; -1 when it is still
  /// running then, or was ended by a signal.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // waitpid has no timeout
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  static std::vector<char*> pointers(std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  }
  static std::string temp_log() {
    static std::atomic<int> counter{0};
    return "/tmp/glassbox-child-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".log";
  }
  std::string log_path_;
  bool own_log_;
  std::size_t read_pos_ = 0;
  pid_t pid_ = -1;
  int status_ = 0;
};

}  // namespace glassbox::testing
