// The cuDNN state wrapper on a real GPU: convolutions through four states
// from eight threads, each checked against a CPU convolution. The inputs are
// written and the outputs read on each caller's own stream, so a result is
// right only if the state's stream really waited for the caller and the
// caller for the state. Also what only CUDA has: handles bound to streams
// (cudnnGetStream) and the legacy default stream. Behaviour any backend
// shows is in the typed suite tests/typed/cudnn_state_typed.hpp,
// instantiated for CUDA in cuda_typed_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "glassbox/metrics/registry.hpp"
#include "gpu_required.hpp"
#include "test_kernels.hpp"

namespace gcu = glassbox::cuda;
namespace gc = glassbox::cudnn;
using glassbox::testing::fill_pattern;
using glassbox::testing::pattern;

namespace {

constexpr int kThreads = 8;
constexpr int kStates = 4;
constexpr int kRounds = 4;
// NCHW input, KCRS filter, padding 1, stride 1: the output is N x K x H x W.
constexpr int kN = 2, kC = 3, kH = 24, kW = 24, kK = 8, kR = 3, kS = 3, kPad = 1;
constexpr int kInput = kN * kC * kH * kW;
constexpr int kFilter = kK * kC * kR * kS;
constexpr int kOutput = kN * kK * kH * kW;

class GpuCudnnState : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
    gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  }
};

// A caller's own stream and buffers on device 0.
struct Caller {
  cudaStream_t stream = nullptr;
  float* x = nullptr;
  float* w = nullptr;
  float* y = nullptr;
  Caller() {
    gcu::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(&x), kInput * sizeof(float)), "cudaMalloc x");
    gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(&w), kFilter * sizeof(float)), "cudaMalloc w");
    gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(&y), kOutput * sizeof(float)), "cudaMalloc y");
  }
  ~Caller() {
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    cudaStreamDestroy(stream);
  }
  Caller(const Caller&) = delete;
  Caller& operator=(const Caller&) = delete;

  // Inputs from the seed, and the output poisoned with NaN, all on the caller's stream.
  void prepare(float seed) {
    fill_pattern(x, kInput, seed, -1.0f, stream);
    fill_pattern(w, kFilter, 0.25f, -seed, stream);
    gcu::check_cuda(cudaGetLastError(), "fill_pattern launch");
    gcu::check_cuda(cudaMemsetAsync(y, 0xff, kOutput * sizeof(float), stream), "cudaMemsetAsync");
  }

  std::vector<float> output() {
    std::vector<float> out(kOutput);
    gcu::check_cuda(cudaMemcpyAsync(out.data(), y, kOutput * sizeof(float), cudaMemcpyDeviceToHost, stream),
                    "cudaMemcpyAsync");
    gcu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return out;
  }
};

