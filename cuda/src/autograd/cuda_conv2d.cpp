// conv2d of CUDA tensors through cuDNN: every call runs inside a state of the
// device's cuDNN wrapper (each thread keeps one, see state_index()), ordered
// against the device's tensor stream, with the state's handle and workspace.
// The algorithm cuDNN's heuristics choose for a convolution's shapes, and the
// workspace it needs, are asked once per shapes and device and cached
// (conv_plan_cache()): the query costs hundreds of microseconds a call.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
#include "glassbox/cudnn/algorithm_cache.hpp"
#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {

using autograd::Conv2dGeometry;

int dim(std::int64_t v) { return static_cast<int>(v); }

// The descriptors of one convolution's shapes, FP32 with plain FMA math
// (no TF32), so results match the CPU reference to float rounding.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  explicit ConvDescriptors(const Conv2dGeometry& s) {
    check_cudnn(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&bias), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    check_cudnn(
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, dim(s.n), dim(s.c), dim(s.h), dim(s.w)),
        "cudnnSetTensor4dDescriptor (input)");
    check_cudnn(
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, dim(s.n), dim(s.k), dim(s.oh), dim(s.ow)),
        "cudnnSetTensor4dDescriptor (output)");
    check_cudnn(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, dim(s.k), 1, 1),
                "cudnnSetTensor4dDescriptor (bias)");
    check_cudnn(
        cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, dim(s.k), dim(s.c), dim(s.r), dim(s.s)),
        "cudnnSetFilter4dDescriptor");
    check_cudnn(cudnnSetConvolution2dDescriptor(conv, dim(s.padding), dim(s.padding), dim(s.stride), dim(s.stride), 1,
                                                1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor");
    check_cudnn(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

// The first algorithm cuDNN's heuristics rank that it can run. `get` fills
// perf results, as the cudnnGet*Algorithm_v7 calls do.
template <class Perf, class Get>
auto first_usable(const char* call, int most, Get get) {
  std::vector<Perf> perf(static_cast<std::size_t>(most));
  int found = 0;
  check_cudnn(get(most, &found, perf.data()), call);
  for (int i = 0; i < found; ++i) {
    if (perf[static_cast<std::size_t>(i)].status == CUDNN_STATUS_SUCCESS) return perf[static_cast<std::size_t>(i)].algo;
  }
  throw Error(std::string(call) + " found no usable algorithm for this convolution");
}

// What a convolution of some shapes runs with: the algorithm and the bytes of
// workspace it needs.
template <class Algo>
struct ConvPlan {
  Algo algo;
  std::size_t workspace_bytes;
};

// A convolution's device and geometry. Its descriptors are always FP32 with
// FMA math (ConvDescriptors), so data type and math mode need no place here.
using ConvKey = std::array<std::int64_t, 12>;

ConvKey conv_key(int device, const Conv2dGeometry& g) {
  return {device, g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.padding, g.oh, g.ow};
}

struct ConvKeyHash {
  std::size_t operator()(const ConvKey& key) const noexcept {
    std::size_t h = 0;
    for (std::int64_t v : key) h = h * 1000003U ^ std::hash<std::int64_t>{}(v);
    return h;
  }
};

// Per direction: a model has a handful of shapes; past this many, the least
// recently used is asked again when next needed.
constexpr std::size_t kPlanCacheEntries = 1024;

template <class Algo>
using ConvPlanCache = cudnn::AlgorithmCache<ConvKey, ConvPlan<Algo>, ConvKeyHash>;

// Each direction's cache, named in its metrics by its algorithm type.
template <class Algo>
constexpr const char* kPlanCacheName = nullptr;
template <>
constexpr const char* kPlanCacheName<cudnnConvolutionFwdAlgo_t> = "conv_forward";
template <>
constexpr const char* kPlanCacheName<cudnnConvolutionBwdDataAlgo_t> = "conv_backward_data";
template <>
constexpr const char* kPlanCacheName<cudnnConvolutionBwdFilterAlgo_t> = "conv_backward_filter";

// Never destroyed, as the kernels that use them are not.
template <class Algo>
ConvPlanCache<Algo>& conv_plan_cache() {
  static auto* cache = new ConvPlanCache<Algo>(kPlanCacheName<Algo>, kPlanCacheEntries);
  return *cache;
}

// The cached plan for this convolution on `device`; on a miss, `algorithm()`
// asks cuDNN's heuristics and `workspace(algo)` the bytes that algorithm needs.
template <class Algo, class Algorithm, class Workspace>
ConvPlan<Algo> plan_for(int device, const Conv2dGeometry& g, Algorithm algorithm, Workspace workspace) {
  return conv_plan_cache<Algo>().get(conv_key(device, g), [&] {
    const Algo algo = algorithm();
    return ConvPlan<Algo>{algo, workspace(algo)};
  });
}

// The state a thread runs its convolutions in: threads take the device's
// states in turn as they first convolve, so that concurrent workers queue on
// several states' locks instead of all on one. Every state joins the device's
// one tensor stream, so this spreads the host's cuDNN calls over handles; on
// the GPU, convolutions of different threads may overlap, each ordered
// after what its thread queued before it.
int state_index() {
  static std::atomic<unsigned> next{0};
  thread_local const int index =
      static_cast<int>(next.fetch_add(1, std::memory_order_relaxed) %
                       static_cast<unsigned>(cudnn::cuda_cudnn_states().states_per_device()));
  return index;
}

// Runs `f(handle, state)` inside the calling thread's state of `device`,
// ordered against the tensor stream.
template <class F>
void with_state(int device, cudaStream_t tensor_stream, F&& f) {
  DeviceGuard guard(device);
  cudnn::cuda_cudnn_wrapper(device, tensor_stream).with_cudnn_state(state_index(), [&](cudnn::CudaCudnnState& state) {
    f(state.handle(), state);
  });
}

}  // namespace

void CudaDeviceKernels::conv2d_forward(int device, const Conv2dGeometry& g, const float* x, const float* w,
                                       const float* bias, float* y) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    const auto plan = plan_for<cudnnConvolutionFwdAlgo_t>(
        device, g,
        [&] {
          return first_usable<cudnnConvolutionFwdAlgoPerf_t>(
              "cudnnGetConvolutionForwardAlgorithm_v7", CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              [&](int most, int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
                return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, most, found, perf);
              });
        },
        [&](cudnnConvolutionFwdAlgo_t algo) {
          std::size_t bytes = 0;
          check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes),
                      "cudnnGetConvolutionForwardWorkspaceSize");
          return bytes;
        });
    void* workspace = state.workspace().get(plan.workspace_bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv, plan.algo, workspace, plan.workspace_bytes,
                                        &zero, d.y, y),
                "cudnnConvolutionForward");
    if (bias != nullptr) check_cudnn(cudnnAddTensor(h, &one, d.bias, bias, &one, d.y, y), "cudnnAddTensor");
  });
}

