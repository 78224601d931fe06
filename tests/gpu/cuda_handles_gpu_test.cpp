// Real cuBLAS, cuBLASLt and cuDNN handles from the process-wide pools, used
// by many threads at once for real work whose results are checked on the CPU.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/current_stream.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "gpu_required.hpp"
#include "test_kernels.hpp"

namespace gcu = glassbox::cuda;
namespace gh = glassbox::handle_pool;
using glassbox::testing::fill_pattern;
using glassbox::testing::pattern;

namespace {

constexpr int kThreadsPerDevice = 8;
constexpr int kRounds = 4;
constexpr int kN = 48;  // matrices are kN x kN, column-major

class GpuHandles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
    devices_ = gcu::cuda_device_count();
  }

  // Rounds of fresh threads, kThreadsPerDevice per device, all working at once.
  template <class Body>
  void churn(Body body) {
    for (int round = 0; round < kRounds; ++round) {
      int n = kThreadsPerDevice * devices_;
      std::barrier together(n);
      std::vector<std::thread> threads;
      for (int t = 0; t < n; ++t) {
        threads.emplace_back([&, t] {
          int device = t % devices_;
          gcu::check_cuda(cudaSetDevice(device), "cudaSetDevice");
          body(device, t + 1, together);
        });
      }
      for (auto& th : threads) th.join();
    }
  }

  // Runs churn(body) and checks that `pool` created only the handles the
  // rounds lacked: kThreadsPerDevice at once on top of those already held
  // when it began (by threads that outlive the test, such as this one after
  // an earlier test), so the counts do not depend on which tests ran before.
  template <class Pool, class Body>
  void churn_and_expect_bounded(Pool& pool, Body body) {
    std::vector<gh::PoolCounts> before;
    for (int d = 0; d < devices_; ++d) before.push_back(pool.counts(d));
    churn(body);
    for (int d = 0; d < devices_; ++d) {
      const gh::PoolCounts& was = before[static_cast<std::size_t>(d)];
      const std::size_t needed = was.in_use + kThreadsPerDevice;
      const gh::PoolCounts c = pool.counts(d);
      EXPECT_EQ(c.created, std::max(was.created, needed)) << "device " << d;
      EXPECT_EQ(c.high_water_mark, std::max(was.high_water_mark, needed)) << "device " << d;
      EXPECT_EQ(c.in_use, was.in_use) << "device " << d;
    }
  }

  int devices_ = 0;
};

struct DeviceBuffers {
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffers() {
    for (float** p : {&a, &b, &c}) {
      gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(p), kN * kN * sizeof(float)), "cudaMalloc");
    }
    gcu::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~DeviceBuffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaStreamDestroy(stream);
  }
  void fill(float seed) {
    fill_pattern(a, kN * kN, seed, 1.0f, stream);
    fill_pattern(b, kN * kN, 0.5f, -seed, stream);
    gcu::check_cuda(cudaGetLastError(), "fill_pattern launch");
  }
  std::vector<float> result() {
    std::vector<float> out(kN * kN);
    gcu::check_cuda(cudaMemcpyAsync(out.data(), c, out.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
                    "cudaMemcpyAsync");
    gcu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return out;
  }
};

// C = A * B in double on the host, with A and B from fill().
double max_gemm_error(const std::vector<float>& c, float seed) {
  double worst = 0;
  for (int col = 0; col < kN; ++col) {
    for (int row = 0; row < kN; ++row) {
      double ref = 0, magnitude = 0;  // error relative to the terms' size, not the (maybe cancelling) sum
      for (int k = 0; k < kN; ++k) {
        double term = double(pattern(row + k * kN, seed, 1.0f)) * double(pattern(k + col * kN, 0.5f, -seed));
        ref += term;
        magnitude += std::abs(term);
      }
      worst = std::max(worst, std::abs(ref - c[row + col * kN]) / (magnitude + 1.0));
    }
  }
  return worst;
}

}  // namespace

