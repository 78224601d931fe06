#include "glassbox/sim/fake_handle.hpp"

#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/sim/injected_fault.hpp"

namespace glassbox::sim {

FakeHandleFactory::handle_type FakeHandleFactory::create(int device) {
  if (state_->create_latency.count() > 0) std::this_thread::sleep_for(state_->create_latency);
  if (take_fault(state_->failures_to_inject)) {
    throw BackendError("fake " + library_ + " handle creation failed on device " + std::to_string(device) +
                       " (injected failure)");
  }
  std::uint64_t id = state_->next_id.fetch_add(1);
  std::lock_guard lock(state_->mu);
  state_->live.insert(id);
  ++state_->created;
  return id;
}

void FakeHandleFactory::destroy(int, handle_type h) noexcept {
  std::lock_guard lock(state_->mu);
  state_->live.erase(h);
  ++state_->destroyed;
}

}  // namespace glassbox::sim
