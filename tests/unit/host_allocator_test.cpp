// The caching host allocator on the sim backend: event-based reuse, capture
// pools, empty_cache, out-of-memory, configuration, stats and metrics.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
using gha::SimHostBackend;
using gs::SimStream;

namespace {

struct Fixture {
  explicit Fixture(const char* conf = "") {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    o.registry = &registry;
    o.warn = [this](const std::string& w) { warnings.push_back(w); };
    allocator = std::make_unique<gha::CachingHostAllocator>(backend, o);
  }
  double metric(const std::string& name, const gm::LabelPairs& labels = {}) const {
    return gm::sum_series(registry.snapshot(), name, labels);
  }
  // Queues work on `s` and records the block as used there: its event will
  // complete only once `s` is stepped past that work.
  void use_on(gha::HostAllocation a, SimStream& s) {
    s.enqueue([] {});
    ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, SimHostBackend::id(s)));
  }

  gm::Registry registry;
  std::shared_ptr<SimHostBackend> backend = std::make_shared<SimHostBackend>();
  std::vector<std::string> warnings;
  std::unique_ptr<gha::CachingHostAllocator> allocator;
};

}  // namespace

TEST(HostAllocator, ZeroBytesGivesNull) {
  Fixture f;
  auto a = f.allocator->allocate(0);
  EXPECT_EQ(a.ptr, nullptr);
  EXPECT_EQ(a.ctx, nullptr);
  f.allocator->free(nullptr);
}

TEST(HostAllocator, SizesRoundUpToPowersOfTwo) {
  Fixture f;
  EXPECT_EQ(f.allocator->round_size(1), 1u);
  EXPECT_EQ(f.allocator->round_size(3), 4u);
  EXPECT_EQ(f.allocator->round_size(4096), 4096u);
  EXPECT_EQ(f.allocator->round_size(4097), 8192u);
}

TEST(HostAllocator, Pow2x4WasteIsAtMost25Percent) {
  gha::SizeClasses c(gha::SizeClassPolicy::pow2x4);
  double worst = 0;
  for (std::size_t n = 1; n < (1u << 20); n += (n < 4096 ? 1 : 97)) {
    auto idx = c.index(n);
    ASSERT_GE(c.size(idx), n);
    if (idx > 0) {
      ASSERT_LT(c.size(idx - 1), n) << "class below also fits " << n;
    }
    worst = std::max(worst, static_cast<double>(c.size(idx) - n) / static_cast<double>(n));
  }
  EXPECT_LT(worst, 0.25);
  gha::SizeClasses p(gha::SizeClassPolicy::pow2);
  EXPECT_EQ(p.size(p.index((1u << 20) + 1)), 1u << 21);  // pow2 wastes up to 50 %
}

TEST(HostAllocator, ABlockUsedOnNoStreamIsReusedAtOnce) {
  Fixture f;
  auto a = f.allocator->allocate(1000);
  f.allocator->free(a.ctx);
  auto b = f.allocator->allocate(1000);
  EXPECT_EQ(b.ptr, a.ptr);
  EXPECT_EQ(f.backend->allocations(), 1u);
}

TEST(HostAllocator, ABlockIsNotReusedBeforeEveryStreamPassedItsEvent) {
  Fixture f("thread_cache:0");
  SimStream s1, s2;
  auto a = f.allocator->allocate(4096);
  f.use_on(a, s1);
  f.use_on(a, s2);
  f.allocator->free(a.ctx);
  EXPECT_EQ(f.allocator->stats().pending_events, 2);

  auto b = f.allocator->allocate(4096);  // both events pending: a new block
  EXPECT_NE(b.ptr, a.ptr);
  s1.run_until_blocked();
  auto c = f.allocator->allocate(4096);  // s2 has not passed its event
  EXPECT_NE(c.ptr, a.ptr);
  s2.run_until_blocked();
  auto d = f.allocator->allocate(4096);
  EXPECT_EQ(d.ptr, a.ptr);
  EXPECT_EQ(f.allocator->stats().pending_events, 0);
  EXPECT_EQ(f.backend->live_events(), 0u);
}

