#pragma once
// The calling thread's current stream: where the CUDA host backend's
// allocations count as made (capture pools pick by it) and what the handle
// accessors without arguments (current_cublas_handle(),
// current_cudnn_handle()) bind to, as PyTorch's getCurrentCUDAStream() does
// for its own. A thread starts on the legacy default stream (nullptr);
// StreamGuard changes that for a scope. The stream must be on the thread's
// current device (current_device()) where an accessor uses both.
//
// Thread-safety: each thread has its own; nothing is shared.
#include <cuda_runtime_api.h>

namespace glassbox::cuda {

/// cudaGetDevice, checked: throws BackendError when the runtime cannot say.
int current_device();

/// The calling thread's current stream (nullptr until set).
cudaStream_t current_stream() noexcept;

/// Makes `stream` the calling thread's current stream.
void set_current_stream(cudaStream_t stream) noexcept;

/// Makes `stream` current for a scope, then restores the previous one.
class StreamGuard {
 public:
  explicit StreamGuard(cudaStream_t stream) noexcept;
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  cudaStream_t previous_;
};

}  // namespace glassbox::cuda