TEST_F(GpuHandles, CublasHandlesAreBoundToTheCallersStreamAndComputeCorrectly) {
  churn_and_expect_bounded(gh::cublas_pool(), [](int device, int id, std::barrier<>& together) {
    DeviceBuffers buf;
    float seed = 0.25f * static_cast<float>(id);
    buf.fill(seed);
    cublasHandle_t h = gh::current_cublas_handle(device, buf.stream);
    cudaStream_t bound = nullptr;
    gcu::check_cublas(cublasGetStream(h, &bound), "cublasGetStream");
    EXPECT_EQ(bound, buf.stream);
    together.arrive_and_wait();  // every thread holds a handle now
    const float one = 1.0f, zero = 0.0f;
    gcu::check_cublas(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, buf.a, kN, buf.b, kN, &zero, buf.c, kN),
        "cublasSgemm");
    EXPECT_LT(max_gemm_error(buf.result(), seed), 1e-4);
  });
}

TEST_F(GpuHandles, ChangingStreamsRebindsTheHandle) {
  int device = 0;
  gcu::check_cuda(cudaSetDevice(device), "cudaSetDevice");
  DeviceBuffers one, two;
  cublasHandle_t h1 = gh::current_cublas_handle(device, one.stream);
  cublasHandle_t h2 = gh::current_cublas_handle(device, two.stream);
  EXPECT_EQ(h1, h2);
  cudaStream_t bound = nullptr;
  gcu::check_cublas(cublasGetStream(h2, &bound), "cublasGetStream");
  EXPECT_EQ(bound, two.stream);
}

TEST_F(GpuHandles, TheAccessorsWithoutArgumentsFollowTheCurrentDeviceAndStream) {
  gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  DeviceBuffers buf;
  auto bound_stream = [](cublasHandle_t h) {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(1);
    gcu::check_cublas(cublasGetStream(h, &s), "cublasGetStream");
    return s;
  };
  {
    gcu::StreamGuard guard(buf.stream);
    cublasHandle_t h = gh::current_cublas_handle();
    EXPECT_EQ(h, gh::current_cublas_handle(0, buf.stream));
    EXPECT_EQ(bound_stream(h), buf.stream);
    cudaStream_t cudnn_bound = nullptr;
    gcu::check_cudnn(cudnnGetStream(gh::current_cudnn_handle(), &cudnn_bound), "cudnnGetStream");
    EXPECT_EQ(cudnn_bound, buf.stream);
  }
  EXPECT_EQ(gcu::current_stream(), nullptr);
  EXPECT_EQ(bound_stream(gh::current_cublas_handle()), nullptr);
}

// A thread that reuses a handle another thread created has made no context
// current; the first accessor call makes the primary context current there,
// as PyTorch's getters do (cuBLAS wants one, and cudaGetDevice without one is
// the runtime's slow path, which the argument-free accessors call each time).
TEST_F(GpuHandles, AThreadReusingAPooledHandleGetsACurrentContext) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  gcu::check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found),
                  "cudaGetDriverEntryPointByVersion");
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  auto ctx_get_current = reinterpret_cast<CUresult (*)(CUcontext*)>(fn);
  std::thread([] { gh::current_cublas_handle(); }).join();  // leaves a handle in the pool
  CUcontext before = nullptr, after = nullptr;
  std::thread([&] {
    ctx_get_current(&before);
    gh::current_cublas_handle();
    ctx_get_current(&after);
  }).join();
  EXPECT_EQ(before, nullptr) << "a fresh thread already had a context: the test proves nothing";
  EXPECT_NE(after, nullptr);
}

TEST_F(GpuHandles, CublasLtHandlesRunAMatmulFromManyThreads) {
  churn_and_expect_bounded(gh::cublaslt_pool(), [](int device, int id, std::barrier<>& together) {
    DeviceBuffers buf;
    float seed = 0.125f * static_cast<float>(id);
    buf.fill(seed);
    cublasLtHandle_t h = gh::current_cublaslt_handle(device);
    together.arrive_and_wait();
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t layout = nullptr;
    gcu::check_cublas(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    gcu::check_cublas(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, kN, kN, kN), "cublasLtMatrixLayoutCreate");
    const float one = 1.0f, zero = 0.0f;
    gcu::check_cublas(cublasLtMatmul(h, op, &one, buf.a, layout, buf.b, layout, &zero, buf.c, layout, buf.c, layout,
                                     nullptr, nullptr, 0, buf.stream),
                      "cublasLtMatmul");
    EXPECT_LT(max_gemm_error(buf.result(), seed), 1e-4);
    cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(op);
  });
}