TEST(HostAllocator, RecordStreamFindsABlockByPointer) {
  Fixture f("thread_cache:0");
  SimStream s;
  auto a = f.allocator->allocate(64);
  s.enqueue([] {});
  EXPECT_TRUE(f.allocator->record_stream(a.ptr, nullptr, SimHostBackend::id(s)));
  f.allocator->free(a.ctx);
  EXPECT_NE(f.allocator->allocate(64).ptr, a.ptr);
}

// A caller that moved the allocation's context into a wrapper of its own (as
// PyTorch's check_raw_allocation test does) passes the right pointer with a
// context we never gave out: the pointer finds the block, as in PyTorch.
TEST(HostAllocator, RecordStreamWithAForeignContextFindsTheBlockByPointer) {
  Fixture f("thread_cache:0");
  SimStream s;
  auto a = f.allocator->allocate(4096);
  int wrapper = 0;
  s.enqueue([] {});  // a queued read of the block
  EXPECT_TRUE(f.allocator->record_stream(a.ptr, &wrapper, SimHostBackend::id(s)));
  f.allocator->free(a.ctx);
  EXPECT_NE(f.allocator->allocate(4096).ptr, a.ptr) << "handed out while the queued read has not run";
  s.run_until_blocked();
  EXPECT_EQ(f.allocator->allocate(4096).ptr, a.ptr);
}

// Misuse is an error, never silence: memory that is no live allocation (never
// ours, freed, or freed and returned to the system) cannot be tracked.
TEST(HostAllocator, RecordStreamOnNoLiveAllocationThrowsNamingThePointer) {
  Fixture f;
  SimStream s;
  auto expect_refused = [&](void* ptr, void* ctx) {
    try {
      f.allocator->record_stream(ptr, ctx, SimHostBackend::id(s));
      ADD_FAILURE() << "record_stream accepted " << ptr;
    } catch (const glassbox::Error& e) {
      std::ostringstream text;
      text << ptr;
      EXPECT_NE(std::string(e.what()).find(text.str()), std::string::npos) << e.what();
    }
  };
  int not_ours = 0;
  expect_refused(&not_ours, nullptr);
  auto a = f.allocator->allocate(64);
  f.allocator->free(a.ctx);
  expect_refused(a.ptr, a.ctx);  // freed, still cached
  expect_refused(a.ptr, &not_ours);
  f.allocator->empty_cache();
  expect_refused(a.ptr, a.ctx);  // freed and returned to the system
}

TEST(HostAllocator, ProcessEventsForOneSizeFreesOnlyThatSize) {
  Fixture f("thread_cache:0");
  SimStream s;
  auto small = f.allocator->allocate(100);
  auto big = f.allocator->allocate(10000);
  f.use_on(small, s);
  f.use_on(big, s);
  f.allocator->free(small.ctx);
  f.allocator->free(big.ctx);
  s.run_until_blocked();
  f.allocator->process_events_for_size(10000);
  auto stats = f.allocator->stats();
  EXPECT_EQ(stats.pending_events, 1);  // the small block's event is still queued
  EXPECT_EQ(stats.cached_blocks, 1);
}

TEST(HostAllocator, EmptyCacheReleasesOnlyFreeBlocks) {
  Fixture f;
  auto keep = f.allocator->allocate(1 << 20);
  auto a = f.allocator->allocate(1 << 10);
  auto b = f.allocator->allocate(1 << 12);
  f.allocator->free(a.ctx);
  f.allocator->free(b.ctx);
  EXPECT_EQ(f.backend->live_blocks(), 3u);
  f.allocator->empty_cache();
  EXPECT_EQ(f.backend->live_blocks(), 1u);
  static_cast<char*>(keep.ptr)[(1 << 20) - 1] = 7;  // still ours
  auto s = f.allocator->stats();
  EXPECT_EQ(s.allocations.current, 1);
  EXPECT_EQ(s.allocated_bytes.current, 1 << 20);
  EXPECT_EQ(f.metric("glassbox_host_memory_reserved_bytes"), 1 << 20);
  EXPECT_EQ(f.metric("glassbox_host_memory_cached_bytes"), 0);
  f.allocator->free(keep.ctx);
}

