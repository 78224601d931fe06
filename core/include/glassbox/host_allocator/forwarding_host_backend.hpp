#pragma once
// A host backend that passes every call to a backend it owns, `inner`: a
// subclass overrides the calls it changes (a test watching one call, or
// glassbox_torch's backend, whose current stream is PyTorch's).
#include <cstddef>
#include <string>
#include <utility>

#include "glassbox/host_allocator/host_backend.hpp"

namespace glassbox::host_allocator {

template <typename Inner>
class ForwardingHostBackend : public HostBackend {
 public:
  template <typename... Args>
  explicit ForwardingHostBackend(Args&&... args) : inner(std::forward<Args>(args)...) {}

  void* allocate(std::size_t bytes) override { return inner.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) noexcept override { inner.deallocate(ptr, bytes); }
  EventId record_event(StreamId stream) override { return inner.record_event(stream); }
  EventPoll query_event(EventId event) noexcept override { return inner.query_event(event); }
  void release_event(EventId event) noexcept override { inner.release_event(event); }
  bool stream_done(StreamId stream) noexcept override { return inner.stream_done(stream); }
  StreamId current_stream() const override { return inner.current_stream(); }
  bool is_capturing(StreamId stream) const override { return inner.is_capturing(stream); }
  std::uint64_t stream_serial(StreamId stream) const noexcept override { return inner.stream_serial(stream); }
  bool stream_outlives_allocator(StreamId stream) const noexcept override {
    return inner.stream_outlives_allocator(stream);
  }
  std::string name() const override { return inner.name(); }

  Inner inner;
};

}  // namespace glassbox::host_allocator
