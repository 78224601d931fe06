// CUDA tensors against the CPU: every op forward and backward, matmul through
// cuBLAS, conv2d through cuDNN, cross entropy, checkpoint, graphs that mix the
// CPU with one or two GPUs, and to() round trips through pinned staging.
// Each case builds the same graph twice from the same values, once on the
// CPU and once on a GPU, and compares values and gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/autograd/use_cuda.hpp"
#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/error.hpp"
#include "glassbox/metrics/registry.hpp"
#include "gpu_required.hpp"
#include "test_kernels.hpp"

namespace ga = glassbox::autograd;
namespace gcu = glassbox::cuda;
using ga::kCpu;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

namespace {

class GpuAutograd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
    ga::use_cuda();
  }
};

std::vector<float> random_values(std::int64_t n, std::uint32_t seed, float lo = -1.0F, float hi = 1.0F) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// A leaf on `device` with values drawn from `seed`.
Tensor leaf(Shape shape, int device, std::uint32_t seed, float lo = -1.0F, float hi = 1.0F) {
  return Tensor::from(shape, random_values(shape.numel(), seed, lo, hi), device).set_requires_grad(true);
}

std::vector<float> host_values(const Tensor& t) {
  Tensor h = ga::to(t.detach(), kCpu);
  return {h.data().begin(), h.data().end()};
}

// Largest |a - b| relative to 1 + |b|: float rounding differs between the
// GPU's kernels (and cuBLAS/cuDNN's summation orders) and the host loops.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tolerance, const std::string& what) {
  ASSERT_TRUE(gpu.defined()) << what << ": no GPU result";
  ASSERT_TRUE(cpu.defined()) << what << ": no CPU result";
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  std::vector<float> g = host_values(gpu);
  std::span<const float> c = cpu.data();
  double worst = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_FALSE(std::isnan(g[i])) << what << " [" << i << "]";
    worst = std::max(worst, std::abs(double(g[i]) - c[i]) / (1.0 + std::abs(double(c[i]))));
  }
  EXPECT_LT(worst, tolerance) << what;
}

// Builds `f` over leaves of `shapes` on the CPU and on `device`, reduces each
// result to a scalar through fixed random weights (so every element's
// gradient differs), runs backward, and compares outputs and gradients.
using Build = std::function<Tensor(const TensorList&)>;

void compare_with_cpu(const std::string& what, const std::vector<Shape>& shapes, const Build& f, int device = 0,
                      float lo = -1.0F, float hi = 1.0F, double tolerance = 1e-5) {
  TensorList cpu_in, gpu_in;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    cpu_in.push_back(leaf(shapes[i], kCpu, 100 + static_cast<std::uint32_t>(i), lo, hi));
    gpu_in.push_back(leaf(shapes[i], device, 100 + static_cast<std::uint32_t>(i), lo, hi));
    ASSERT_TRUE(gpu_in.back().in_device_memory());
  }
  Tensor cpu_out = f(cpu_in);
  Tensor gpu_out = f(gpu_in);
  ASSERT_TRUE(gpu_out.in_device_memory()) << what;
  expect_close(gpu_out, cpu_out, tolerance, what + " forward");
  std::vector<float> w = random_values(cpu_out.numel(), 7);
  ga::backward({ga::sum(cpu_out * Tensor::from(cpu_out.shape(), w))});
  ga::backward({ga::sum(gpu_out * Tensor::from(gpu_out.shape(), w, device))});
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    ASSERT_TRUE(gpu_in[i].grad().in_device_memory()) << what << " input " << i;
    expect_close(gpu_in[i].grad(), cpu_in[i].grad(), tolerance, what + " gradient of input " + std::to_string(i));
  }
}

