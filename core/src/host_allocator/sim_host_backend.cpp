#include "glassbox/host_allocator/sim_host_backend.hpp"

#include <cstdlib>

#include "glassbox/error.hpp"
#include "glassbox/sim/injected_fault.hpp"

namespace glassbox::host_allocator {

namespace {
thread_local sim::SimStream* tl_current = nullptr;
}  // namespace

void SimHostBackend::set_current_stream(sim::SimStream* s) noexcept { tl_current = s; }

void* SimHostBackend::allocate(std::size_t bytes) {
  if (sim::take_fault(fail_allocations)) return nullptr;
  std::lock_guard lock(mu_);
  std::size_t cap = capacity_bytes.load();
  if (cap != 0 && live_bytes_ + bytes > cap) return nullptr;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) return nullptr;
  live_.emplace(p, bytes);
  live_bytes_ += bytes;
  ++allocations_;
  return p;
}

void SimHostBackend::deallocate(void* ptr, std::size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  live_.erase(ptr);
  live_bytes_ -= bytes;
  std::free(ptr);
}

EventId SimHostBackend::record_event(StreamId stream) {
  if (sim::take_fault(fail_records)) throw BackendError("sim backend: event record failed (injected)");
  auto* s = reinterpret_cast<sim::SimStream*>(stream);
  Recorded r{s->record(), s->capturing()};
  std::lock_guard lock(mu_);
  events_.emplace(next_event_, r);
  return next_event_++;
}

// As cudaEventQuery: an event recorded inside a capture never completes,
// during the capture or after it (CUDA answers cudaErrorInvalidValue).
EventPoll SimHostBackend::query_event(EventId event) noexcept {
  if (sim::take_fault(fail_queries)) return {EventPoll::failed, "injected"};
  Recorded r;
  {
    std::lock_guard lock(mu_);
    r = events_.at(event);
  }
  if (r.captured) return {EventPoll::failed, "invalid_value"};
  return {r.event.query() ? EventPoll::complete : EventPoll::pending};
}

void SimHostBackend::release_event(EventId event) noexcept {
  std::lock_guard lock(mu_);
  events_.erase(event);
}

StreamId SimHostBackend::current_stream() const { return reinterpret_cast<StreamId>(tl_current); }

bool SimHostBackend::is_capturing(StreamId stream) const {
  return stream != 0 && reinterpret_cast<sim::SimStream*>(stream)->capturing();
}

bool SimHostBackend::stream_done(StreamId stream) noexcept {
  return stream != 0 && reinterpret_cast<sim::SimStream*>(stream)->idle();
}

std::size_t SimHostBackend::live_bytes() const {
  std::lock_guard lock(mu_);
  return live_bytes_;
}
std::size_t SimHostBackend::live_blocks() const {
  std::lock_guard lock(mu_);
  return live_.size();
}
std::size_t SimHostBackend::live_events() const {
  std::lock_guard lock(mu_);
  return events_.size();
}
std::size_t SimHostBackend::allocations() const {
  std::lock_guard lock(mu_);
  return allocations_;
}

SimStreamGuard::SimStreamGuard(sim::SimStream& s) noexcept : previous_(tl_current) { tl_current = &s; }
SimStreamGuard::~SimStreamGuard() { tl_current = previous_; }

}  // namespace glassbox::host_allocator
