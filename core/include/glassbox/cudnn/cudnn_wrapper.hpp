#pragma once
// The front door for code that calls cuDNN: bound to one device and the
// caller's stream, it hands out either the calling thread's pooled handle
// (inline_handle(), the common case) or exclusive use of a CudnnState
// (with_cudnn_state(), for running several cuDNN calls side by side, each on
// a state's own stream).
//
// A wrapper is a small value (a reference to the states, a device and a
// stream); make one where the device and stream are known and pass it around.
// Ownership: refers to a CudnnStates that must outlive it.
// Thread-safety: every member may be called from any thread at once.
#include "glassbox/cudnn/cudnn_backend.hpp"
#include "glassbox/cudnn/cudnn_states.hpp"

namespace glassbox::cudnn {

template <CudnnBackend B>
class CudnnWrapper {
 public:
  using stream_type = typename B::stream_type;
  using handle_type = typename B::handle_type;

  /// `stream` is the caller's stream for inline_handle() and for the
  /// with_cudnn_state() form without one. Its default, where the backend has
  /// one, is the backend's default stream (CUDA: the legacy default stream).
  CudnnWrapper(CudnnStates<B>& states, int device, stream_type stream = B::default_stream()) noexcept
      : states_(states), device_(device), stream_(stream) {}

  /// The calling thread's handle for device(), from the handle pool, bound to
  /// stream(). Work queued with it runs on stream(), in the caller's order.
  handle_type inline_handle() const { return states_.backend().inline_handle(device_, stream_); }

  /// Runs `f(state)` on state `index` of device(), ordered against stream().
  template <class F>
  void with_cudnn_state(int index, F&& f) const {
    with_cudnn_state(stream_, index, std::forward<F>(f));
  }

  /// Runs `f(state)` on state `index` of device(), with exclusive use of the
  /// state: what `f` queues on state.stream() starts after the work already
  /// queued on `caller`, and work queued on `caller` afterwards waits for it.
  /// Throws ConfigError naming the index and the limit when `index` is out of range.
  template <class F>
  void with_cudnn_state(stream_type caller, int index, F&& f) const {
    states_.run(device_, caller, index, std::forward<F>(f));
  }

  int device() const noexcept { return device_; }
  stream_type stream() const noexcept { return stream_; }

 private:
  CudnnStates<B>& states_;
  int device_;
  stream_type stream_;
};

}  // namespace glassbox::cudnn
