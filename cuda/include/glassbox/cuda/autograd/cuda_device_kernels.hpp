#pragma once
// The CUDA implementation of the autograd device kernels (see
// glassbox/autograd/device_kernels.hpp); use_cuda() installs it.
//
// - Memory: cudaMallocAsync / cudaFreeAsync on the device's stream, from the
//   device's default memory pool, which keeps freed memory for reuse.
// - Streams: one non-blocking stream per device, created on first use and
//   kept for the process. Every op on a device is queued on it, so ops on one
//   device run in the order they were issued, from whichever thread.
// - Host <-> device: staged in pinned blocks of cuda_host_allocator(). An
//   upload copies into the block, queues the copy, records the stream on the
//   block and frees it at once: the allocator reuses it only after the
//   stream passed the copy. A download waits for the stream.
// - Device <-> device: the destination stream waits for the source stream,
//   copies, and the source stream waits for the copy, so the source buffer is
//   neither read early nor freed (stream-ordered) while the copy reads it.
// - matmul: cuBLAS from the handle pool (current_cublas_handle) on the
//   device's stream. conv2d: cuDNN through the cuDNN wrapper's state 0 of the
//   device, ordered against the device's stream. FP32 math without TF32, so
//   results match the CPU's to float rounding.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>

#include "glassbox/autograd/device.hpp"
#include "glassbox/autograd/device_kernels.hpp"

namespace glassbox::cuda {

class CudaDeviceKernels final : public autograd::DeviceKernels {
 public:
  /// Throws glassbox::Error when no GPU is visible.
  CudaDeviceKernels();

  /// The stream every op on `device` is queued on. Work of one's own that
  /// reads or writes tensor memory must be ordered against it.
  cudaStream_t stream(int device);

  const char* name() const noexcept override { return "cuda"; }
  float* allocate(int device, std::size_t numel) override;
  void release(int device, float* p) noexcept override;
  void fill(int device, float* out, std::size_t n, float value) override;
  void broadcast(int device, const float* s, float* out, std::size_t n, float alpha) override;
  void copy_from_host(int device, const float* host, float* out, std::size_t n) override;
  void copy_to_host(int device, const float* in, float* host, std::size_t n) override;
  void copy(int src_device, const float* in, int dst_device, float* out, std::size_t n) override;
  void unary(int device, autograd::UnaryOp op, const float* x, float* out, std::size_t n, float alpha) override;
  void binary(int device, autograd::BinaryOp op, const float* a, const float* b, float* out, std::size_t n) override;
  void reduce(int device, autograd::ReduceOp op, const float* a, const float* b, float* out, std::size_t n,
              float alpha) override;
  void log_softmax(int device, const float* x, float* out, std::size_t rows, std::size_t cols) override;
  void log_softmax_backward(int device, const float* g, const float* y, float* out, std::size_t rows,
                            std::size_t cols) override;
  void nll_loss(int device, const float* log_probs, const std::int64_t* targets, float* out, std::size_t rows,
                std::size_t cols) override;
  void nll_loss_backward(int device, const float* g, const std::int64_t* targets, float* out, std::size_t rows,
                         std::size_t cols) override;
  void gemm(int device, const autograd::GemmArgs& args) override;
  void conv2d_forward(int device, const autograd::Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                      float* y) override;
  void conv2d_backward_input(int device, const autograd::Conv2dGeometry& g, const float* dy, const float* w,
                             float* dx) override;
  void conv2d_backward_weight(int device, const autograd::Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                              float* dbias) override;
  void bind_thread(int device) noexcept override;

 private:
  // Checks the device index and returns its stream with the device current.
  cudaStream_t enter(int device);
  // Copies `bytes` of host memory to device memory `out` through a pinned block.
  void upload(const void* host, void* out, std::size_t bytes, cudaStream_t s);
  // Uploads class targets to stream-ordered device memory, runs `launch` on
  // them, and frees them in the stream's order right after.
  template <class Launch>
  void with_device_targets(const std::int64_t* targets, std::size_t rows, cudaStream_t s, Launch launch);

  const int device_count_;
  std::mutex mu_;
  std::array<std::atomic<cudaStream_t>, autograd::kMaxDevices> streams_{};
};

/// The kernels use_cuda() installed (created on first call, never destroyed:
/// tensors may be freed during static destruction).
CudaDeviceKernels& cuda_device_kernels();

}  // namespace glassbox::cuda