TEST(HostAllocator, EmptyCacheTakesBlocksFromOtherThreadsCaches) {
  Fixture f;
  std::atomic<bool> freed{false}, done{false};
  std::thread other([&] {
    auto a = f.allocator->allocate(512);
    f.allocator->free(a.ctx);  // lands in this thread's cache
    freed = true;
    while (!done) std::this_thread::yield();
  });
  while (!freed) std::this_thread::yield();
  f.allocator->empty_cache();
  EXPECT_EQ(f.backend->live_blocks(), 0u);
  done = true;
  other.join();
}

TEST(HostAllocator, AThreadsCachedBlocksGoBackWhenItExits) {
  Fixture f;
  void* ptr = nullptr;
  std::thread([&] {
    auto a = f.allocator->allocate(777);
    ptr = a.ptr;
    f.allocator->free(a.ctx);
  }).join();
  auto b = f.allocator->allocate(777);  // from the shared list the exiting thread filled
  EXPECT_EQ(b.ptr, ptr);
  EXPECT_EQ(f.backend->allocations(), 1u);
}

TEST(HostAllocator, CapturePoolsAreKeptApartFromTheDefaultPool) {
  Fixture f;
  SimStream capture, other;
  const gha::PoolId pool{1, 0};
  auto def = f.allocator->allocate(256);
  f.allocator->free(def.ctx);  // a cached default-pool block of the size

  capture.begin_capture();
  f.allocator->begin_allocate_to_pool(pool, [&](gha::StreamId s) { return s == SimHostBackend::id(capture); });
  gha::HostAllocation in_pool;
  {
    gha::SimStreamGuard g(capture);
    in_pool = f.allocator->allocate(256);
  }
  EXPECT_NE(in_pool.ptr, def.ptr);  // not from the default pool
  {
    gha::SimStreamGuard g(other);  // filter says no: default pool
    auto d = f.allocator->allocate(256);
    EXPECT_EQ(d.ptr, def.ptr);
    f.allocator->free(d.ctx);
  }
  f.allocator->free(in_pool.ctx);  // back to the private pool, not the default one
  f.allocator->end_allocate_to_pool(pool);
  capture.end_capture();
  auto d2 = f.allocator->allocate(256);
  EXPECT_EQ(d2.ptr, def.ptr);
  f.allocator->free(d2.ctx);

  EXPECT_THROW(f.allocator->end_allocate_to_pool(pool), glassbox::Error);
  f.allocator->release_pool(pool);
  f.allocator->empty_cache();
  EXPECT_EQ(f.backend->live_blocks(), 0u);  // private pool emptied and gone
  EXPECT_THROW(f.allocator->release_pool(pool), glassbox::Error);
}

TEST(HostAllocator, ABlockUsedDuringCaptureIsNeverRecycled) {
  Fixture f;
  SimStream capture;
  const gha::PoolId pool{2, 0};
  capture.begin_capture();
  f.allocator->begin_allocate_to_pool(pool, [](gha::StreamId) { return true; });
  gha::HostAllocation used, unused;
  {
    gha::SimStreamGuard g(capture);
    used = f.allocator->allocate(128);
    unused = f.allocator->allocate(128);
  }
  f.use_on(used, capture);
  f.allocator->free(used.ctx);
  f.allocator->free(unused.ctx);
  EXPECT_EQ(f.backend->live_events(), 0u);  // nothing recorded during capture
  capture.run_until_blocked();
  {
    gha::SimStreamGuard g(capture);
    auto again = f.allocator->allocate(128);
    EXPECT_EQ(again.ptr, unused.ptr);  // the unused one is reusable
    auto third = f.allocator->allocate(128);
    EXPECT_NE(third.ptr, used.ptr);  // the used one never comes back
  }
  EXPECT_EQ(f.metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "captured"}}), 1);
  f.allocator->end_allocate_to_pool(pool);
}