// cuDNN's descriptors for the fixed shapes, FP32 with plain FMA math (no TF32).
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvDescriptors() {
    gcu::check_cudnn(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    gcu::check_cudnn(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    gcu::check_cudnn(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    gcu::check_cudnn(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    gcu::check_cudnn(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kC, kH, kW),
                     "cudnnSetTensor4dDescriptor x");
    gcu::check_cudnn(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, kN, kK, kH, kW),
                     "cudnnSetTensor4dDescriptor y");
    gcu::check_cudnn(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, kK, kC, kR, kS),
                     "cudnnSetFilter4dDescriptor");
    gcu::check_cudnn(
        cudnnSetConvolution2dDescriptor(conv, kPad, kPad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
    gcu::check_cudnn(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

// Queues y = conv(x, w) on the state's stream, with the state's handle and workspace.
void convolve(gc::CudaCudnnState& s, const ConvDescriptors& d, const Caller& c) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  gcu::check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(s.handle(), d.x, d.w, d.conv, d.y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
                   "cudnnGetConvolutionForwardAlgorithm_v7");
  ASSERT_GT(found, 0);
  ASSERT_EQ(perf[0].status, CUDNN_STATUS_SUCCESS);
  std::size_t bytes = 0;
  gcu::check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(s.handle(), d.x, d.w, d.conv, d.y, perf[0].algo, &bytes),
                   "cudnnGetConvolutionForwardWorkspaceSize");
  void* workspace = s.workspace().get(bytes);
  const float one = 1.0f, zero = 0.0f;
  gcu::check_cudnn(cudnnConvolutionForward(s.handle(), &one, d.x, c.x, d.w, c.w, d.conv, perf[0].algo, workspace, bytes,
                                           &zero, d.y, c.y),
                   "cudnnConvolutionForward");
}

// The largest error of `y` against a double-precision convolution of the
// same inputs, relative to the size of the terms summed (not the sum, which may cancel).
double max_conv_error(const std::vector<float>& y, float seed) {
  auto x = [&](int n, int c, int h, int w) { return double(pattern(((n * kC + c) * kH + h) * kW + w, seed, -1.0f)); };
  auto f = [&](int k, int c, int r, int s) { return double(pattern(((k * kC + c) * kR + r) * kS + s, 0.25f, -seed)); };
  double worst = 0;
  for (int n = 0; n < kN; ++n) {
    for (int k = 0; k < kK; ++k) {
      for (int h = 0; h < kH; ++h) {
        for (int w = 0; w < kW; ++w) {
          double ref = 0, magnitude = 0;
          for (int c = 0; c < kC; ++c) {
            for (int r = 0; r < kR; ++r) {
              for (int s = 0; s < kS; ++s) {
                int ih = h + r - kPad, iw = w + s - kPad;
                if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
                double term = x(n, c, ih, iw) * f(k, c, r, s);
                ref += term;
                magnitude += std::abs(term);
              }
            }
          }
          double got = y[static_cast<std::size_t>(((n * kK + k) * kH + h) * kW + w)];
          if (std::isnan(got)) return INFINITY;  // still the poison: the convolution never wrote it in time
          worst = std::max(worst, std::abs(ref - got) / (magnitude + 1.0));
        }
      }
    }
  }
  return worst;
}

double executions_on_device0() {
  auto snap = glassbox::metrics::Registry::global().snapshot();
  double total = 0;
  for (int i = 0; i < kStates; ++i) {
    const auto* s = glassbox::metrics::find_series(snap, "glassbox_cudnn_state_executions_total",
                                                   {{"device", "0"}, {"state", std::to_string(i)}});
    if (s != nullptr) total += s->value;
  }
  return total;
}

}  // namespace

TEST_F(GpuCudnnState, ConvolutionsThroughFourStatesFromEightThreadsMatchTheCpu) {
  ASSERT_GE(gc::cuda_cudnn_states().states_per_device(), kStates);
  const double executions_before = executions_on_device0();
  std::barrier together(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
      Caller caller;
      ConvDescriptors desc;
      gc::CudaCudnnWrapper wrapper = gc::cuda_cudnn_wrapper(0, caller.stream);
      for (int round = 0; round < kRounds; ++round) {
        float seed = 0.125f * static_cast<float>(t * kRounds + round + 1);
        caller.prepare(seed);
        together.arrive_and_wait();  // every thread goes for the states at once
        wrapper.with_cudnn_state(t % kStates, [&](gc::CudaCudnnState& s) { convolve(s, desc, caller); });
        EXPECT_LT(max_conv_error(caller.output(), seed), 1e-4) << "thread " << t << ", round " << round;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(executions_on_device0() - executions_before, kThreads * kRounds);
}

TEST_F(GpuCudnnState, StateHandlesAreBoundToTheStatesStreamsAndInlineHandlesToTheCallers) {
  Caller caller;
  gc::CudaCudnnWrapper wrapper = gc::cuda_cudnn_wrapper(0, caller.stream);
  cudnnHandle_t inline_handle = wrapper.inline_handle();
  EXPECT_EQ(inline_handle, glassbox::handle_pool::current_cudnn_handle(0, caller.stream));
  cudaStream_t bound = nullptr;
  gcu::check_cudnn(cudnnGetStream(inline_handle, &bound), "cudnnGetStream");
  EXPECT_EQ(bound, caller.stream);

  cudaStream_t state_streams[2] = {};
  for (int i : {0, 1}) {
    wrapper.with_cudnn_state(i, [&](gc::CudaCudnnState& s) {
      cudaStream_t state_bound = nullptr;
      gcu::check_cudnn(cudnnGetStream(s.handle(), &state_bound), "cudnnGetStream");
      EXPECT_EQ(state_bound, s.stream());
      EXPECT_NE(s.stream(), caller.stream);
      EXPECT_NE(s.handle(), inline_handle);
      state_streams[i] = s.stream();
    });
  }
  EXPECT_NE(state_streams[0], state_streams[1]);
}

// The form without a stream orders against the legacy default stream: a
// blocking cudaMemcpy there must see what the state's stream wrote, although
// the state's stream is non-blocking and so not implicitly synchronised with it.
TEST_F(GpuCudnnState, TheDefaultStreamFormOrdersAgainstTheLegacyStream) {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  std::uint8_t* buffer = nullptr;
  gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(&buffer), kBytes), "cudaMalloc");
  gcu::check_cuda(cudaMemset(buffer, 0, kBytes), "cudaMemset");
  gc::cuda_cudnn_wrapper(0).with_cudnn_state(2, [&](gc::CudaCudnnState& s) {
    gcu::check_cuda(cudaMemsetAsync(buffer, 0x5a, kBytes, s.stream()), "cudaMemsetAsync");
  });
  std::vector<std::uint8_t> host(kBytes);
  gcu::check_cuda(cudaMemcpy(host.data(), buffer, kBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(buffer);
  std::size_t stale = 0;
  for (std::uint8_t b : host) stale += b != 0x5a;
  EXPECT_EQ(stale, 0u) << "the default stream read the buffer before the state's stream wrote it";
}
