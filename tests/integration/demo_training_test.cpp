// glassbox-demo trains on the CPU with every part live: it exits 0, its loss
// falls, and a scrape of its /metrics mid-run shows the host allocator, the
// handle pools, the cuDNN states and the engine at work.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <regex>
#include <string>

#include "child_process.hpp"
#include "demo_path.hpp"
#include "prometheus_text.hpp"

using glassbox::testing::ChildProcess;
using namespace std::chrono_literals;

namespace {

struct Scrape {
  std::vector<glassbox::testing::Sample> samples;
  /// Sum over the series of `name` that carry `label` = `value` (any, when label is empty).
  double sum(const std::string& name, const std::string& label = "", const std::string& value = "") const {
    double s = 0;
    for (const auto& x : samples) {
      if (x.name == name && (label.empty() || (x.labels.count(label) && x.labels.at(label) == value))) s += x.value;
    }
    return s;
  }
};

Scrape scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) throw std::runtime_error("scrape of port " + std::to_string(port) + " failed");
  return {glassbox::testing::parse_prometheus_text(res->body)};
}

int port_in_banner(const std::string& banner) {
  std::smatch m;
  if (!std::regex_search(banner, m, std::regex("metrics at http://127\\.0\\.0\\.1:(\\d+)/metrics"))) return -1;
  return std::stoi(m[1]);
}

// The step number of a progress line ("step 42  loss ..."), or -1.
int step_of(const std::string& line) {
  std::smatch m;
  return std::regex_search(line, m, std::regex("^step (\\d+)")) ? std::stoi(m[1]) : -1;
}

struct LossChange {
  double first = 0, last = 0;
  bool found = false;
};

// Reads to the end of output; the summary's "loss: A -> B" line.
LossChange read_summary(ChildProcess& demo, std::string& all) {
  LossChange loss;
  std::smatch m;
  for (std::string line = demo.read_line(); !line.empty(); line = demo.read_line()) {
    all += line;
    if (std::regex_search(line, m, std::regex("loss: ([0-9.]+) -> ([0-9.]+)"))) {
      loss = {std::stod(m[1]), std::stod(m[2]), true};
    }
  }
  return loss;
}

const std::vector<std::string> kArgs{"--device", "cpu", "--threads",      "3",
                                     "--batch",  "24",  "--metrics-addr", "127.0.0.1:0"};

std::vector<std::string> args_with(std::vector<std::string> extra) {
  extra.insert(extra.end(), kArgs.begin(), kArgs.end());
  return extra;
}

}  // namespace

TEST(DemoTraining, LossFallsOverAFixedNumberOfSteps) {
  ChildProcess demo(glassbox::testing::demo_path(), args_with({"--steps", "40"}));
  std::string out = demo.read_line() + demo.read_line();  // the live page's URL, then the banner
  EXPECT_NE(out.find("device=cpu (sim backends)"), std::string::npos) << out;
  LossChange loss = read_summary(demo, out);
  ASSERT_EQ(demo.wait(60s), 0) << out;
  EXPECT_NE(out.find("done after 40 steps"), std::string::npos) << out;
  ASSERT_TRUE(loss.found) << out;
  EXPECT_LT(loss.last, loss.first) << out;
  EXPECT_NE(out.find("handles: cublas hwm=3 created=3 cublaslt hwm=3 created=3 cudnn hwm=3 created=3"),
            std::string::npos)
      << out;
}

TEST(DemoTraining, EveryPartShowsInAScrapeMidRunAndSigintEndsItCleanly) {
  ChildProcess demo(glassbox::testing::demo_path(), args_with({"--steps", "0"}));
  std::string out = demo.read_line() + demo.read_line();  // the live page's URL, then the banner
  const int port = port_in_banner(out);
  ASSERT_GT(port, 0) << out;
  // Progress lines come about once a second; wait for enough steps to learn something.
  for (std::string line = demo.read_line(); step_of(line) < 30; line = demo.read_line()) {
    ASSERT_FALSE(line.empty()) << "the demo ended early:\n" << out;
    out += line;
  }
  Scrape s = scrape(port);
  demo.signal(SIGINT);

  EXPECT_GT(s.sum("glassbox_host_alloc_requests_total"), 0);
  EXPECT_GT(s.sum("glassbox_host_alloc_cache_hits_total"), 0);  // the batch's block is reused
  EXPECT_GT(s.sum("glassbox_host_memory_reserved_bytes"), 0);
  EXPECT_GT(s.sum("glassbox_host_requested_bytes_total"), 0);
  for (const char* library : {"cublas", "cublaslt", "cudnn"}) {
    EXPECT_EQ(s.sum("glassbox_handles_high_water_mark", "library", library), 3) << library;
    EXPECT_EQ(s.sum("glassbox_handles_created_total", "library", library), 3) << library;
  }
  EXPECT_GT(s.sum("glassbox_cudnn_state_executions_total", "state", "0"), 0);
  EXPECT_GT(s.sum("glassbox_cudnn_state_executions_total", "state", "2"), 0);  // worker 2's convolutions
  EXPECT_GT(s.sum("glassbox_autograd_nodes_executed_total"), 0);
  EXPECT_GT(s.sum("glassbox_autograd_backward_seconds_count"), 0);
  EXPECT_GE(s.sum("glassbox_autograd_reentrant_depth_max"), 1);  // checkpointed segments re-enter the engine

  LossChange loss = read_summary(demo, out);
  ASSERT_EQ(demo.wait(30s), 0) << out;
  EXPECT_NE(out.find("stopped by signal"), std::string::npos) << out;
  ASSERT_TRUE(loss.found) << out;
  EXPECT_LT(loss.last, loss.first) << out;
}

// `make demo` shows the live page's URL before anything else, and the page is there;
// GLASSBOX_METRICS_UI=false turns it off (404) and the first line says so.
TEST(DemoTraining, PrintsItsLivePageFirstAndServesIt) {
  ChildProcess demo(glassbox::testing::demo_path(), args_with({"--steps", "0"}));
  std::smatch m;
  std::string first = demo.read_line();
  ASSERT_TRUE(std::regex_search(first, m, std::regex("^glassbox-demo: live page at http://127\\.0\\.0\\.1:(\\d+)/ ")))
      << first;
  httplib::Client client("127.0.0.1", std::stoi(m[1]));
  auto page = client.Get("/");
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<title>glassbox: live</title>"), std::string::npos);
  demo.signal(SIGTERM);
  EXPECT_EQ(demo.wait(30s), 0);
}

TEST(DemoTraining, WithTheLivePageOffSlashIsNotFound) {
  ChildProcess demo(glassbox::testing::demo_path(), args_with({"--steps", "0"}), {"GLASSBOX_METRICS_UI=false"});
  std::string first = demo.read_line();
  EXPECT_NE(first.find("live page off (GLASSBOX_METRICS_UI=false)"), std::string::npos) << first;
  const int port = port_in_banner(demo.read_line());
  ASSERT_GT(port, 0);
  httplib::Client client("127.0.0.1", port);
  auto page = client.Get("/");
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  EXPECT_EQ(page->status, 404);
  EXPECT_EQ(client.Get("/metrics")->status, 200);
  demo.signal(SIGTERM);
  EXPECT_EQ(demo.wait(30s), 0);
}
