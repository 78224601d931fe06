#pragma once
// A host backend that passes every call to a SimHostBackend it owns, for
// tests that watch or hold up one call: they override that call alone.
#include <cstddef>
#include <string>

#include "glassbox/host_allocator/host_backend.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"

namespace glassbox::testing {

class ForwardingSimBackend : public host_allocator::HostBackend {
 public:
  host_allocator::SimHostBackend sim;

  void* allocate(std::size_t bytes) override { return sim.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) noexcept override { sim.deallocate(ptr, bytes); }
  host_allocator::EventId record_event(host_allocator::StreamId stream) override { return sim.record_event(stream); }
  host_allocator::EventPoll query_event(host_allocator::EventId event) noexcept override {
    return sim.query_event(event);
  }
  void release_event(host_allocator::EventId event) noexcept override { sim.release_event(event); }
  host_allocator::StreamId current_stream() const override { return sim.current_stream(); }
  bool is_capturing(host_allocator::StreamId stream) const override { return sim.is_capturing(stream); }
  std::string name() const override { return "forwarding-sim"; }
};

}  // namespace glassbox::testing
