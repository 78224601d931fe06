// The host allocator when the C++ heap fails inside it: this binary's
// operator new throws std::bad_alloc once where a test asks it to (on the
// asking thread only), so that a call's failure path runs as it would
// under memory pressure.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <new>
#include <thread>

#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/metrics/registry.hpp"

namespace {
thread_local bool fail_next_new = false;
}  // namespace

void* operator new(std::size_t bytes) {
  if (fail_next_new) {
    fail_next_new = false;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
// GCC takes the standard library's inlined deletes for the default ones,
// which free() would not match: here both sides are replaced.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace gha = glassbox::host_allocator;
namespace gs = glassbox::sim;

// An owner's record adds its stream under the owner's cache lock
// (record_own); a second stream goes into a vector, whose growth may throw.
// The record must then fail with the lock given back: a remote holder of
// every cache (stats(), a scrape, empty_cache()) would otherwise wait for it
// for good.
TEST(HostAllocatorAllocFailure, ARecordThatCannotGrowItsStreamsLeavesTheCacheUnlocked) {
  glassbox::metrics::Registry registry;
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  auto backend = std::make_shared<gha::SimHostBackend>();
  gha::CachingHostAllocator allocator(backend, o);
  gs::SimStream first, second;
  allocator.free(allocator.allocate(4096).ctx);  // this thread's cache exists: records go through record_own
  auto a = allocator.allocate(4096);
  allocator.record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(first));
  fail_next_new = true;
  EXPECT_THROW(allocator.record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(second)), std::bad_alloc);
  fail_next_new = false;
  // On a thread of its own, left behind if it never returns (a future of
  // std::async would wait for it in its destructor, and the test with it).
  auto active = std::make_shared<std::promise<std::int64_t>>();
  auto result = active->get_future();
  std::thread([&allocator, active] { active->set_value(allocator.stats().active_requests.current); }).detach();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "stats() waits for a cache lock the failed record kept";
  EXPECT_EQ(result.get(), 1);
  allocator.free(a.ctx);
  first.synchronize();
  allocator.empty_cache();
}