TEST_F(GpuHandles, CudnnHandlesRunAnActivationFromManyThreads) {
  churn_and_expect_bounded(gh::cudnn_pool(), [](int device, int id, std::barrier<>& together) {
    DeviceBuffers buf;
    float seed = 0.5f * static_cast<float>(id);
    buf.fill(seed);  // b = 0.5 * pattern - seed: mixed signs
    cudnnHandle_t h = gh::current_cudnn_handle(device, buf.stream);
    together.arrive_and_wait();
    cudnnTensorDescriptor_t desc = nullptr;
    cudnnActivationDescriptor_t relu = nullptr;
    gcu::check_cudnn(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
    gcu::check_cudnn(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, kN, kN),
                     "cudnnSetTensor4dDescriptor");
    gcu::check_cudnn(cudnnCreateActivationDescriptor(&relu), "cudnnCreateActivationDescriptor");
    gcu::check_cudnn(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                     "cudnnSetActivationDescriptor");
    const float one = 1.0f, zero = 0.0f;
    gcu::check_cudnn(cudnnActivationForward(h, relu, &one, desc, buf.b, &zero, desc, buf.c), "cudnnActivationForward");
    auto out = buf.result();
    for (int i = 0; i < kN * kN; ++i) {
      ASSERT_FLOAT_EQ(out[i], std::max(0.0f, pattern(i, 0.5f, -seed))) << "element " << i;
    }
    cudnnDestroyActivationDescriptor(relu);
    cudnnDestroyTensorDescriptor(desc);
  });
}

TEST_F(GpuHandles, ADeviceBeyondTheLastIsAClearError) {
  try {
    gh::cublas_pool().reserve(devices_);
    FAIL();
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("device " + std::to_string(devices_) + " is out of range"), std::string::npos)
        << e.what();
  }
}

// As PyTorch's cuda_cublas_handle_pool_test: 15 threads get cuBLAS handles
// (moving between two streams each, so idle workspaces pile up) and run a
// GEMM, while 5 threads release idle workspaces. No GEMM may go wrong (a
// workspace freed under its handle would show here, or to compute-sanitizer),
// and once the getters are gone their workspaces can all be released.
TEST_F(GpuHandles, ReleasingIdleWorkspacesWhileThreadsGetHandlesIsSafe) {
  constexpr int kGetters = 15, kClearers = 5, kSteps = 6;
  gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  std::atomic<int> running{kGetters};
  std::atomic<std::size_t> released{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kGetters; ++t) {
    threads.emplace_back([&, t] {
      gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
      DeviceBuffers bufs[2];
      for (int step = 0; step < kSteps; ++step) {
        DeviceBuffers& buf = bufs[step % 2];
        const float seed = 0.125f * static_cast<float>(t + 1) + static_cast<float>(step);
        buf.fill(seed);
        cublasHandle_t h = gh::current_cublas_handle(0, buf.stream);
        const float one = 1.0f, zero = 0.0f;
        gcu::check_cublas(
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, buf.a, kN, buf.b, kN, &zero, buf.c, kN),
            "cublasSgemm");
        EXPECT_LT(max_gemm_error(buf.result(), seed), 1e-4) << "thread " << t << " step " << step;
      }
      --running;
    });
  }
  for (int c = 0; c < kClearers; ++c) {
    threads.emplace_back([&] {
      gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
      while (running.load() > 0) released += gh::release_idle_cublas_workspaces();
    });
  }
  for (auto& th : threads) th.join();
  released += gh::release_idle_cublas_workspaces();
  EXPECT_GT(released.load(), 0u);
  // Left: at most one workspace per handle still lent (this thread's, from earlier tests).
  EXPECT_LE(gh::cublas_workspaces_held(0), gh::cublas_pool().counts(0).in_use * gh::cublas_workspace_bytes());
}