// Used during capture means recorded on a capturing stream too, not only
// allocated during capture: the captured copy reads the block at every
// replay, long after any event recorded at free() has completed.
TEST(HostAllocator, ABlockRecordedOnACapturingStreamIsNeverRecycled) {
  Fixture f("thread_cache:0");
  SimStream capture;
  const gha::PoolId pool{4, 0};
  auto a = f.allocator->allocate(4096);  // before the capture
  capture.begin_capture();
  f.allocator->begin_allocate_to_pool(pool, [&](gha::StreamId s) { return s == SimHostBackend::id(capture); });
  f.use_on(a, capture);
  f.allocator->end_allocate_to_pool(pool);
  capture.end_capture();
  f.allocator->free(a.ctx);  // after the capture: the stream is not capturing any more
  capture.run_until_blocked();
  EXPECT_NE(f.allocator->allocate(4096).ptr, a.ptr) << "a block a graph replay reads was handed out again";
  EXPECT_EQ(f.backend->live_events(), 0u);
  EXPECT_EQ(f.metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "captured"}}), 1);
  f.allocator->release_pool(pool);
}

// A block used on a stream before its capture began and freed during it: an
// event recorded now would be captured into the graph, and its queries fail
// (and, in CUDA, break the capture while it lasts). None is recorded, no
// private pool needed; the block stays out for good and the allocator goes on.
TEST(HostAllocator, AFreeWhileAStreamOfTheBlockCapturesRecordsNoEvent) {
  Fixture f("thread_cache:0");
  SimStream s, other;
  auto a = f.allocator->allocate(4096);
  f.use_on(a, other);
  f.use_on(a, s);
  s.begin_capture();
  f.allocator->free(a.ctx);
  s.end_capture();
  EXPECT_EQ(f.backend->live_events(), 0u);
  s.run_until_blocked();
  other.run_until_blocked();
  for (int i = 0; i < 50; ++i) {
    auto b = f.allocator->allocate(4096);
    EXPECT_NE(b.ptr, a.ptr);
    f.allocator->free(b.ctx);
    f.allocator->process_events();
  }
  auto st = f.allocator->stats();
  EXPECT_EQ(st.allocations.current, 2);  // still reserved
  EXPECT_EQ(st.cached_blocks, 1);        // but not cached
  EXPECT_EQ(st.pending_events, 0);
  EXPECT_EQ(f.metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "captured"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "pending_event"}}), 1);
}

TEST(HostAllocator, AllocatingToAPrivatePoolOutsideCaptureWarnsOnce) {
  Fixture f;
  SimStream s;  // not capturing
  f.allocator->begin_allocate_to_pool({3, 0}, [](gha::StreamId) { return true; });
  gha::SimStreamGuard g(s);
  f.allocator->free(f.allocator->allocate(10).ctx);
  f.allocator->free(f.allocator->allocate(10).ctx);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("private pool (3,0)"), std::string::npos) << f.warnings[0];
  EXPECT_THROW(f.allocator->begin_allocate_to_pool({3, 0}, [](gha::StreamId) { return true; }), glassbox::Error);
  f.allocator->end_allocate_to_pool({3, 0});
}

TEST(HostAllocator, OutOfMemoryEmptiesTheCacheAndRetriesOnce) {
  Fixture f;
  f.backend->capacity_bytes = 3 << 20;
  auto a = f.allocator->allocate(1 << 20);
  auto b = f.allocator->allocate(1 << 20);
  f.allocator->free(a.ctx);
  f.allocator->free(b.ctx);                   // 2 MiB cached in 1 MiB blocks
  auto big = f.allocator->allocate(2 << 20);  // fits only after empty_cache
  EXPECT_NE(big.ptr, nullptr);
  EXPECT_EQ(f.backend->live_blocks(), 1u);
  try {
    f.allocator->allocate(2 << 20);
    FAIL() << "expected OutOfMemoryError";
  } catch (const glassbox::OutOfMemoryError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("allocating 2097152 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("reserved 2097152 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("active 2097152"), std::string::npos) << m;
    EXPECT_NE(m.find("empty_cache() was already tried"), std::string::npos) << m;
  }
  f.allocator->free(big.ctx);
  EXPECT_EQ(f.allocator->stats().allocations.current, 1);  // the failure left nothing behind
}

