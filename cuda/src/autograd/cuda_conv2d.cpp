// conv2d of CUDA tensors through cuDNN: every call runs inside state 0 of the
// device's cuDNN wrapper, ordered against the device's tensor stream, with
// the state's handle and workspace.
#include <string>
#include <vector>

#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
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

// Runs `f(handle, state)` inside state 0 of `device`, ordered against the tensor stream.
template <class F>
void with_state(int device, cudaStream_t tensor_stream, F&& f) {
  DeviceGuard guard(device);
  cudnn::cuda_cudnn_wrapper(device, tensor_stream).with_cudnn_state(0, [&](cudnn::CudaCudnnState& state) {
    f(state.handle(), state);
  });
}

}  // namespace

void CudaDeviceKernels::conv2d_forward(int device, const Conv2dGeometry& g, const float* x, const float* w,
                                       const float* bias, float* y) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    auto algo = first_usable<cudnnConvolutionFwdAlgoPerf_t>(
        "cudnnGetConvolutionForwardAlgorithm_v7", CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        [&](int most, int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
          return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, most, found, perf);
        });
    std::size_t bytes = 0;
    check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes),
                "cudnnGetConvolutionForwardWorkspaceSize");
    void* workspace = state.workspace().get(bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv, algo, workspace, bytes, &zero, d.y, y),
                "cudnnConvolutionForward");
    if (bias != nullptr) check_cudnn(cudnnAddTensor(h, &one, d.bias, bias, &one, d.y, y), "cudnnAddTensor");
  });
}

void CudaDeviceKernels::conv2d_backward_input(int device, const Conv2dGeometry& g, const float* dy, const float* w,
                                              float* dx) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    auto algo = first_usable<cudnnConvolutionBwdDataAlgoPerf_t>(
        "cudnnGetConvolutionBackwardDataAlgorithm_v7", CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        [&](int most, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, most, found, perf);
        });
    std::size_t bytes = 0;
    check_cudnn(cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, &bytes),
                "cudnnGetConvolutionBackwardDataWorkspaceSize");
    void* workspace = state.workspace().get(bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy, d.conv, algo, workspace, bytes, &zero, d.x, dx),
                "cudnnConvolutionBackwardData");
  });
}

void CudaDeviceKernels::conv2d_backward_weight(int device, const Conv2dGeometry& g, const float* x, const float* dy,
                                               float* dw, float* dbias) {
  cudaStream_t s = enter(device);
  ConvDescriptors d(g);
  with_state(device, s, [&](cudnnHandle_t h, cudnn::CudaCudnnState& state) {
    auto algo = first_usable<cudnnConvolutionBwdFilterAlgoPerf_t>(
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        [&](int most, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, most, found, perf);
        });
    std::size_t bytes = 0;
    check_cudnn(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo, &bytes),
                "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    void* workspace = state.workspace().get(bytes);
    const float one = 1.0F, zero = 0.0F;
    check_cudnn(
        cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy, d.conv, algo, workspace, bytes, &zero, d.w, dw),
        "cudnnConvolutionBackwardFilter");
    if (dbias != nullptr) {
      check_cudnn(cudnnConvolutionBackwardBias(h, &one, d.y, dy, &zero, d.bias, dbias), "cudnnConvolutionBackwardBias");
    }
  });
}

}  // namespace glassbox::cuda