TEST_F(GpuAutograd, ElementwiseOpsMatchTheCpuForwardAndBackward) {
  const std::vector<Shape> two{Shape{37, 19}, Shape{37, 19}};
  const std::vector<Shape> one{Shape{1000, 3}};
  compare_with_cpu("add", two, [](const TensorList& t) { return t[0] + t[1]; });
  compare_with_cpu("sub", two, [](const TensorList& t) { return t[0] - t[1]; });
  compare_with_cpu("mul", two, [](const TensorList& t) { return t[0] * t[1]; });
  // Denominators kept away from zero by the value range.
  compare_with_cpu(
      "div", two, [](const TensorList& t) { return t[0] / t[1]; }, 0, 0.5F, 1.5F);
  compare_with_cpu("mul by a scalar", one, [](const TensorList& t) { return t[0] * -2.5F; });
  compare_with_cpu("relu", one, [](const TensorList& t) { return ga::relu(t[0]); });
  compare_with_cpu("sigmoid", one, [](const TensorList& t) { return ga::sigmoid(t[0]); });
  compare_with_cpu("tanh", one, [](const TensorList& t) { return ga::tanh(t[0]); });
}

TEST_F(GpuAutograd, ReductionsAndLossesMatchTheCpu) {
  // Large enough that the one-block reduction loops many times per thread.
  const std::vector<Shape> big{Shape{300, 111}};
  compare_with_cpu("sum", big, [](const TensorList& t) { return ga::sum(t[0]); });
  compare_with_cpu("mean", big, [](const TensorList& t) { return ga::mean(t[0]); });
  compare_with_cpu("mse_loss", {Shape{64, 9}, Shape{64, 9}},
                   [](const TensorList& t) { return ga::mse_loss(t[0], t[1]); });
  std::vector<std::int64_t> targets;
  for (int i = 0; i < 40; ++i) targets.push_back((i * 7) % 11);
  compare_with_cpu("log_softmax", {Shape{40, 11}}, [](const TensorList& t) { return ga::log_softmax(t[0]); });
  compare_with_cpu("cross_entropy", {Shape{40, 11}},
                   [&](const TensorList& t) { return ga::cross_entropy(t[0] * 3.0F, targets); });
}

TEST_F(GpuAutograd, MatmulThroughCublasMatchesTheCpu) {
  // Non-square and odd sizes: a swapped dimension or leading dimension shows.
  compare_with_cpu("matmul", {Shape{33, 17}, Shape{17, 29}},
                   [](const TensorList& t) { return ga::matmul(t[0], t[1]); });
  compare_with_cpu("matmul chain", {Shape{5, 64}, Shape{64, 3}, Shape{3, 7}},
                   [](const TensorList& t) { return ga::tanh(ga::matmul(ga::matmul(t[0], t[1]), t[2])); });
}

TEST_F(GpuAutograd, Conv2dThroughCudnnMatchesTheCpuReference) {
  compare_with_cpu(
      "conv2d stride 2 padding 1", {Shape{2, 3, 9, 11}, Shape{4, 3, 3, 3}, Shape{4}},
      [](const TensorList& t) { return ga::conv2d(t[0], t[1], t[2], 2, 1); }, 0, -1.0F, 1.0F, 1e-4);
  compare_with_cpu(
      "conv2d without bias", {Shape{1, 2, 6, 6}, Shape{3, 2, 2, 2}},
      [](const TensorList& t) { return ga::relu(ga::conv2d(t[0], t[1], Tensor(), 1, 0)); }, 0, -1.0F, 1.0F, 1e-4);
}

// Full FP32, as the CPU: an engine that rounds inputs to TF32 (tensor cores)
// errs by about 1e-3 here (576 products a sum), full FP32 by about 1e-6.
TEST_F(GpuAutograd, Conv2dComputesInFullFp32NotTf32) {
  compare_with_cpu(
      "conv2d of 64 channels", {Shape{2, 64, 12, 12}, Shape{32, 64, 3, 3}, Shape{32}},
      [](const TensorList& t) { return ga::conv2d(t[0], t[1], t[2], 1, 1); }, 0, -1.0F, 1.0F, 2e-5);
}

