// conv2d of CUDA tensors through cuDNN: every call runs inside a state of the
// device's cuDNN wrapper (each thread keeps one, see state_index()), ordered
// against the device's tensor stream, with the state's handle and workspace.
// Each convolution runs a cuDNN execution plan (cudnn_conv_plan.hpp) built
// once per direction, shapes and handle and cached (conv_plan_cache()): with
// cuDNN's legacy entry points, which plan again inside every call, and their
// algorithm query on every call, issue 18's 8-worker trace showed 423 us per
// cuDNN execute on average.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cudnn_conv_plan.hpp"
#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
#include "glassbox/cudnn/algorithm_cache.hpp"

namespace glassbox::cuda {

namespace {

using autograd::Conv2dGeometry;

int dim(std::int64_t v) { return static_cast<int>(v); }

// The bias and output descriptors of a bias add or its gradient (cuDNN's
// tensor calls, which build no plan).
struct BiasDescriptors {
  cudnnTensorDescriptor_t y = nullptr, bias = nullptr;

  explicit BiasDescriptors(const Conv2dGeometry& s) {
    check_cudnn(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&bias), "cudnnCreateTensorDescriptor");
    check_cudnn(
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, dim(s.n), dim(s.k), dim(s.oh), dim(s.ow)),
        "cudnnSetTensor4dDescriptor (output)");
    check_cudnn(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, dim(s.k), 1, 1),
                "cudnnSetTensor4dDescriptor (bias)");
  }
  ~BiasDescriptors() {
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(y);
  }
  BiasDescriptors(const BiasDescriptors&) = delete;
  BiasDescriptors& operator=(const BiasDescriptors&) = delete;
};

// A plan's handle and convolution: its device and geometry. Plans are built
// for one handle (a state's), so a thread on another state builds its own.
using PlanKey = std::array<std::int64_t, 13>;

PlanKey plan_key(cudnnHandle_t h, int device, const Conv2dGeometry& g) {
  return {static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(h)),
          device,
          g.n,
          g.c,
          g.h,
          g.w,
          g.k,
          g.r,
          g.s,
          g.stride,
          g.padding,
          g.oh,
          g.ow};
}

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const noexcept {
    std::size_t h = 0;
    for (std::int64_t v : key) h = h * 1000003U ^ std::hash<std::int64_t>{}(v);
    return h;
  }
};

// Per direction: a model has a handful of shapes; past this many, the least
// recently used plan is built again when next needed.
constexpr std::size_t kPlanCacheEntries = 1024;

using PlanCache = cudnn::AlgorithmCache<PlanKey, std::shared_ptr<const detail::ConvPlan>, PlanKeyHash>;

// One cache per direction, named in its metrics (kConvPlanCaches). Never
// destroyed, as the kernels that use them are not.
PlanCache& conv_plan_cache(detail::ConvDirection d) {
  static auto* caches = new std::array<PlanCache, 3>{PlanCache(cudnn::kConvPlanCaches[0], kPlanCacheEntries),
                                                     PlanCache(cudnn::kConvPlanCaches[1], kPlanCacheEntries),
                                                     PlanCache(cudnn::kConvPlanCaches[2], kPlanCacheEntries)};
  return (*caches)[static_cast<std::size_t>(d)];
}

// Runs the convolution of direction `d` with the cached plan for its shapes
// and `h`, in `state`'s workspace. x, w and y as ConvPlan::execute takes them.
void run_plan(detail::ConvDirection d, int device, const Conv2dGeometry& g, cudnnHandle_t h,
              cudnn::CudaCudnnState& state, const void* x, const void* w, const void* y) {
  const auto plan = conv_plan_cache(d).get(plan_key(h, device, g), [&] { return detail::ConvPlan::build(h, d, g); });
  plan->execute(h, x, w, y, state.workspace().get(plan->workspace_bytes()));
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
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    run_plan(detail::ConvDirection::forward, device, g, h, state, x, w, y);
    if (bias == nullptr) return;
    BiasDescriptors d(g);
    const float one = 1.0F;
    check_cudnn(cudnnAddTensor(h, &one, d.bias, bias, &one, d.y, y), "cudnnAddTensor");
  });
}

void CudaDeviceKernels::conv2d_backward_input(int device, const Conv2dGeometry& g, const float* dy, const float* w,
                                              float* dx) {
  cudaStream_t s = enter(device);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    run_plan(detail::ConvDirection::backward_data, device, g, h, state, dx, w, dy);
  });
}

void CudaDeviceKernels::conv2d_backward_weight(int device, const Conv2dGeometry& g, const float* x, const float* dy,
                                               float* dw, float* dbias) {
  cudaStream_t s = enter(device);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    run_plan(detail::ConvDirection::backward_filter, device, g, h, state, x, dw, dy);
    if (dbias == nullptr) return;
    BiasDescriptors d(g);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionBackwardBias(h, &one, d.y, dy, &zero, d.bias, dbias), "cudnnConvolutionBackwardBias");
  });
}

}  // namespace glassbox::cuda
