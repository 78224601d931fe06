#pragma once
// The calling thread's current device and, per device, its current stream:
// what the accessors that take no device or stream (current_cublas_handle()
// and current_cudnn_handle()) bind to, as PyTorch's getCurrentCUDAStream()
// does for its own. A thread starts on the legacy default stream (nullptr) of
// every device; StreamGuard changes that for a scope.
//
// Thread-safety: each thread has its own; nothing is shared.
#include <cuda_runtime_api.h>

namespace glassbox::cuda {

/// cudaGetDevice, checked: throws BackendError when the runtime cannot say.
int current_device();

/// The calling thread's current stream on `device` (nullptr until set).
cudaStream_t current_stream(int device) noexcept;

/// Makes `stream` the calling thread's current stream on `device`.
void set_current_stream(int device, cudaStream_t stream);

/// Makes `stream` current on `device` for a scope, then restores the previous.
class StreamGuard {
 public:
  StreamGuard(int device, cudaStream_t stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  cudaStream_t previous_;
};

}  // namespace glassbox::cuda