TEST(HostAllocator, ABackgroundThreadProcessesEvents) {
  Fixture f("background_thread:true,thread_cache:0");
  SimStream s(SimStream::Mode::worker);
  auto a = f.allocator->allocate(100);
  f.allocator->free(f.allocator->allocate(8).ctx);  // a miss starts the thread
  f.use_on(a, s);
  f.allocator->free(a.ctx);
  s.synchronize();
  for (int i = 0; i < 2000 && f.allocator->stats().pending_events > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(f.allocator->stats().pending_events, 0);
  EXPECT_EQ(f.allocator->allocate(100).ptr, a.ptr);
}

TEST(HostAllocator, MaxCachedBytesTrimsTheLeastRecentlyFreed) {
  Fixture f("max_cached_bytes:2KiB,thread_cache:0");
  auto a = f.allocator->allocate(1024), b = f.allocator->allocate(1024), c = f.allocator->allocate(1024);
  f.allocator->free(a.ctx);
  f.allocator->free(b.ctx);
  EXPECT_EQ(f.backend->live_blocks(), 3u);
  f.allocator->free(c.ctx);  // 3 KiB cached > 2 KiB: `a` (oldest) goes
  EXPECT_EQ(f.backend->live_blocks(), 2u);
  EXPECT_EQ(f.allocator->stats().cached_bytes, 2048);
  std::set<void*> left{f.allocator->allocate(1024).ptr, f.allocator->allocate(1024).ptr};
  EXPECT_EQ(left, (std::set<void*>{b.ptr, c.ptr}));
}

// allocate() takes the block its own poll freed (the last of its size, as
// from the back of the free list) without a trip through the list; one set
// aside and replaced keeps its place in the least-recently-freed order.
TEST(HostAllocator, APollHandsTheLastFreedBlockOfTheSizeToItsAllocate) {
  Fixture f("max_cached_bytes:2KiB,thread_cache:0");
  SimStream s;
  auto a = f.allocator->allocate(1024), x = f.allocator->allocate(512), b = f.allocator->allocate(1024);
  for (auto h : {a, x, b}) {
    f.use_on(h, s);
    f.allocator->free(h.ctx);
  }
  s.run_until_blocked();
  auto got = f.allocator->allocate(1024);  // polls: a, x, b become free in that order
  EXPECT_EQ(got.ptr, b.ptr);
  auto st = f.allocator->stats();
  EXPECT_EQ(st.pending_events, 0);
  EXPECT_EQ(st.cached_blocks, 2);
  EXPECT_EQ(st.cached_bytes, 1536);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"bucket", "10"}, {"state", "active"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"bucket", "10"}, {"state", "free"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "10"}}), 1);
  // 2.5 KiB cached > 2 KiB: `a` became free before `x` (though it reached
  // the list after it), so `a` goes, and with it the excess.
  f.allocator->free(got.ctx);
  EXPECT_EQ(f.backend->live_blocks(), 2u);
  EXPECT_EQ(f.allocator->allocate(512).ptr, x.ptr);
  EXPECT_EQ(f.allocator->allocate(1024).ptr, b.ptr);
}

