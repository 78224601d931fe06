// conv2d of CUDA tensors through cuDNN: every call runs inside a state of the
// device's cuDNN wrapper (each thread keeps one, see state_index()), ordered
// against the device's tensor stream, with the state's handle and workspace.
// The algorithm cuDNN's heuristics choose for a convolution's shapes, and the
// workspace it needs, are asked once per shapes and device and cached
// (conv_plan_cache()): with the query on every call, issue 18's 8-worker
// trace showed 423 us per cuDNN execute on average.
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

// Each direction's cache (named in its metrics) and how many algorithms cuDNN has for it.
template <class Algo>
struct Direction;
template <>
struct Direction<cudnnConvolutionFwdAlgo_t> {
  static constexpr const char* cache = cudnn::kConvPlanCaches[0];
  static constexpr int algorithms = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
};
template <>
struct Direction<cudnnConvolutionBwdDataAlgo_t> {
  static constexpr const char* cache = cudnn::kConvPlanCaches[1];
  static constexpr int algorithms = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
};
template <>
struct Direction<cudnnConvolutionBwdFilterAlgo_t> {
  static constexpr const char* cache = cudnn::kConvPlanCaches[2];
  static constexpr int algorithms = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
};

// Per direction: a model has a handful of shapes; past this many, the least
// recently used is asked again when next needed.
constexpr std::size_t kPlanCacheEntries = 1024;

template <class Algo>
using ConvPlanCache = cudnn::AlgorithmCache<ConvKey, ConvPlan<Algo>, ConvKeyHash>;

// Never destroyed, as the kernels that use them are not.
template <class Algo>
ConvPlanCache<Algo>& conv_plan_cache() {
  static auto* cache = new ConvPlanCache<Algo>(Direction<Algo>::cache, kPlanCacheEntries);
  return *cache;
}

// A cuDNN query and its name, for errors.
template <class Fn>
struct Query {
  Fn* call;
  const char* name;
};

// The cached plan for this convolution on `device`. On a miss, asks through
// `h`: `algorithms` (a cudnnGet*Algorithm_v7, which ranks the heuristics'
// choices) for the first algorithm cuDNN can run, then `workspace` (the
// matching cudnnGet*WorkspaceSize) for its bytes, over `desc`, the
// direction's descriptors in the order those calls take them.
template <class Perf, class... Desc>
ConvPlan<decltype(Perf::algo)> cached_plan(
    int device, const Conv2dGeometry& g, cudnnHandle_t h,
    Query<cudnnStatus_t(cudnnHandle_t, Desc..., int, int*, Perf*)> algorithms,
    Query<cudnnStatus_t(cudnnHandle_t, Desc..., decltype(Perf::algo), std::size_t*)> workspace, Desc... desc) {
  using Algo = decltype(Perf::algo);
  return conv_plan_cache<Algo>().get(conv_key(device, g), [&] {
    std::vector<Perf> perf(static_cast<std::size_t>(Direction<Algo>::algorithms));
    int found = 0;
    check_cudnn(algorithms.call(h, desc..., Direction<Algo>::algorithms, &found, perf.data()), algorithms.name);
    for (int i = 0; i < found; ++i) {
      const Perf& p = perf[static_cast<std::size_t>(i)];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      std::size_t bytes = 0;
      check_cudnn(workspace.call(h, desc..., p.algo, &bytes), workspace.name);
      return ConvPlan<Algo>{p.algo, bytes};
    }
    throw Error(std::string(algorithms.name) + " found no usable algorithm for this convolution");
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
    const auto plan = cached_plan<cudnnConvolutionFwdAlgoPerf_t>(
        device, g, h, {cudnnGetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7"},
        {cudnnGetConvolutionForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize"}, d.x, d.w, d.conv, d.y);
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
    const auto plan = cached_plan<cudnnConvolutionBwdDataAlgoPerf_t>(
        device, g, h, {cudnnGetConvolutionBackwardDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7"},
        {cudnnGetConvolutionBackwardDataWorkspaceSize, "cudnnGetConvolutionBackwardDataWorkspaceSize"}, d.w, d.y,
        d.conv, d.x);
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
    const auto plan = cached_plan<cudnnConvolutionBwdFilterAlgoPerf_t>(
        device, g, h, {cudnnGetConvolutionBackwardFilterAlgorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7"},
        {cudnnGetConvolutionBackwardFilterWorkspaceSize, "cudnnGetConvolutionBackwardFilterWorkspaceSize"}, d.x, d.y,
        d.conv, d.w);
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
