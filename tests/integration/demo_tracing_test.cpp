// glassbox-demo with tracing from the environment, as a person runs it: the
// trace file is valid JSON after SIGINT or SIGTERM mid-run, and with an OTLP
// endpoint set as well both receive the same spans; and OTLP metric push.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "demo_path.hpp"
#include "otlp_collector.hpp"
#include "trace_file_reader.hpp"

namespace fs = std::filesystem;
using glassbox::testing::ChildProcess;
using glassbox::testing::read_all;
using glassbox::testing::read_trace_file;
using namespace std::chrono_literals;

namespace {

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

const std::vector<std::string> kArgs{"--iterations", "0",   "--threads",      "4",          "--interval-ms", "10",
                                     "--device",     "cpu", "--metrics-addr", "127.0.0.1:0"};

}  // namespace

class DemoSignal : public ::testing::TestWithParam<int> {};

TEST_P(DemoSignal, TheTraceFileIsValidAfterTheSignal) {
  std::string path = temp_path(std::to_string(GetParam()));
  ChildProcess demo(glassbox::testing::demo_path(), kArgs,
                    {"GLASSBOX_TRACE_FILE=" + path, "OTEL_BSP_SCHEDULE_DELAY=50"});
  demo.read_line();  // the live page's URL
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
  EXPECT_TRUE(thread_names.count("worker-0") && thread_names.count("worker-3")) << "worker threads are not named";
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, DemoSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& param_info) { return param_info.param == SIGINT ? "SIGINT" : "SIGTERM"; });

TEST(DemoTracing, OtlpAndTheTraceFileReceiveTheSameSpans) {
  glassbox::testing::OtlpCollector collector;
  std::string path = temp_path("fanout");
  ChildProcess demo(
      glassbox::testing::demo_path(),
      {"--iterations", "3", "--threads", "2", "--interval-ms", "0", "--device", "cpu", "--metrics-addr", "127.0.0.1:0"},
      {"GLASSBOX_TRACE_FILE=" + path, "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.base_url(),
       "OTEL_SERVICE_NAME=demo-under-test"});
  demo.read_line();  // the live page's URL
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

// OTEL_METRICS_EXPORTER=otlp pushes the registry to the collector every
// interval while /metrics keeps serving the same families.
TEST(DemoTracing, MetricsArePushedOverOtlpWhileMetricsKeepsServing) {
  glassbox::testing::OtlpCollector collector;
  ChildProcess demo(glassbox::testing::demo_path(), kArgs,
                    {"OTEL_METRICS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.base_url(),
                     "OTEL_METRIC_EXPORT_INTERVAL=200", "OTEL_SERVICE_NAME=demo-under-test",
                     "OTEL_RESOURCE_ATTRIBUTES=service.instance.id=demo-1", "OTEL_TRACES_SAMPLER=always_off"});
  demo.read_line();  // the live page's URL
  std::string banner = demo.read_line();
  EXPECT_NE(banner.find("metrics push: otlp -> " + collector.metrics_url() + " every 200 ms"), std::string::npos)
      << banner;
  const std::regex url(R"(http://(127\.0\.0\.1:[0-9]+)/metrics)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(banner, m, url)) << banner;
  auto pushed_family = [&](const std::string& name) {
    for (const auto& req : collector.requests()) {
      if (req.path != "/v1/metrics") continue;
      auto body = nlohmann::json::parse(req.body);
      for (const auto& sm : body["resourceMetrics"][0]["scopeMetrics"]) {
        for (const auto& metric : sm["metrics"]) {
          if (metric["name"] == name) return true;
        }
      }
    }
    return false;
  };
  // A family appears in a push only once the demo has touched that part, and
  // the parts start at different times (slower under sanitizers): wait for all.
  const std::vector<std::string> families{"glassbox_host_alloc_requests_total", "glassbox_autograd_backward_seconds",
                                          "glassbox_handles_high_water_mark"};
  auto missing = [&] {
    std::vector<std::string> out;
    for (const auto& f : families) {
      if (!pushed_family(f)) out.push_back(f);
    }
    return out;
  };
  for (auto deadline = std::chrono::steady_clock::now() + 20s;
       !missing().empty() && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(50ms);  // the demo pushes every 200 ms
  }
  EXPECT_EQ(missing(), std::vector<std::string>{});
  auto scrape = httplib::Client("http://" + m[1].str()).Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  EXPECT_NE(scrape->body.find("glassbox_metric_points_exported_total{exporter=\"otlp\"}"), std::string::npos);
  auto body = nlohmann::json::parse(collector.requests().back().body);
  std::string instance;
  for (const auto& a : body["resourceMetrics"][0]["resource"]["attributes"]) {
    if (a["key"] == "service.instance.id") instance = a["value"]["stringValue"];
  }
  EXPECT_EQ(instance, "demo-1");
  demo.signal(SIGINT);
  EXPECT_EQ(demo.wait(30s), 0);
}
