#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/error.hpp"
#include "tensor_kernels.hpp"

namespace glassbox::cuda {

namespace {

std::size_t bytes_of(std::size_t n) { return n * sizeof(float); }

void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

// An event for ordering two streams once: recorded on `on` (of the current
// device), then destroyed; CUDA frees it once the wait is resolved.
cudaEvent_t record_on(cudaStream_t on) {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventRecord(e, on), "cudaEventRecord");
  return e;
}

void wait_for(cudaStream_t waiter, cudaEvent_t e) {
  check_cuda(cudaStreamWaitEvent(waiter, e, 0), "cudaStreamWaitEvent");
  check_cuda(cudaEventDestroy(e), "cudaEventDestroy");
}

}  // namespace

CudaDeviceKernels::CudaDeviceKernels() : device_count_(cuda_device_count()) {
  if (device_count_ == 0) throw Error("use_cuda: no CUDA device is visible (cudaGetDeviceCount found none)");
}

cudaStream_t CudaDeviceKernels::enter(int device) {
  if (device < 0 || device >= device_count_) {
    throw Error("CUDA tensor on device " + std::to_string(device) + ": " + std::to_string(device_count_) +
                " CUDA device(s) are visible, so use 0.." + std::to_string(device_count_ - 1));
  }
  return stream(device);
}

cudaStream_t CudaDeviceKernels::stream(int device) {
  if (cudaStream_t s = streams_[device].load(std::memory_order_acquire)) return s;
  std::lock_guard lock(mu_);
  if (cudaStream_t s = streams_[device].load(std::memory_order_relaxed)) return s;
  DeviceGuard guard(device);
  // Freed tensor memory stays in the pool for the next tensor instead of
  // going back to the driver at every synchronisation.
  cudaMemPool_t pool = nullptr;
  check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max();
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "cudaMemPoolSetAttribute");
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  streams_[device].store(s, std::memory_order_release);
  return s;
}

// Runs at the start of an engine worker, where a throw would end the process:
// a device that does not exist (no tensor can live there) or a failing
// cudaSetDevice is left to the first op on that thread to report.
void CudaDeviceKernels::bind_thread(int device) noexcept {
  if (device >= 0 && device < device_count_ && cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
}

float* CudaDeviceKernels::allocate(int device, std::size_t numel) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  void* p = nullptr;
  // One float at least: a non-null pointer is what marks device memory.
  check_cuda(cudaMallocAsync(&p, bytes_of(numel == 0 ? 1 : numel), s), "cudaMallocAsync");
  return static_cast<float*>(p);
}

void CudaDeviceKernels::release(int device, float* p) noexcept {
  // Failures are ignored: tensors freed at exit may outlive the CUDA context.
  cudaStream_t s = streams_[device].load(std::memory_order_acquire);
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return;
  (void)cudaFreeAsync(p, s);
  (void)cudaSetDevice(previous);
}

void CudaDeviceKernels::upload(const void* host, void* out, std::size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  host_allocator::CachingHostAllocator& pinned = cuda_host_allocator();
  host_allocator::HostAllocation block = pinned.allocate(bytes);
  std::memcpy(block.ptr, host, bytes);
  cudaError_t status = cudaMemcpyAsync(out, block.ptr, bytes, cudaMemcpyHostToDevice, s);
  // The device's stream is never destroyed (enter()), so it outlives the
  // allocator: the block's event is deferred and shared with the next uploads'.
  if (status == cudaSuccess) {
    pinned.record_stream(block.ptr, block.ctx, CudaHostBackend::id(s), host_allocator::StreamLife::outlives_allocator);
  }
  pinned.free(block.ctx);  // reused only after the stream passed the copy
  check_cuda(status, "cudaMemcpyAsync (host to device)");
}

void CudaDeviceKernels::copy_from_host(int device, const float* host, float* out, std::size_t n) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  upload(host, out, bytes_of(n), s);
}

void CudaDeviceKernels::copy_to_host(int device, const float* in, float* host, std::size_t n) {
  cudaStream_t s = enter(device);
  if (n == 0) return;
  DeviceGuard guard(device);
  host_allocator::CachingHostAllocator& pinned = cuda_host_allocator();
  host_allocator::HostAllocation block = pinned.allocate(bytes_of(n));
  cudaError_t status = cudaMemcpyAsync(block.ptr, in, bytes_of(n), cudaMemcpyDeviceToHost, s);
  if (status == cudaSuccess) status = cudaStreamSynchronize(s);
  if (status == cudaSuccess) std::memcpy(host, block.ptr, bytes_of(n));
  pinned.free(block.ctx);  // the stream is past the copy: reusable at once
  check_cuda(status, "cudaMemcpyAsync (device to host) and cudaStreamSynchronize");
}