void CudaDeviceKernels::conv2d_backward_input(int device, const Conv2dGeometry& g, const float* dy, const float* w,
                                              float* dx) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    const auto plan = plan_for<cudnnConvolutionBwdDataAlgo_t>(
        device, g,
        [&] {
          return first_usable<cudnnConvolutionBwdDataAlgoPerf_t>(
              "cudnnGetConvolutionBackwardDataAlgorithm_v7", CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
              [&](int most, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, most, found, perf);
              });
        },
        [&](cudnnConvolutionBwdDataAlgo_t algo) {
          std::size_t bytes = 0;
          check_cudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, &bytes),
                      "cudnnGetConvolutionBackwardDataWorkspaceSize");
          return bytes;
        });
    void* workspace = state.workspace().get(plan.workspace_bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy, d.conv, plan.algo, workspace,
                                             plan.workspace_bytes, &zero, d.x, dx),
                "cudnnConvolutionBackwardData");
  });
}

void CudaDeviceKernels::conv2d_backward_weight(int device, const Conv2dGeometry& g, const float* x, const float* dy,
                                               float* dw, float* dbias) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    const auto plan = plan_for<cudnnConvolutionBwdFilterAlgo_t>(
        device, g,
        [&] {
          return first_usable<cudnnConvolutionBwdFilterAlgoPerf_t>(
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
              [&](int most, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
                return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, most, found, perf);
              });
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo) {
          std::size_t bytes = 0;
          check_cudnn(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo, &bytes),
                      "cudnnGetConvolutionBackwardFilterWorkspaceSize");
          return bytes;
        });
    void* workspace = state.workspace().get(plan.workspace_bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy, d.conv, plan.algo, workspace,
                                               plan.workspace_bytes, &zero, d.w, dw),
                "cudnnConvolutionBackwardFilter");
    if (dbias != nullptr) {
      check_cudnn(cudnnConvolutionBackwardBias(h, &one, d.y, dy, &zero, d.bias, dbias), "cudnnConvolutionBackwardBias");
    }
  });
}

}  // namespace glassbox::cuda
