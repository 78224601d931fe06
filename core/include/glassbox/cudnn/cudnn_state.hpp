#pragma once
// One cuDNN execution context on one device: a handle bound to a stream of
// its own, a workspace, and two events that tie the state's stream to a
// caller's stream for the length of one execute().
//
// Why a stream of its own: callers on different streams (or threads) can
// share the state's handle and workspace, and work through one state never
// interleaves, while work through different states runs side by side.
//
// Ownership: owns its stream, handle, events and workspace, and destroys them
// through the backend, which must outlive it. CudnnStates creates states
// lazily and owns them.
// Thread-safety: none. execute() must be serialised (CudnnStates holds a
// per-state lock around it); the accessors are for use inside the closure.
#include <functional>
#include <utility>

#include "glassbox/cudnn/cudnn_backend.hpp"
#include "glassbox/cudnn/cudnn_instrumentation.hpp"
#include "glassbox/cudnn/cudnn_workspace.hpp"

namespace glassbox::cudnn {

namespace detail {

// One backend object a state owns, destroyed through the backend. `Destroy`
// is a tag naming the backend's destroy call, so one template serves all.
template <class B, class T, class Destroy>
class Owned {
 public:
  Owned(B& backend, int device, T value) noexcept : backend_(backend), device_(device), value_(std::move(value)) {}
  ~Owned() { Destroy{}(backend_, device_, value_); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  T& get() noexcept { return value_; }
  const T& get() const noexcept { return value_; }

 private:
  B& backend_;
  const int device_;
  T value_;
};

struct DestroyStream {
  template <class B, class T>
  void operator()(B& b, int device, T& stream) const noexcept {
    b.destroy_stream(device, stream);
  }
};
struct DestroyHandle {
  template <class B, class T>
  void operator()(B& b, int device, T& handle) const noexcept {
    b.destroy_handle(device, handle);
  }
};
struct DestroyEvent {
  template <class B, class T>
  void operator()(B& b, int device, T& event) const noexcept {
    b.destroy_event(device, event);
  }
};

}  // namespace detail

template <CudnnBackend B>
class CudnnState {
 public:
  using stream_type = typename B::stream_type;
  using event_type = typename B::event_type;
  using handle_type = typename B::handle_type;

  /// Creates the state's stream, a handle bound to it and the two events, on `device`.
  CudnnState(B& backend, int device, int index, const StateSeries& series)
      : device_(device),
        index_(index),
        series_(series),
        range_name_(device, index),
        backend_(backend),
        stream_(backend, device, backend.create_stream(device)),
        handle_(backend, device, backend.create_handle(device, stream_.get())),
        before_(backend, device, backend.create_event(device)),
        after_(backend, device, backend.create_event(device)),
        workspace_(backend, device, stream_.get(), series.workspace) {}
  CudnnState(const CudnnState&) = delete;
  CudnnState& operator=(const CudnnState&) = delete;

  /// Runs `f(*this)` so that the work it queues on stream() starts after
  /// everything the caller queued on `caller` before this call, and work the
  /// caller queues on `caller` afterwards starts after it. The host never
  /// waits: both orderings are event waits on the streams.
  ///
  /// If `f` throws, the caller's stream is still made to wait for whatever
  /// `f` queued (so later work cannot overtake it), then the exception
  /// propagates.
  template <class F>
  void execute(stream_type caller, F&& f) {
    ExecuteScope scope(range_name_.get(), series_, device_, index_);
    fork_from(caller);
    try {
      std::invoke(std::forward<F>(f), *this);
    } catch (...) {
      scope.failed(workspace_.size());
      join_into_after_failure(caller);
      throw;
    }
    join_into(caller);
    scope.succeeded(workspace_.size());
  }

  /// The state's own handle, bound to stream(). Use it only inside execute().
  handle_type handle() const noexcept { return handle_.get(); }
  /// The stream every cuDNN call through this state is queued on.
  stream_type stream() const noexcept { return stream_.get(); }
  CudnnWorkspace<B>& workspace() noexcept { return workspace_; }
  int device() const noexcept { return device_; }
  int index() const noexcept { return index_; }

 private:
  void fork_from(stream_type caller) {
    backend_.record(before_.get(), caller);
    backend_.wait(stream_.get(), before_.get());
  }

  void join_into(stream_type caller) {
    backend_.record(after_.get(), stream_.get());
    backend_.wait(caller, after_.get());
  }

  // The closure's exception is the one worth reporting; a backend failure
  // here would only hide it.
  void join_into_after_failure(stream_type caller) noexcept {
    try {
      join_into(caller);
    } catch (...) {}
  }

  const int device_;
  const int index_;
  const StateSeries series_;
  const ExecuteRangeName range_name_;
  B& backend_;
  // Destroyed in reverse: workspace (freed in the stream's order), events,
  // handle, and the stream last.
  detail::Owned<B, stream_type, detail::DestroyStream> stream_;
  detail::Owned<B, handle_type, detail::DestroyHandle> handle_;
  detail::Owned<B, event_type, detail::DestroyEvent> before_;
  detail::Owned<B, event_type, detail::DestroyEvent> after_;
  CudnnWorkspace<B> workspace_;
};

}  // namespace glassbox::cudnn
