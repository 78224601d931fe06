#include "glassbox/backend/fake_handle.hpp"

#include <thread>

#include "glassbox/error.hpp"

namespace glassbox::backend {

FakeHandleFactory::handle_type FakeHandleFactory::create(int device) {
  if (state_->create_latency.count() > 0) std::this_thread::sleep_for(state_->create_latency);
  int left = state_->failures_to_inject.load();
  while (left > 0 && !state_->failures_to_inject.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0) {
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

}  // namespace glassbox::backend