// Series are computed at scrape time from each allocator's own counts: two
// allocators on one registry add up, and one that goes takes its cached
// bytes along while the per-bucket series keep their last values.
TEST(HostAllocator, AllocatorsSharingARegistryAddUpInItsSeries) {
  Fixture f;
  gha::HostAllocatorOptions o;
  o.registry = &f.registry;
  auto other = std::make_unique<gha::CachingHostAllocator>(f.backend, o);
  auto held = f.allocator->allocate(3000);
  f.allocator->free(f.allocator->allocate(3000).ctx);
  other->free(other->allocate(4000).ctx);
  auto other_held = other->allocate(4096);
  EXPECT_EQ(f.metric("glassbox_host_alloc_requests_total", {{"bucket", "12"}}), 4);
  EXPECT_EQ(f.metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "12"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "active"}}), 2);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "free"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_memory_active_bytes"), 2 * 4096);
  EXPECT_EQ(f.metric("glassbox_host_memory_cached_bytes"), 4096);
  EXPECT_EQ(f.metric("glassbox_host_rounded_bytes_total"), 4 * 4096);
  other->free(other_held.ctx);
  other.reset();
  EXPECT_EQ(f.metric("glassbox_host_memory_cached_bytes"), 4096);  // f's free block only
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "free"}}), 2);
  f.allocator->free(held.ctx);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "free"}}), 3);
  EXPECT_EQ(f.metric("glassbox_host_memory_cached_bytes"), 2 * 4096);
}

TEST(HostAllocator, StatsCountRequestsHitsAndBlocks) {
  Fixture f("thread_cache:0");
  for (int i = 0; i < 5; ++i) f.allocator->free(f.allocator->allocate(3000).ctx);
  auto held = f.allocator->allocate(3000);
  auto s = f.allocator->stats();
  ASSERT_EQ(s.classes.size(), 1u);
  const auto& c = s.classes[0];
  EXPECT_EQ(c.block_size, 4096u);
  EXPECT_EQ(c.requests, 6);
  EXPECT_EQ(c.cache_hits, 5);
  EXPECT_EQ(c.allocations.current, 1);
  EXPECT_EQ(c.active_requests.current, 1);
  EXPECT_EQ(c.active_requests.peak, 1);
  EXPECT_EQ(s.num_host_alloc, 1);
  EXPECT_EQ(s.host_alloc_time.count, 1);
  EXPECT_EQ(f.metric("glassbox_host_alloc_requests_total", {{"bucket", "12"}}), 6);
  EXPECT_EQ(f.metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "12"}}), 5);
  EXPECT_EQ(f.metric("glassbox_host_requested_bytes_total"), 6 * 3000);
  EXPECT_EQ(f.metric("glassbox_host_rounded_bytes_total"), 6 * 4096);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "active"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_memory_active_bytes"), 4096);

  f.allocator->reset_accumulated_stats();
  f.allocator->free(held.ctx);
  s = f.allocator->stats();
  EXPECT_EQ(s.classes[0].requests, 0);
  EXPECT_EQ(s.classes[0].active_requests.freed, 1);
  EXPECT_EQ(s.classes[0].active_requests.peak, 1);
  f.allocator->reset_peak_stats();
  EXPECT_EQ(f.allocator->stats().classes[0].active_requests.peak, 0);
}

TEST(HostAllocator, AFailedEventRecordKeepsTheBlockOutAndSaysSo) {
  Fixture f("thread_cache:0");
  SimStream s1, s2;
  auto a = f.allocator->allocate(64);
  f.use_on(a, s1);
  f.use_on(a, s2);
  f.backend->fail_records = 1;
  EXPECT_THROW(f.allocator->free(a.ctx), glassbox::BackendError);
  s1.run_until_blocked();
  s2.run_until_blocked();
  EXPECT_NE(f.allocator->allocate(64).ptr, a.ptr);  // never handed out again
  EXPECT_EQ(f.metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "event_record_failed"}}), 1);
  EXPECT_EQ(f.backend->live_events(), 0u);  // the recorded event drained
}

