#pragma once
// A host backend that passes every call to a SimHostBackend it owns, for
// tests that watch or hold up one call: they override that call alone.
#include <string>

#include "glassbox/host_allocator/forwarding_host_backend.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"

namespace glassbox::testing {

class ForwardingSimBackend : public host_allocator::ForwardingHostBackend<host_allocator::SimHostBackend> {
 public:
  host_allocator::SimHostBackend& sim = inner;

  std::string name() const override { return "forwarding-sim"; }
};

}  // namespace glassbox::testing
