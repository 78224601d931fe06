#pragma once
// The cuDNN wrapper's sim backend: streams and events are SimStreams and
// SimEvents, handles are fake ids (FakeHandleFactory, library "cudnn"),
// workspace is aligned host memory. The wrapper's ordering, locking and
// workspace logic therefore runs, and is tested, without a GPU.
//
// Caller streams are SimStream pointers the caller owns. State streams are
// created here, in the mode the options name: worker (they run by themselves)
// or manual (a test steps each state's stream, reached through state.stream()).
// A manual stream destroyed with work still queued drops that work.
//
// Faults on demand, as in the other sim backends: the next N stream
// creations, handle creations (state and pooled handles) or workspace
// allocations fail, each with the BackendError its CUDA call would raise.
//
// Copies share one set of resources and counts. Thread-safety: every member
// may be called from any thread at once.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "glassbox/sim/sim_stream.hpp"

namespace glassbox::cudnn {

struct SimCudnnOptions {
  int device_count = 1;
  sim::SimStream::Mode state_streams = sim::SimStream::Mode::worker;
};

/// What a SimCudnnBackend has created and not yet destroyed.
struct SimCudnnLive {
  std::size_t streams = 0;
  std::size_t handles = 0;  ///< state handles; pooled inline handles are in handle_pool().counts()
  std::size_t workspace_blocks = 0;
  std::size_t workspace_bytes = 0;
};

class SimCudnnBackend {
 public:
  using stream_type = sim::SimStream*;
  using event_type = sim::SimEvent;
  using handle_type = std::uint64_t;
  using InlinePool = handle_pool::DeviceThreadHandlePool<sim::FakeHandleFactory>;

  /// Sim devices have no "current device".
  struct device_guard {
    explicit device_guard(int) noexcept {}
  };

  /// `registry` receives the inline handle pool's metrics and must outlive every copy.
  explicit SimCudnnBackend(SimCudnnOptions options = {}, metrics::Registry& registry = metrics::Registry::global());

  int device_count() const noexcept;

  stream_type create_stream(int device);
  void destroy_stream(int device, stream_type stream) noexcept;

  event_type create_event(int) const noexcept { return {}; }
  void destroy_event(int, event_type&) const noexcept {}
  void record(event_type& event, stream_type stream) const { event = stream->record(); }
  void wait(stream_type stream, const event_type& event) const { stream->wait(event); }

  handle_type create_handle(int device, stream_type stream);
  void destroy_handle(int device, handle_type handle) noexcept;
  /// The calling thread's pooled fake handle; `stream` is unused (a fake handle has nothing to bind).
  handle_type inline_handle(int device, stream_type stream);

  void* allocate(int device, std::size_t bytes, stream_type stream);
  /// Frees the block once `stream` has run everything queued before this call
  /// (or when the stream drops that work).
  void deallocate(int device, void* block, std::size_t bytes, stream_type stream) noexcept;

  std::atomic<int>& fail_stream_creations() noexcept;
  std::atomic<int>& fail_handle_creations() noexcept;
  std::atomic<int>& fail_workspace_allocations() noexcept;

  SimCudnnLive live() const;
  const InlinePool& handle_pool() const noexcept;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace glassbox::cudnn