// The conv plan caches' hits or misses (`what`) so far, summed over the three directions.
double plan_cache(const std::string& what) {
  const auto snap = glassbox::metrics::Registry::global().snapshot();
  double total = 0;
  for (const char* cache : {"conv_forward", "conv_backward_data", "conv_backward_filter"}) {
    total +=
        glassbox::metrics::sum_series(snap, "glassbox_cudnn_algorithm_cache_" + what + "_total", {{"cache", cache}});
  }
  return total;
}

// Output and every gradient of one conv2d of fresh leaves (fixed values) on the GPU.
std::vector<std::vector<float>> conv_results(const std::vector<Shape>& shapes, int stride) {
  Tensor x = leaf(shapes[0], 0, 11), w = leaf(shapes[1], 0, 12), b = leaf(shapes[2], 0, 13);
  Tensor y = ga::conv2d(x, w, b, stride, 1);
  ga::backward({ga::sum(y * Tensor::from(y.shape(), random_values(y.numel(), 14), 0))});
  return {host_values(y), host_values(x.grad()), host_values(w.grad()), host_values(b.grad())};
}

TEST_F(GpuAutograd, Conv2dAsksCudnnOncePerShapesAndCachedPlansComputeTheSame) {
  // Shapes no other test uses: the first run is the caches' first sight of them.
  const std::vector<Shape> shapes{Shape{3, 5, 13, 7}, Shape{6, 5, 3, 3}, Shape{6}};
  const double misses = plan_cache("misses"), hits = plan_cache("hits");
  const auto first = conv_results(shapes, 2);
  EXPECT_EQ(plan_cache("misses") - misses, 3) << "forward, backward data and backward filter each asked once";
  EXPECT_EQ(plan_cache("hits") - hits, 0);
  const auto second = conv_results(shapes, 2);
  EXPECT_EQ(plan_cache("misses") - misses, 3) << "the second run asked cuDNN again";
  EXPECT_EQ(plan_cache("hits") - hits, 3);
  const char* what[] = {"output", "input gradient", "weight gradient", "bias gradient"};
  for (std::size_t i = 0; i < first.size(); ++i) {
    ASSERT_EQ(first[i].size(), second[i].size()) << what[i];
    for (std::size_t j = 0; j < first[i].size(); ++j) {
      ASSERT_NEAR(second[i][j], first[i][j], 1e-5 * (1.0 + std::abs(first[i][j]))) << what[i] << " [" << j << "]";
    }
  }
  // And with every plan from the cache, still the CPU's convolution.
  compare_with_cpu(
      "conv2d from cached plans", shapes, [](const TensorList& t) { return ga::conv2d(t[0], t[1], t[2], 2, 1); }, 0,
      -1.0F, 1.0F, 1e-4);
}

