// glassbox-demo trains on the GPU: with --device cuda (and auto on a GPU
// machine) it exits 0, its loss falls, and its summary shows the pinned
// allocator staging batches, the real handle pools, cuDNN states and the
// engine's checkpointed (reentrant) backward at work.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "child_process.hpp"
#include "demo_path.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "gpu_required.hpp"

using glassbox::testing::ChildProcess;
using namespace std::chrono_literals;

namespace {

class GpuDemo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
  }

  // Runs the demo to its end; its exit status and whole output.
  static std::pair<int, std::string> run_demo(const std::string& device, int steps) {
    ChildProcess demo(glassbox::testing::demo_path(),
                      {"--device", device, "--steps", std::to_string(steps), "--threads", "4", "--batch", "32",
                       "--metrics-addr", "127.0.0.1:0"});
    const int status = demo.wait(120s);
    return {status, demo.log()};
  }

  // The first number group of `pattern` in `out`, or -1 when absent.
  static double number(const std::string& out, const std::string& pattern, int group = 1) {
    std::smatch m;
    return std::regex_search(out, m, std::regex(pattern)) ? std::stod(m[group]) : -1;
  }
};

TEST_F(GpuDemo, TrainsOnTheGpuAndTheLossFalls) {
  auto [status, out] = run_demo("cuda", 40);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("device=cuda (GPU 0 of "), std::string::npos) << out;
  EXPECT_NE(out.find("done after 40 steps"), std::string::npos) << out;
  const double first = number(out, "loss: ([0-9.]+) -> ([0-9.]+)", 1);
  const double last = number(out, "loss: ([0-9.]+) -> ([0-9.]+)", 2);
  ASSERT_GT(first, 0) << out;
  EXPECT_LT(last, first) << out;
  // One pinned block per shard and step, reused from the cache.
  EXPECT_GE(number(out, "pinned memory: peak \\d+ bytes held, (\\d+) requests"), 160) << out;
  EXPECT_GT(number(out, "(\\d+) cache hits"), 0) << out;
  for (const char* library : {"cublas", "cublaslt", "cudnn"}) {
    EXPECT_GE(number(out, std::string(library) + " hwm=(\\d+)"), 4) << library << "\n" << out;
  }
  EXPECT_GT(number(out, "cudnn states: (\\d+) executions"), 0) << out;
  // A handful of shapes, asked once each (or once per thread that missed one
  // at the same moment); every other convolution's plan comes from the cache.
  const double hits = number(out, "algorithm cache: (\\d+) hits, (\\d+) misses", 1);
  const double misses = number(out, "algorithm cache: (\\d+) hits, (\\d+) misses", 2);
  EXPECT_GT(misses, 0) << out;
  EXPECT_GT(hits, 10 * misses) << out;
  EXPECT_GE(number(out, "reentrant depth max (\\d+)"), 1) << out;
}

TEST_F(GpuDemo, AutoPicksTheGpu) {
  auto [status, out] = run_demo("auto", 2);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("device=cuda (GPU 0 of "), std::string::npos) << out;
}

}  // namespace