// An event whose query fails will never say complete, and its stream may
// still use the block: the event is dropped and counted with the backend's
// error, its block kept out for good, and the poll goes on with the rest.
TEST(HostAllocator, AFailedEventQueryDropsTheEventAndRetiresItsBlock) {
  Fixture f("thread_cache:0");
  SimStream s;
  auto a = f.allocator->allocate(64), b = f.allocator->allocate(64);
  f.use_on(a, s);
  f.use_on(b, s);
  f.allocator->free(a.ctx);  // the older event: polled first
  f.allocator->free(b.ctx);
  s.run_until_blocked();
  f.backend->fail_queries = 1;
  EXPECT_EQ(f.allocator->allocate(64).ptr, b.ptr);  // a's query failed; b's completed in the same poll
  for (int i = 0; i < 50; ++i) {
    auto c = f.allocator->allocate(64);
    EXPECT_NE(c.ptr, a.ptr);
    f.allocator->free(c.ctx);
    f.allocator->process_events();
  }
  EXPECT_EQ(f.allocator->stats().pending_events, 0);
  EXPECT_EQ(f.backend->live_events(), 0u);
  EXPECT_EQ(f.metric("glassbox_host_event_errors_total", {{"error", "injected"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "event_query_failed"}}), 1);
  EXPECT_EQ(f.metric("glassbox_host_blocks", {{"state", "pending_event"}}), 1);
}

// The sim backend answers as CUDA does for an event recorded on a capturing
// stream: the record succeeds (it is captured into the graph), and every poll
// of it fails, during the capture and after (CUDA: cudaErrorInvalidValue).
TEST(SimHostBackend, AnEventRecordedDuringCaptureFailsEveryPoll) {
  SimHostBackend backend;
  SimStream s;
  s.begin_capture();
  gha::EventId e = backend.record_event(SimHostBackend::id(s));
  EXPECT_EQ(backend.query_event(e).status, gha::EventPoll::failed);
  s.end_capture();
  s.run_until_blocked();
  const gha::EventPoll poll = backend.query_event(e);
  EXPECT_EQ(poll.status, gha::EventPoll::failed);
  EXPECT_STREQ(poll.error, "invalid_value");
  backend.release_event(e);
  EXPECT_EQ(backend.live_events(), 0u);
  EXPECT_EQ(backend.query_event(backend.record_event(SimHostBackend::id(s))).status, gha::EventPoll::complete);
}

TEST(HostAllocatorConfig, EveryKeyParses) {
  auto c = gha::HostAllocatorConfig::parse(
      "background_thread:true,size_classes:pow2x4,use_host_register:true,register_threads:8,max_cached_bytes:512MiB,"
      "thread_cache:0");
  EXPECT_TRUE(c.background_thread);
  EXPECT_EQ(c.size_classes, gha::SizeClassPolicy::pow2x4);
  EXPECT_TRUE(c.use_host_register);
  EXPECT_EQ(c.register_threads, 8);
  EXPECT_EQ(c.max_cached_bytes, std::size_t{512} << 20);
  EXPECT_EQ(c.thread_cache, 0);
  EXPECT_EQ(gha::HostAllocatorConfig::parse(c.to_string()).to_string(), c.to_string());
  EXPECT_EQ(gha::HostAllocatorConfig::parse("").to_string(), gha::HostAllocatorConfig{}.to_string());
}

TEST(HostAllocatorConfig, BadKeysAndValuesSayWhatIsAccepted) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"colour:red", "key one of background_thread, max_cached_bytes, register_threads, size_classes, thread_cache"},
      {"background_thread", "expected key:value"},
      {"background_thread:maybe", "background_thread takes true or false"},
      {"size_classes:pow3", "size_classes takes pow2 or pow2x4"},
      {"register_threads:0", "register_threads takes an integer from 1 to 64"},
      {"register_threads:4x", "register_threads takes an integer from 1 to 64"},
      {"max_cached_bytes:lots", "max_cached_bytes takes bytes"},
      {"max_cached_bytes:8PB", "max_cached_bytes takes bytes"},
      {"thread_cache:9", "thread_cache takes an integer from 0 to 8"},
  };
  for (const auto& c : cases) {
    try {
      gha::HostAllocatorConfig::parse(c.text);
      FAIL() << c.text;
    } catch (const glassbox::ConfigError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("GLASSBOX_HOST_ALLOC_CONF"), std::string::npos) << m;
      EXPECT_NE(m.find(c.expect), std::string::npos) << c.text << " -> " << m;
    }
  }
}