void CudaDeviceKernels::copy(int src_device, const float* in, int dst_device, float* out, std::size_t n) {
  cudaStream_t src = enter(src_device);
  cudaStream_t dst = enter(dst_device);
  if (n == 0) return;
  if (src_device == dst_device) {
    DeviceGuard guard(dst_device);
    check_cuda(cudaMemcpyAsync(out, in, bytes_of(n), cudaMemcpyDeviceToDevice, dst), "cudaMemcpyAsync (device)");
    return;
  }
  cudaEvent_t source_ready = nullptr;
  {
    DeviceGuard guard(src_device);
    source_ready = record_on(src);
  }
  cudaEvent_t copied = nullptr;
  {
    DeviceGuard guard(dst_device);
    wait_for(dst, source_ready);
    check_cuda(cudaMemcpyPeerAsync(out, dst_device, in, src_device, bytes_of(n), dst), "cudaMemcpyPeerAsync");
    copied = record_on(dst);
  }
  DeviceGuard guard(src_device);
  wait_for(src, copied);
}

void CudaDeviceKernels::fill(int device, float* out, std::size_t n, float value) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::fill(out, n, value, s);
  check_launch("fill kernel");
}

void CudaDeviceKernels::broadcast(int device, const float* v, float* out, std::size_t n, float alpha) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::broadcast(v, out, n, alpha, s);
  check_launch("broadcast kernel");
}

void CudaDeviceKernels::unary(int device, autograd::UnaryOp op, const float* x, float* out, std::size_t n,
                              float alpha) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::unary(op, x, out, n, alpha, s);
  check_launch("unary kernel");
}

void CudaDeviceKernels::binary(int device, autograd::BinaryOp op, const float* a, const float* b, float* out,
                               std::size_t n) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::binary(op, a, b, out, n, s);
  check_launch("binary kernel");
}

void CudaDeviceKernels::reduce(int device, autograd::ReduceOp op, const float* a, const float* b, float* out,
                               std::size_t n, float alpha) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::reduce(op, a, b, out, n, alpha, s);
  check_launch("reduce kernel");
}

void CudaDeviceKernels::log_softmax(int device, const float* x, float* out, std::size_t rows, std::size_t cols) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::log_softmax(x, out, rows, cols, s);
  check_launch("log_softmax kernel");
}

void CudaDeviceKernels::log_softmax_backward(int device, const float* g, const float* y, float* out, std::size_t rows,
                                             std::size_t cols) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  autograd::cuda_kernels::log_softmax_backward(g, y, out, rows, cols, s);
  check_launch("log_softmax_backward kernel");
}

// Targets go up through pinned staging into stream-ordered memory that is
// freed, in the stream's order, right after the kernel that reads it.
template <class Launch>
void CudaDeviceKernels::with_device_targets(const std::int64_t* targets, std::size_t rows, cudaStream_t s,
                                            Launch launch) {
  void* t = nullptr;
  check_cuda(cudaMallocAsync(&t, rows * sizeof(std::int64_t), s), "cudaMallocAsync (targets)");
  upload(targets, t, rows * sizeof(std::int64_t), s);
  launch(static_cast<const std::int64_t*>(t));
  check_cuda(cudaFreeAsync(t, s), "cudaFreeAsync (targets)");
}

void CudaDeviceKernels::nll_loss(int device, const float* log_probs, const std::int64_t* targets, float* out,
                                 std::size_t rows, std::size_t cols) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  with_device_targets(targets, rows, s, [&](const std::int64_t* t) {
    autograd::cuda_kernels::nll_loss(log_probs, t, out, rows, cols, s);
    check_launch("nll_loss kernel");
  });
}

void CudaDeviceKernels::nll_loss_backward(int device, const float* g, const std::int64_t* targets, float* out,
                                          std::size_t rows, std::size_t cols) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  check_cuda(cudaMemsetAsync(out, 0, bytes_of(rows * cols), s), "cudaMemsetAsync");
  with_device_targets(targets, rows, s, [&](const std::int64_t* t) {
    autograd::cuda_kernels::nll_loss_scatter(g, t, out, rows, cols, s);
    check_launch("nll_loss_backward kernel");
  });
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
// row-major matrix read column-major is its transpose: so cuBLAS gets B
// first, the transpose flags as given, and the row lengths as leading dimensions.
void CudaDeviceKernels::gemm(int device, const autograd::GemmArgs& g) {
  cudaStream_t s = enter(device);
  DeviceGuard guard(device);
  cublasHandle_t h = handle_pool::current_cublas_handle(device, s);
  const float one = 1.0F, zero = 0.0F;
  check_cublas(cublasSgemm(h, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                           static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &one, g.b,
                           static_cast<int>(g.ldb), g.a, static_cast<int>(g.lda), &zero, g.c, static_cast<int>(g.n)),
               "cublasSgemm");
}

}  // namespace glassbox::cuda
