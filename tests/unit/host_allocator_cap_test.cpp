// max_cached_bytes bounds every cached byte, thread caches (idle threads'
// included) as well as the shared lists, and the trim returns memory neither
// inside free() nor under an allocator lock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "forwarding_sim_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"

namespace gha = glassbox::host_allocator;
namespace gs = glassbox::sim;
namespace gm = glassbox::metrics;

namespace {

thread_local bool tl_in_free = false;

// The sim backend, watching where deallocate() is called from: inside a
// free() of the test's (tl_in_free), or while the allocator holds a lock
// that stats() needs (a stats() on another thread does not finish).
class WatchingBackend final : public glassbox::testing::ForwardingSimBackend {
 public:
  gha::CachingHostAllocator* allocator = nullptr;
  std::atomic<int> inside_free{0};
  std::atomic<int> under_lock{0};
  std::atomic<int> deallocations{0};

  ~WatchingBackend() override { join_probes(); }
  void join_probes() {
    for (auto& t : probes_) t.join();
    probes_.clear();
  }

  void deallocate(void* ptr, std::size_t bytes) noexcept override {
    deallocations.fetch_add(1);
    if (tl_in_free) inside_free.fetch_add(1);
    if (allocator != nullptr) probe_locks();
    sim.deallocate(ptr, bytes);
  }
  std::string name() const override { return "watching-sim"; }

 private:
  void probe_locks() {
    auto done = std::make_shared<std::atomic<bool>>(false);
    probes_.emplace_back([a = allocator, done] {
      (void)a->stats();
      done->store(true);
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done->load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    if (!done->load()) under_lock.fetch_add(1);
  }
  std::vector<std::thread> probes_;  // joined once the locks are free again
};

struct Fixture {
  explicit Fixture(const char* conf) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    o.registry = &registry;
    allocator = std::make_unique<gha::CachingHostAllocator>(backend, o);
    backend->allocator = allocator.get();
  }
  ~Fixture() {
    backend->join_probes();
    backend->allocator = nullptr;
    allocator.reset();
  }
  void free(gha::HostAllocation a) {
    tl_in_free = true;
    allocator->free(a.ctx);
    tl_in_free = false;
  }
  gm::Registry registry;
  std::shared_ptr<WatchingBackend> backend = std::make_shared<WatchingBackend>();
  std::unique_ptr<gha::CachingHostAllocator> allocator;
};

}  // namespace

TEST(HostAllocatorCap, ThreadCachedBytesCountAgainstTheCap) {
  Fixture f("max_cached_bytes:8KiB");  // thread caches on: 4 blocks per class
  std::vector<gha::HostAllocation> held;
  for (int i = 0; i < 4; ++i) held.push_back(f.allocator->allocate(4096));
  for (int i = 0; i < 4; ++i) held.push_back(f.allocator->allocate(8192));
  for (auto a : held) f.free(a);
  f.allocator->process_events();
  auto s = f.allocator->stats();
  EXPECT_LE(s.cached_bytes, 8192);
  EXPECT_EQ(s.allocated_bytes.current, s.cached_bytes);
  EXPECT_EQ(static_cast<std::int64_t>(f.backend->sim.live_bytes()), s.allocated_bytes.current);
  EXPECT_EQ(f.backend->inside_free.load(), 0);
  EXPECT_EQ(f.backend->under_lock.load(), 0);
}

// A hit out of a thread cache takes its bytes off the cap's count, as the
// free before it added them: cached pairs, however many, leave the count as
// it was, and a trim then keeps every block that fits.
TEST(HostAllocatorCap, CachedPairsLeaveTheCountAgainstTheCapAsItWas) {
  Fixture f("max_cached_bytes:8KiB");
  for (int i = 0; i < 100; ++i) f.free(f.allocator->allocate(4096));  // one block, in this thread's cache
  std::thread([&] { f.free(f.allocator->allocate(4096)); }).join();   // a second, on the shared lists
  f.allocator->process_events();                                      // a trim, if the cap were exceeded
  EXPECT_EQ(f.backend->sim.live_blocks(), 2u);
  EXPECT_EQ(f.allocator->stats().cached_bytes, 8192);
  EXPECT_EQ(f.backend->under_lock.load(), 0);
}

TEST(HostAllocatorCap, AnIdleThreadsCacheIsTrimmed) {
  Fixture f("max_cached_bytes:4KiB");
  std::latch filled(1), done(1);
  std::thread idle([&] {
    std::vector<gha::HostAllocation> held;
    for (int i = 0; i < 4; ++i) held.push_back(f.allocator->allocate(4096));
    for (auto a : held) f.free(a);  // into this thread's cache
    filled.count_down();
    done.wait();  // alive, and doing nothing
  });
  filled.wait();
  EXPECT_EQ(f.allocator->stats().cached_bytes, 4 * 4096);
  f.allocator->process_events();
  EXPECT_EQ(f.allocator->stats().cached_bytes, 4096);
  EXPECT_EQ(f.backend->sim.live_blocks(), 1u);
  done.count_down();
  idle.join();
  EXPECT_EQ(f.backend->under_lock.load(), 0);
}

// The trim is left to the next allocate() miss (or process_events()): free()
// never waits for cudaFreeHost, and no lock is held while it runs.
TEST(HostAllocatorCap, NoMemoryIsReturnedInsideFreeOrUnderALock) {
  Fixture f("max_cached_bytes:2KiB,thread_cache:0");
  std::vector<gha::HostAllocation> held;
  for (int i = 0; i < 3; ++i) held.push_back(f.allocator->allocate(1024));
  for (auto a : held) f.free(a);  // 3 KiB cached
  EXPECT_EQ(f.backend->deallocations.load(), 0);
  auto big = f.allocator->allocate(4096);  // a miss: trims first
  EXPECT_EQ(f.backend->deallocations.load(), 1);
  EXPECT_EQ(f.allocator->stats().cached_bytes, 2048);
  f.free(big);  // 6 KiB cached, until the next poll
  f.allocator->process_events();
  EXPECT_LE(f.allocator->stats().cached_bytes, 2048);
  EXPECT_EQ(f.backend->inside_free.load(), 0);
  EXPECT_EQ(f.backend->under_lock.load(), 0);
}

// A graph's private pool may hold more free bytes than the cap; they leave
// with release_pool(), not with a trim. Counted against the cap, they kept it
// exceeded for good: every trim emptied the default pool's cache.
TEST(HostAllocatorCap, FreeBlocksOfAPrivatePoolDoNotDefeatTheCap) {
  Fixture f("max_cached_bytes:8KiB,thread_cache:0");
  gs::SimStream capture;
  const gha::PoolId pool{7, 0};
  f.allocator->begin_allocate_to_pool(pool, [&](gha::StreamId s) { return s == gha::SimHostBackend::id(capture); });
  {
    gha::SimStreamGuard current(capture);
    std::vector<gha::HostAllocation> graph;
    for (int i = 0; i < 4; ++i) graph.push_back(f.allocator->allocate(4096));
    for (auto a : graph) f.free(a);  // 16 KiB free in the private pool
  }
  f.allocator->end_allocate_to_pool(pool);
  auto a = f.allocator->allocate(4096);
  f.free(a);
  f.allocator->process_events();  // a trim, if the cap were exceeded
  EXPECT_EQ(f.allocator->allocate(4096).ptr, a.ptr) << "the default pool's cache was trimmed";
  EXPECT_EQ(f.backend->deallocations.load(), 0);
  f.allocator->release_pool(pool);
}
