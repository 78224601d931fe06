#pragma once
// What the cuDNN state wrapper asks of a backend. The wrapper's logic (lazy
// states, the per-state lock, the before/after event dance, the workspace) is
// written once against this policy; SimCudnnBackend and CudaCudnnBackend
// supply it.
//
// A compile-time policy rather than a virtual interface: the two backends
// have different native types (cudaStream_t and cudnnHandle_t against
// SimStream* and fake ids), and the closure a caller passes to
// with_cudnn_state() wants the real cudnnHandle_t, not an erased one it must
// cast back. The closure is a template anyway, so nothing is lost.
//
// A backend is shared by every state of a CudnnStates and its members may be
// called from any thread at once.
#include <concepts>
#include <cstddef>
#include <utility>

namespace glassbox::cudnn {

template <class B>
concept CudnnBackend = requires(B& b, const B& cb, int device, typename B::stream_type stream,
                                typename B::event_type& event, typename B::handle_type handle, std::size_t bytes,
                                void* block) {
  // Makes `device` current for its scope (a no-op type where devices are not current-per-thread).
  requires std::constructible_from<typename B::device_guard, int>;
  // Valid devices are [0, device_count()).
  { cb.device_count() } -> std::same_as<int>;
  // A stream that runs independently of every other (non-blocking).
  { b.create_stream(device) } -> std::same_as<typename B::stream_type>;
  { b.destroy_stream(device, stream) }
  noexcept;
  { b.create_event(device) } -> std::same_as<typename B::event_type>;
  { b.destroy_event(device, event) }
  noexcept;
  // `event` marks everything queued on `stream` so far.
  b.record(event, stream);
  // Work queued on `stream` from now on starts after `event` completes; the
  // host does not wait. The event may be recorded again right after.
  b.wait(stream, std::as_const(event));
  // A handle owned by its caller, bound to `stream` for the rest of its life.
  { b.create_handle(device, stream) } -> std::same_as<typename B::handle_type>;
  { b.destroy_handle(device, handle) }
  noexcept;
  // The calling thread's handle from the process's handle pool, bound to `stream`.
  { b.inline_handle(device, stream) } -> std::same_as<typename B::handle_type>;
  // Device memory for work queued on `stream`. deallocate() is stream-ordered:
  // the block is reused only after the work already queued on `stream` has run.
  { b.allocate(device, bytes, stream) } -> std::same_as<void*>;
  { b.deallocate(device, block, bytes, stream) }
  noexcept;
};

}  // namespace glassbox::cudnn
