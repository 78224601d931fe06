#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"

#include "glassbox/cuda/handle_pool/cuda_handle_factories.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"

namespace glassbox::cudnn {

using cuda::check_cuda;
using cuda::check_cudnn;
using cuda::DeviceGuard;

cudaStream_t CudaCudnnBackend::create_stream(int device) {
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (cuDNN state stream)");
  return s;
}

void CudaCudnnBackend::destroy_stream(int, cudaStream_t stream) noexcept { (void)cudaStreamDestroy(stream); }

cudaEvent_t CudaCudnnBackend::create_event(int device) {
  DeviceGuard guard(device);
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags (cuDNN state event)");
  return e;
}

void CudaCudnnBackend::destroy_event(int, cudaEvent_t event) noexcept { (void)cudaEventDestroy(event); }

void CudaCudnnBackend::record(cudaEvent_t event, cudaStream_t stream) {
  check_cuda(cudaEventRecord(event, stream), "cudaEventRecord (cuDNN state)");
}

void CudaCudnnBackend::wait(cudaStream_t stream, cudaEvent_t event) {
  check_cuda(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent (cuDNN state)");
}

cudnnHandle_t CudaCudnnBackend::create_handle(int device, cudaStream_t stream) {
  cuda::CudnnFactory factory;
  cudnnHandle_t h = factory.create(device);
  try {
    check_cudnn(cudnnSetStream(h, stream), "cudnnSetStream (cuDNN state)");
  } catch (...) {
    factory.destroy(device, h);
    throw;
  }
  return h;
}

void CudaCudnnBackend::destroy_handle(int device, cudnnHandle_t handle) noexcept {
  cuda::CudnnFactory{}.destroy(device, handle);
}

cudnnHandle_t CudaCudnnBackend::inline_handle(int device, cudaStream_t stream) {
  return handle_pool::current_cudnn_handle(device, stream);
}

// The stream's device's default memory pool serves the request.
void* CudaCudnnBackend::allocate(int, std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  check_cuda(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync (cuDNN workspace)");
  return p;
}

void CudaCudnnBackend::deallocate(int, void* block, std::size_t, cudaStream_t stream) noexcept {
  (void)cudaFreeAsync(block, stream);
}

CudaCudnnStates& cuda_cudnn_states() {
  static auto* states = new CudaCudnnStates(CudaCudnnBackend{}, CudnnStatesOptions::from_env());
  return *states;
}

}  // namespace glassbox::cudnn
