#pragma once
// The cuDNN wrapper's CUDA backend, and the process-wide states.
//
// - A state's handle is created for the state (cudnnCreate) and bound to the
//   state's stream for good. It does not come from the handle pool: pooled
//   handles belong to one thread at a time, while a state is used by many
//   threads in turn, and re-binding a thread's pooled handle to a state's
//   stream would undo that thread's own binding.
// - inline_handle() is the handle pool's: current_cudnn_handle(device, stream).
// - State streams are non-blocking, events have timing disabled (recording
//   them is the cheapest way to order two streams).
// - Workspace is stream-ordered (cudaMallocAsync/cudaFreeAsync on the state's
//   stream): growing never blocks the host, and the old block is freed only
//   after work already queued with it has run. Needs a device with memory
//   pools (cudaDevAttrMemoryPoolsSupported), as every sm_90 device has.
//
// Every call is checked (BackendError); destroy calls ignore failures, since
// they run when the CUDA context may already be gone.
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cudnn/cudnn_states.hpp"
#include "glassbox/cudnn/cudnn_wrapper.hpp"

namespace glassbox::cudnn {

class CudaCudnnBackend {
 public:
  using stream_type = cudaStream_t;
  using event_type = cudaEvent_t;
  using handle_type = cudnnHandle_t;
  using device_guard = cuda::DeviceGuard;

  /// The wrapper's stream when none is given: the legacy default stream of
  /// the current device (per-thread if compiled with --default-stream per-thread).
  static cudaStream_t default_stream() noexcept { return nullptr; }

  int device_count() const { return cuda::cuda_device_count(); }

  cudaStream_t create_stream(int device);
  void destroy_stream(int device, cudaStream_t stream) noexcept;
  cudaEvent_t create_event(int device);
  void destroy_event(int device, cudaEvent_t event) noexcept;
  void record(cudaEvent_t event, cudaStream_t stream);
  void wait(cudaStream_t stream, cudaEvent_t event);
  cudnnHandle_t create_handle(int device, cudaStream_t stream);
  void destroy_handle(int device, cudnnHandle_t handle) noexcept;
  cudnnHandle_t inline_handle(int device, cudaStream_t stream);
  void* allocate(int device, std::size_t bytes, cudaStream_t stream);
  void deallocate(int device, void* block, std::size_t bytes, cudaStream_t stream) noexcept;
};

using CudaCudnnStates = CudnnStates<CudaCudnnBackend>;
using CudaCudnnWrapper = CudnnWrapper<CudaCudnnBackend>;
using CudaCudnnState = CudnnState<CudaCudnnBackend>;

/// The process's cuDNN states, on every visible device, with
/// CudnnStatesOptions::from_env() and Registry::global(). Created on first
/// call; never destroyed (threads may use states during static destruction,
/// and the CUDA context may be gone by then).
CudaCudnnStates& cuda_cudnn_states();

/// A wrapper over cuda_cudnn_states() for `device` and the caller's `stream`.
inline CudaCudnnWrapper cuda_cudnn_wrapper(int device, cudaStream_t stream = CudaCudnnBackend::default_stream()) {
  return CudaCudnnWrapper(cuda_cudnn_states(), device, stream);
}

}  // namespace glassbox::cudnn