TEST_F(GpuAutograd, ThreadsConvolvingNewShapesAtOnceAllMatchTheCpu) {
  // Eight threads miss one key together, then hit it, each through its own cuDNN state.
  constexpr int kThreads = 8;
  const std::vector<Shape> shapes{Shape{4, 3, 10, 10}, Shape{5, 3, 3, 3}, Shape{5}};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 3; ++round) {
          Tensor x = leaf(shapes[0], 0, 20 + t), w = leaf(shapes[1], 0, 40 + t), b = leaf(shapes[2], 0, 60 + t);
          Tensor cx = leaf(shapes[0], kCpu, 20 + t), cw = leaf(shapes[1], kCpu, 40 + t),
                 cb = leaf(shapes[2], kCpu, 60 + t);
          std::vector<float> gpu = host_values(ga::conv2d(x, w, b, 1, 1));
          Tensor cpu = ga::conv2d(cx, cw, cb, 1, 1);
          for (std::size_t i = 0; i < gpu.size(); ++i) {
            if (!(std::abs(gpu[i] - cpu.data()[i]) < 1e-4 * (1.0 + std::abs(cpu.data()[i])))) {
              failures[t] = "round " + std::to_string(round) + " [" + std::to_string(i) +
                            "]: " + std::to_string(gpu[i]) + " against the CPU's " + std::to_string(cpu.data()[i]);
              return;
            }
          }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(GpuAutograd, CheckpointRecomputesOnTheGpu) {
  compare_with_cpu("checkpoint", {Shape{16, 16}, Shape{16, 16}}, [](const TensorList& t) {
    return ga::checkpoint([](const TensorList& in) { return TensorList{ga::tanh(ga::matmul(in[0], in[1])) * in[0]}; },
                          t)[0];
  });
}

// CPU leaf -> GPU compute -> CPU loss: gradients cross both ways, and each
// leaf's gradient lands in its own memory.
TEST_F(GpuAutograd, MixedCpuAndGpuGraphMatchesAnAllCpuGraph) {
  auto run = [](int device) {
    Tensor x = leaf(Shape{8, 12}, kCpu, 1);
    Tensor w = leaf(Shape{12, 5}, device, 2);
    Tensor target = Tensor::from(Shape{8, 5}, random_values(40, 3));
    Tensor h = ga::tanh(ga::matmul(ga::to(x, device), w));
    Tensor loss = ga::mse_loss(ga::to(ga::sigmoid(h), kCpu), target) + ga::mean(ga::to(h * h, kCpu));
    ga::backward({loss});
    return TensorList{loss, x.grad(), w.grad()};
  };
  TensorList cpu = run(kCpu);
  TensorList gpu = run(0);
  EXPECT_FALSE(gpu[0].in_device_memory());
  EXPECT_FALSE(gpu[1].in_device_memory()) << "the CPU leaf's gradient is in host memory";
  EXPECT_TRUE(gpu[2].in_device_memory()) << "the GPU leaf's gradient is in device memory";
  expect_close(gpu[0], cpu[0], 1e-5, "loss");
  expect_close(gpu[1], cpu[1], 1e-5, "gradient of the CPU leaf");
  expect_close(gpu[2], cpu[2], 1e-5, "gradient of the GPU leaf");
}

TEST_F(GpuAutograd, TwoGpusInOneGraph) {
  if (glassbox::testing::lacks_devices(2)) GTEST_SKIP() << "needs two CUDA devices";
  auto run = [](int first, int second) {
    Tensor x = leaf(Shape{64, 32}, first, 4);
    Tensor w = leaf(Shape{32, 16}, second, 5);
    Tensor on_second = ga::matmul(ga::to(ga::relu(x) * 2.0F, second), w);
    Tensor back_on_first = ga::to(ga::sigmoid(on_second), first);
    Tensor loss = ga::to(ga::sum(back_on_first * back_on_first), kCpu);
    ga::backward({loss});
    return TensorList{loss, x.grad(), w.grad()};
  };
  TensorList cpu = run(kCpu, kCpu);
  TensorList gpu = run(0, 1);
  EXPECT_EQ(gpu[1].device(), 0);
  EXPECT_EQ(gpu[2].device(), 1);
  expect_close(gpu[0], cpu[0], 1e-5, "loss");
  expect_close(gpu[1], cpu[1], 1e-5, "gradient on device 0");
  expect_close(gpu[2], cpu[2], 1e-5, "gradient on device 1");
}

TEST_F(GpuAutograd, ToRoundTripsAreExactAndStageThroughTheHostAllocator) {
  auto requests = [] {
    std::int64_t n = 0;
    for (const auto& c : gcu::cuda_host_allocator().stats().classes) n += c.requests;
    return n;
  };
  const std::int64_t before = requests();
  std::vector<float> values = random_values(4099, 9);
  Tensor x = Tensor::from(Shape{4099}, values);
  Tensor on_gpu = ga::to(x, 0);
  EXPECT_TRUE(on_gpu.in_device_memory());
  Tensor back = ga::to(on_gpu, kCpu);
  EXPECT_FALSE(back.in_device_memory());
  EXPECT_EQ(std::vector<float>(back.data().begin(), back.data().end()), values);
  EXPECT_GE(requests() - before, 2) << "one pinned block up, one down";
  if (gcu::cuda_device_count() >= 2) {
    Tensor via_one = ga::to(ga::to(on_gpu, 1), kCpu);
    EXPECT_EQ(std::vector<float>(via_one.data().begin(), via_one.data().end()), values);
  }
}

// Uploads queued behind a long kernel, each from a pinned block freed at
// once: without record_stream the allocator would hand the block to the next
// upload, overwriting values the stream has not copied yet.
TEST_F(GpuAutograd, StagingBlocksAreNotReusedBeforeTheStreamCopiedThem) {
  cudaStream_t s = gcu::cuda_device_kernels().stream(0);
  gcu::DeviceGuard guard(0);
  glassbox::testing::spin_then_copy(nullptr, nullptr, 0, 200'000'000LL, s);  // ~0.1 s at H100 clocks
  gcu::check_cuda(cudaGetLastError(), "spin kernel launch");
  TensorList uploaded;
  for (int i = 0; i < 16; ++i) {
    uploaded.push_back(Tensor::from(Shape{1024}, std::vector<float>(1024, static_cast<float>(i)), 0));
  }
  for (int i = 0; i < 16; ++i) {
    std::vector<float> got = host_values(uploaded[static_cast<std::size_t>(i)]);
    EXPECT_EQ(got, std::vector<float>(1024, static_cast<float>(i))) << "upload " << i;
  }
}

TEST_F(GpuAutograd, HostReadsOfDeviceMemoryFailClearly) {
  Tensor x = Tensor::full(Shape{3}, 2.0F, 0);
  try {
    (void)x.data();
    FAIL() << "data() of a CUDA tensor returned";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("to(x, kCpu)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ga::sum(x).item(), 6.0F) << "item() copies";
  EXPECT_THROW(Tensor::zeros(Shape{2}, gcu::cuda_device_count()), glassbox::Error);
}

// nll_loss checks its targets on the host, so a target out of range on the
// device was changed on the way there (as a block of pinned staging reused
// too early would): the kernels stop with a device-side assert instead of
// reading (forward) or writing (backward) outside the row. The context is
// lost after it, so each case runs in a child process of its own. Without
// the check (a mutant, on an H100) both bad targets ran with no error at
// all: the read and the write outside the row landed in pooled memory.
void run_nll_with_target(bool backward, std::int64_t target) {
  try {
    gcu::CudaDeviceKernels& k = gcu::cuda_device_kernels();
    constexpr std::size_t kRows = 2, kCols = 3;
    float* lp = k.allocate(0, kRows * kCols);
    float* out = k.allocate(0, kRows * kCols);
    k.fill(0, lp, kRows * kCols, -1.0F);
    const std::int64_t targets[kRows] = {0, target};
    if (backward) {
      k.nll_loss_backward(0, lp, targets, out, kRows, kCols);
    } else {
      k.nll_loss(0, lp, targets, out, kRows, kCols);
    }
    float host[kRows * kCols];
    k.copy_to_host(0, out, host, kRows * kCols);  // waits for the kernel
    std::fprintf(stderr, "no error\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  std::abort();
}

using GpuAutogradDeathTest = GpuAutograd;

TEST_F(GpuAutogradDeathTest, ATargetChangedOnItsWayToTheDeviceStopsTheLossWithADeviceAssert) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_nll_with_target(false, 1 << 20), "device-side assert triggered");
  EXPECT_DEATH(run_nll_with_target(true, -1), "device-side assert triggered");
  EXPECT_DEATH(run_nll_with_target(false, 2), "no error") << "an in-range target runs";
}

}  // namespace
