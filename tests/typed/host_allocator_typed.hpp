#pragma once
// The caching host allocator's behaviour, written once for any backend:
// event-based reuse (a block comes back only after every stream it was used
// on passed its event), capture pools, empty_cache, the cached-bytes cap,
// thread caches, stats and metrics. Instantiated for the sim backend
// (tests/typed/sim_typed_test.cpp, label unit) and the CUDA backend
// (tests/gpu/cuda_typed_test.cpp, label gpu; skipped without a device).
//
// The traits type a suite is instantiated with (tests/support/
// sim_backend_traits.hpp, cuda_backend_traits.hpp) makes the backend and the
// streams. A stream is held busy by a gate: events recorded behind a closed
// gate cannot complete until the test opens it, so "not yet" is certain,
// not a race against a timer. Gates are opened before the allocator returns
// memory (empty_cache, the cap, its destructor): on CUDA, cudaFreeHost waits
// for the whole device.
//
// What only the sim can do (manual stepping, injected faults, the reference
// model) stays in tests/unit and tests/fault; what only a GPU shows (real
// copies, the CUDA backend's event pool) stays in tests/gpu.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/metrics/registry.hpp"
#include "racing_call.hpp"

namespace glassbox::testing {

template <class T>
class HostAllocatorTyped : public ::testing::Test {
 protected:
  using Stream = typename T::Stream;
  using Gate = typename T::Gate;
  using Read = typename T::Read;

  void SetUp() override {
    if (std::string why = T::unavailable(); !why.empty()) GTEST_SKIP() << why;
  }

  /// Makes the backend and the allocator, configured by `conf`; once per test.
  void make(const char* conf = "") {
    ASSERT_EQ(allocator, nullptr) << "make() twice";
    host_allocator::HostAllocatorOptions o;
    o.config = host_allocator::HostAllocatorConfig::parse(conf);
    o.registry = &registry;
    o.warn = [this](const std::string& w) { warnings.push_back(w); };
    backend = T::make_backend(o.config);
    allocator = std::make_unique<host_allocator::CachingHostAllocator>(backend, o);
  }

  host_allocator::HostAllocation allocate(std::size_t size) { return allocator->allocate(size); }
  void free(host_allocator::HostAllocation a) { allocator->free(a.ctx); }
  host_allocator::HostStats stats() const { return allocator->stats(); }
  /// Marks `a` as used on `s` (put a gate on `s` first to keep its event pending).
  void record(host_allocator::HostAllocation a, Stream& s,
              host_allocator::StreamLife life = host_allocator::StreamLife::unknown) {
    ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, s.id(), life));
  }
  double metric(const std::string& name, const metrics::LabelPairs& labels = {}) const {
    return metrics::sum_series(registry.snapshot(), name, labels);
  }

  /// Pinned blocks held: the backend's own count where it keeps one (the
  /// sim's ground truth), else the allocator's.
  std::size_t blocks_held() const {
    if (auto n = T::live_blocks(*backend)) return *n;
    return static_cast<std::size_t>(stats().allocations.current);
  }
  /// Blocks the backend allocated so far, counted the same way.
  std::size_t blocks_made() const {
    if (auto n = T::allocations_made(*backend)) return *n;
    return static_cast<std::size_t>(stats().num_host_alloc);
  }

  /// On one new thread per stream: allocates a block of each size, records
  /// them on the stream and frees them. The streams are held by gates until
  /// every thread is done (no thread can poll another's events complete),
  /// then waited for.
  void free_on_threads(std::vector<Stream>& streams, std::vector<std::size_t> sizes) {
    std::vector<std::unique_ptr<Gate>> gates;
    for (Stream& s : streams) gates.push_back(std::make_unique<Gate>(s.native()));
    std::vector<std::thread> threads;
    for (Stream& s : streams) {
      threads.emplace_back([this, &s, &sizes] {
        std::vector<host_allocator::HostAllocation> held;
        for (std::size_t size : sizes) held.push_back(allocate(size));
        for (auto a : held) record(a, s);
        for (auto a : held) this->free(a);
      });
    }
    for (auto& t : threads) t.join();
    for (auto& g : gates) g->open();
    for (Stream& s : streams) s.synchronize();
  }

  /// A stream the test owns, or one the backend knows outlives the
  /// allocator (CUDA: a glassbox pool stream), used without a promise.
  std::unique_ptr<Stream> make_stream(bool pool_stream) {
    return pool_stream ? std::make_unique<Stream>(*backend) : std::make_unique<Stream>();
  }

  void expect_queued_read_sees_its_bytes(host_allocator::StreamLife life, bool pool_stream = false) {
    constexpr std::size_t kBytes = 1 << 16;
    make();
    auto owned = make_stream(pool_stream);
    Stream& s = *owned;
    auto a = allocate(kBytes);
    std::memset(a.ptr, 0xAB, kBytes);
    host_allocator::HostAllocation b, b2;
    {
      Gate g(s.native());
      Read read(s, a.ptr, kBytes);
      record(a, s, life);
      this->free(a);
      // At once, while the read waits; twice, as a block's deferred event
      // may be recorded and polled by a later allocate().
      b = allocate(kBytes);
      std::memset(b.ptr, 0xCD, kBytes);
      EXPECT_NE(b.ptr, a.ptr);
      b2 = allocate(kBytes);
      std::memset(b2.ptr, 0xEF, kBytes);
      EXPECT_NE(b2.ptr, a.ptr);
      g.open();
      auto seen = read.bytes();
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 0xAB), static_cast<long>(kBytes))
          << "the queued read saw overwritten bytes";
    }
    this->free(b);
    this->free(b2);
    s.synchronize();
    allocator->process_events();
    auto c = allocate(kBytes);  // the read is done: a's block may come back now
    EXPECT_TRUE(c.ptr == a.ptr || c.ptr == b.ptr || c.ptr == b2.ptr);
    EXPECT_EQ(stats().allocations.current, 3);
    this->free(c);
  }

  /// Eight blocks freed on one stream that outlives the allocator (promised
  /// by the caller, or a pool stream the backend knows) share one event,
  /// recorded at the next allocate() that finds none cached.
  void expect_blocks_share_one_event(bool pool_stream) {
    constexpr int kBlocks = 8;
    this->make();
    auto owned = make_stream(pool_stream);
    Stream& s = *owned;
    const auto life =
        pool_stream ? host_allocator::StreamLife::unknown : host_allocator::StreamLife::outlives_allocator;
    std::vector<host_allocator::HostAllocation> first;
    std::set<void*> firsts;
    for (int i = 0; i < kBlocks; ++i) first.push_back(this->allocate(4096));
    host_allocator::HostAllocation late, late2;
    {
      Gate g(s.native());
      for (auto a : first) {
        this->record(a, s, life);
        firsts.insert(a.ptr);
      }
      for (auto a : first) this->free(a);
      EXPECT_EQ(this->stats().pending_events, 0) << "an event was recorded in free()";
      EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "pending_event"}}), kBlocks);
      EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), kBlocks);
      late = this->allocate(4096);  // none cached: one event for the eight, behind the gate
      EXPECT_EQ(firsts.count(late.ptr), 0u) << "handed out before its stream passed an event";
      EXPECT_EQ(this->stats().pending_events, 1);
      EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 0);
      EXPECT_EQ(this->metric("glassbox_host_group_events_total"), 1);
      EXPECT_EQ(this->metric("glassbox_host_group_blocks_total"), kBlocks);
      late2 = this->allocate(4096);  // polls that event: not yet
      EXPECT_EQ(firsts.count(late2.ptr), 0u) << "handed out before its stream passed its event";
      g.open();
      s.synchronize();
    }
    auto again = this->allocate(4096);
    EXPECT_EQ(firsts.count(again.ptr), 1u);
    EXPECT_EQ(this->blocks_made(), static_cast<std::size_t>(kBlocks + 2));
    EXPECT_EQ(this->stats().pending_events, 0);
    EXPECT_EQ(this->stats().cached_blocks, kBlocks - 1);
    EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "pending_event"}}), 0);
    // The other seven came back into the thread's cache (thread_cache: 8 by
    // default): the next seven are hits that make no block and poll nothing.
    for (int i = 0; i < kBlocks - 1; ++i) EXPECT_EQ(firsts.count(this->allocate(4096).ptr), 1u);
    EXPECT_EQ(this->blocks_made(), static_cast<std::size_t>(kBlocks + 2));
    if (auto live = T::live_events(*this->backend)) {
      EXPECT_EQ(*live, 0u);
    }
    for (auto h : {late, late2, again}) this->free(h);
  }

  /// Requests, hits, blocks and peaks of one class, under config `conf`.
  void expect_stats_count(const char* conf) {
    make(conf);
    for (int i = 0; i < 5; ++i) this->free(this->allocate(3000));
    auto held = this->allocate(3000);
    auto s = this->stats();
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
    EXPECT_EQ(this->metric("glassbox_host_alloc_requests_total", {{"bucket", "12"}}), 6);
    EXPECT_EQ(this->metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "12"}}), 5);
    EXPECT_EQ(this->metric("glassbox_host_requested_bytes_total"), 6 * 3000);
    EXPECT_EQ(this->metric("glassbox_host_rounded_bytes_total"), 6 * 4096);
    EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "active"}}), 1);
    EXPECT_EQ(this->metric("glassbox_host_memory_active_bytes"), 4096);

    this->allocator->reset_accumulated_stats();
    this->free(held);
    s = this->stats();
    EXPECT_EQ(s.classes[0].requests, 0);
    EXPECT_EQ(s.classes[0].active_requests.freed, 1);
    EXPECT_EQ(s.classes[0].active_requests.peak, 1);
    this->allocator->reset_peak_stats();
    EXPECT_EQ(this->stats().classes[0].active_requests.peak, 0);
  }

  // Declared first, destroyed last: the allocator reports into the registry.
  metrics::Registry registry;
  std::vector<std::string> warnings;
  std::shared_ptr<typename T::Backend> backend;
  std::unique_ptr<host_allocator::CachingHostAllocator> allocator;
};

TYPED_TEST_SUITE_P(HostAllocatorTyped);

TYPED_TEST_P(HostAllocatorTyped, ZeroBytesGivesNull) {
  this->make();
  auto a = this->allocate(0);
  EXPECT_EQ(a.ptr, nullptr);
  EXPECT_EQ(a.ctx, nullptr);
  this->allocator->free(nullptr);
}

TYPED_TEST_P(HostAllocatorTyped, ABlockUsedOnNoStreamIsReusedAtOnce) {
  this->make();
  auto a = this->allocate(1000);
  this->free(a);
  auto b = this->allocate(1000);
  EXPECT_EQ(b.ptr, a.ptr);
  EXPECT_EQ(this->blocks_made(), 1u);
  this->free(b);
}

TYPED_TEST_P(HostAllocatorTyped, ABlockIsNotReusedBeforeEveryStreamPassedItsEvent) {
  this->make("thread_cache:0");
  typename TestFixture::Stream s1, s2;
  auto a = this->allocate(4096);
  host_allocator::HostAllocation b, c, d;
  {
    typename TestFixture::Gate g1(s1.native()), g2(s2.native());
    this->record(a, s1);
    this->record(a, s2);
    this->free(a);
    EXPECT_EQ(this->stats().pending_events, 2);

    b = this->allocate(4096);  // both events pending: a new block
    EXPECT_NE(b.ptr, a.ptr);
    g1.open();
    s1.synchronize();
    c = this->allocate(4096);  // s2 has not passed its event
    EXPECT_NE(c.ptr, a.ptr);
    g2.open();
    s2.synchronize();
    d = this->allocate(4096);
    EXPECT_EQ(d.ptr, a.ptr);
  }
  EXPECT_EQ(this->stats().pending_events, 0);
  if (auto live = TypeParam::live_events(*this->backend)) {
    EXPECT_EQ(*live, 0u);
  }
  for (auto h : {b, c, d}) this->free(h);
}

// A copy queued behind a gate reads the block only when the gate opens: by
// then the test has freed the block, allocated again and overwritten what it
// got. The copy must still see the original bytes, whether the event was
// recorded in free() or deferred (a stream that outlives the allocator).
TYPED_TEST_P(HostAllocatorTyped, AFreedBlockIsNotReusedWhileQueuedWorkStillReadsIt) {
  this->expect_queued_read_sees_its_bytes(host_allocator::StreamLife::unknown);
}

TYPED_TEST_P(HostAllocatorTyped, ADeferredBlockIsNotReusedWhileQueuedWorkStillReadsIt) {
  this->expect_queued_read_sees_its_bytes(host_allocator::StreamLife::outlives_allocator);
}

// The backend knows a pool stream outlives it: deferred with no promise.
TYPED_TEST_P(HostAllocatorTyped, ABlockOnAPoolStreamIsNotReusedWhileQueuedWorkStillReadsIt) {
  this->expect_queued_read_sees_its_bytes(host_allocator::StreamLife::unknown, true);
}

// The control: without record_stream the block comes straight back and the
// queued read sees the overwrite, which shows the test above can fail.
TYPED_TEST_P(HostAllocatorTyped, WithoutRecordStreamTheOverwriteIsVisible) {
  constexpr std::size_t kBytes = 1 << 16;
  this->make();
  typename TestFixture::Stream s;
  auto a = this->allocate(kBytes);
  std::memset(a.ptr, 0xAB, kBytes);
  host_allocator::HostAllocation b;
  {
    typename TestFixture::Gate g(s.native());
    typename TestFixture::Read read(s, a.ptr, kBytes);
    this->free(a);
    b = this->allocate(kBytes);
    ASSERT_EQ(b.ptr, a.ptr);
    std::memset(b.ptr, 0xCD, kBytes);
    g.open();
    auto seen = read.bytes();
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 0xCD), static_cast<long>(kBytes));
  }
  this->free(b);
}

// Without our context (none, or a caller's wrapper of it, as PyTorch's
// check_raw_allocation test passes), record_stream finds the block by its
// pointer, as PyTorch does, so a queued read still keeps it from reuse.
// Misuse (no live allocation) throws: tests/unit/host_allocator_test.cpp.
TYPED_TEST_P(HostAllocatorTyped, RecordStreamFindsABlockByPointer) {
  constexpr std::size_t kBytes = 4096;
  this->make("thread_cache:0");
  int wrapper = 0;
  for (void* ctx : {static_cast<void*>(nullptr), static_cast<void*>(&wrapper)}) {
    typename TestFixture::Stream s;
    auto a = this->allocate(kBytes);
    {
      typename TestFixture::Gate g(s.native());
      typename TestFixture::Read read(s, a.ptr, kBytes);
      EXPECT_TRUE(this->allocator->record_stream(a.ptr, ctx, s.id()));
      this->free(a);
      auto b = this->allocate(kBytes);
      EXPECT_NE(b.ptr, a.ptr) << "handed out while the queued read has not run (ctx " << ctx << ")";
      g.open();
      (void)read.bytes();
      this->free(b);
    }
    s.synchronize();
  }
}

TYPED_TEST_P(HostAllocatorTyped, ProcessEventsForOneSizeFreesOnlyThatSize) {
  this->make("thread_cache:0");
  typename TestFixture::Stream s;
  auto small = this->allocate(100);
  auto big = this->allocate(10000);
  {
    typename TestFixture::Gate g(s.native());
    this->record(small, s);
    this->record(big, s);
    this->free(small);
    this->free(big);
    g.open();
    s.synchronize();
  }
  this->allocator->process_events_for_size(10000);
  auto stats = this->stats();
  EXPECT_EQ(stats.pending_events, 1);  // the small block's event is still queued
  EXPECT_EQ(stats.cached_blocks, 1);
}

TYPED_TEST_P(HostAllocatorTyped, EmptyCacheReleasesOnlyFreeBlocks) {
  this->make();
  auto keep = this->allocate(1 << 20);
  auto a = this->allocate(1 << 10);
  auto b = this->allocate(1 << 12);
  this->free(a);
  this->free(b);
  EXPECT_EQ(this->blocks_held(), 3u);
  this->allocator->empty_cache();
  EXPECT_EQ(this->blocks_held(), 1u);
  static_cast<char*>(keep.ptr)[(1 << 20) - 1] = 7;  // still ours
  auto s = this->stats();
  EXPECT_EQ(s.allocations.current, 1);
  EXPECT_EQ(s.allocated_bytes.current, 1 << 20);
  EXPECT_EQ(this->metric("glassbox_host_memory_reserved_bytes"), 1 << 20);
  EXPECT_EQ(this->metric("glassbox_host_memory_cached_bytes"), 0);
  this->free(keep);
}

TYPED_TEST_P(HostAllocatorTyped, EmptyCacheTakesBlocksFromOtherThreadsCaches) {
  this->make();
  std::atomic<bool> freed{false}, done{false};
  std::thread other([&] {
    auto a = this->allocate(512);
    this->free(a);  // lands in this thread's cache
    freed = true;
    while (!done) std::this_thread::yield();
  });
  while (!freed) std::this_thread::yield();
  this->allocator->empty_cache();
  EXPECT_EQ(this->blocks_held(), 0u);
  done = true;
  other.join();
}

TYPED_TEST_P(HostAllocatorTyped, AThreadsCachedBlocksGoBackWhenItExits) {
  this->make();
  void* ptr = nullptr;
  std::thread([&] {
    auto a = this->allocate(777);
    ptr = a.ptr;
    this->free(a);
  }).join();
  auto b = this->allocate(777);  // from the shared list the exiting thread filled
  EXPECT_EQ(b.ptr, ptr);
  EXPECT_EQ(this->blocks_made(), 1u);
  this->free(b);
}

// Each thread queues the events of what it frees on its own shard and polls
// that one first; the others are polled before a new block is made, and by
// process_events(). Four threads free a block each on a stream; once the
// streams are done, this thread's four allocations must reuse all four.
TYPED_TEST_P(HostAllocatorTyped, BlocksOtherThreadsFreedOnStreamsAreReusedBeforeANewOne) {
  this->make();
  constexpr int kThreads = 4;
  std::vector<typename TestFixture::Stream> streams(kThreads);
  this->free_on_threads(streams, {4096});
  std::vector<host_allocator::HostAllocation> again;
  for (int i = 0; i < kThreads; ++i) again.push_back(this->allocate(4096));
  EXPECT_EQ(this->blocks_made(), static_cast<std::size_t>(kThreads)) << "a block was made while one was reusable";
  EXPECT_EQ(this->stats().pending_events, 0);
  for (auto a : again) this->free(a);
}

TYPED_TEST_P(HostAllocatorTyped, ProcessEventsPollsWhatEveryThreadFreed) {
  this->make("thread_cache:0");
  constexpr int kThreads = 4;
  std::vector<typename TestFixture::Stream> streams(kThreads);
  this->free_on_threads(streams, {10000, 100});
  this->allocator->process_events_for_size(10000);
  EXPECT_EQ(this->stats().pending_events, 2 * kThreads - 1) << "one 16 KiB block, wherever it was queued";
  EXPECT_EQ(this->stats().cached_blocks, 1);
  this->allocator->process_events();
  EXPECT_EQ(this->stats().pending_events, 0);
  EXPECT_EQ(this->stats().cached_blocks, 2 * kThreads);
}

// Blocks freed on a stream that outlives the allocator get no event in
// free(): the first allocate() that finds no free block records one for all
// of them, and they come back once their stream passed it, the allocating
// thread's cache refilled from them.
TYPED_TEST_P(HostAllocatorTyped, BlocksOnAStreamThatOutlivesTheAllocatorShareOneEvent) {
  this->expect_blocks_share_one_event(false);
}

TYPED_TEST_P(HostAllocatorTyped, BlocksOnAPoolStreamShareOneEventWithoutAPromise) {
  this->expect_blocks_share_one_event(true);
}

// A thread remembers whether the stream it last recorded on outlives the
// allocator (a pool stream's yes); a record on another stream right after
// asks about that one: a caller's stream, which the caller may destroy
// right after the free, gets its event at the free, not deferred.
TYPED_TEST_P(HostAllocatorTyped, ARecordRightAfterOneOnAPoolStreamAsksAboutItsOwnStream) {
  this->make();
  auto pool = this->make_stream(true);
  typename TestFixture::Stream mine;
  typename TestFixture::Gate g(mine.native());  // busy: its free cannot find it done
  auto a = this->allocate(4096);
  this->record(a, *pool);
  this->free(a);
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 1);
  auto b = this->allocate(4096);
  this->record(b, mine);
  this->free(b);
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 1) << "the caller's stream was taken for a pool stream";
  EXPECT_EQ(this->stats().pending_events, 1);
  g.open();
  mine.synchronize();
  pool->synchronize();
  this->allocator->process_events();
}

// A thread records its open group once it holds a cache's worth of blocks
// (thread_cache), at its next allocate() that finds none cached: one event
// per group, not per free.
TYPED_TEST_P(HostAllocatorTyped, AThreadRecordsItsGroupOnceItHoldsACachesWorth) {
  this->make("thread_cache:4");
  typename TestFixture::Stream s;
  typename TestFixture::Gate g(s.native());
  auto cycle = [&] {
    auto a = this->allocate(4096);
    this->record(a, s, host_allocator::StreamLife::outlives_allocator);
    this->free(a);
  };
  for (int i = 0; i < 4; ++i) cycle();
  EXPECT_EQ(this->metric("glassbox_host_group_events_total"), 0);
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 4);
  cycle();  // its allocate records the four
  EXPECT_EQ(this->metric("glassbox_host_group_events_total"), 1);
  for (int i = 0; i < 3; ++i) cycle();  // the next group grows to 4 blocks
  EXPECT_EQ(this->metric("glassbox_host_group_events_total"), 1);
  cycle();
  EXPECT_EQ(this->metric("glassbox_host_group_events_total"), 2);
  EXPECT_EQ(this->metric("glassbox_host_group_blocks_total"), 8);
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 1);
  EXPECT_EQ(this->blocks_made(), 9u) << "a block was reused before its stream passed its event";
  g.open();
  s.synchronize();
  this->allocator->process_events();  // records the last block's group too
  s.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->stats().pending_events, 0);
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 0);
  EXPECT_EQ(this->stats().cached_blocks, 9);
}

// process_events() records every open group before it polls; a poll on a
// held stream leaves the group pending, a later one frees it.
TYPED_TEST_P(HostAllocatorTyped, ProcessEventsRecordsAndPollsDeferredBlocks) {
  this->make("thread_cache:0");
  typename TestFixture::Stream s;
  std::vector<host_allocator::HostAllocation> held;
  for (int i = 0; i < 4; ++i) held.push_back(this->allocate(4096));
  {
    typename TestFixture::Gate g(s.native());
    for (auto a : held) this->record(a, s, host_allocator::StreamLife::outlives_allocator);
    for (auto a : held) this->free(a);
    this->allocator->process_events();  // records their one event
    EXPECT_EQ(this->stats().pending_events, 1);
    EXPECT_EQ(this->stats().cached_blocks, 0);
  }
  s.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->stats().pending_events, 0);
  EXPECT_EQ(this->stats().cached_blocks, 4);
}

// A deferred block's stream began capturing before the block's event was
// recorded: a record now would be captured into the graph and never
// complete, so none is made until the capture ended; then the block comes
// back, with no failed poll and nothing retired.
TYPED_TEST_P(HostAllocatorTyped, ADeferredRecordWaitsForTheCaptureToEnd) {
  using T = TypeParam;
  this->make("thread_cache:0");
  typename TestFixture::Stream s;
  auto a = this->allocate(4096);
  this->record(a, s, host_allocator::StreamLife::outlives_allocator);
  this->free(a);
  T::begin_capture(s);
  auto b = this->allocate(4096);  // no free block; s captures: no record
  EXPECT_NE(b.ptr, a.ptr);
  this->allocator->process_events();
  EXPECT_EQ(this->stats().pending_events, 0) << "an event was recorded on a capturing stream";
  EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 1);
  T::end_capture(s);
  this->allocator->process_events();  // records it now
  s.synchronize();
  this->allocator->process_events();
  auto c = this->allocate(4096);
  EXPECT_EQ(c.ptr, a.ptr);
  EXPECT_EQ(this->metric("glassbox_host_event_errors_total"), 0);
  EXPECT_EQ(this->metric("glassbox_host_blocks_unrecyclable_total"), 0);
  this->free(b);
  this->free(c);
}

// Without the promise a caller may destroy its stream right after free():
// the event was recorded in free(), and nothing touches the stream after.
TYPED_TEST_P(HostAllocatorTyped, StreamsDestroyedRightAfterFreeAreNotRecordedOnLater) {
  constexpr int kStreams = 8;
  this->make();
  std::vector<host_allocator::HostAllocation> held;
  for (int i = 0; i < kStreams; ++i) held.push_back(this->allocate(4096));
  std::set<void*> freed;
  for (auto a : held) {
    auto s = std::make_unique<typename TestFixture::Stream>();
    this->record(a, *s);
    this->free(a);
    freed.insert(a.ptr);
    s->synchronize();
  }  // each stream destroyed right after its free
  std::vector<host_allocator::HostAllocation> again;
  for (int i = 0; i < kStreams; ++i) again.push_back(this->allocate(4096));
  for (auto a : again) EXPECT_EQ(freed.count(a.ptr), 1u);
  EXPECT_EQ(this->metric("glassbox_host_event_errors_total"), 0);
  EXPECT_EQ(this->metric("glassbox_host_blocks_unrecyclable_total"), 0);
  for (auto a : again) this->free(a);
}

// A free on a stream that has run everything queued on it needs no event:
// the block is free at once, and the next allocate of its size takes it.
TYPED_TEST_P(HostAllocatorTyped, AFreeOnAStreamThatRanEverythingNeedsNoEvent) {
  this->make();
  typename TestFixture::Stream s;
  auto a = this->allocate(4096);
  this->record(a, s);
  s.synchronize();
  this->free(a);
  EXPECT_EQ(this->stats().pending_events, 0);
  EXPECT_EQ(this->metric("glassbox_host_stream_queries_total", {{"outcome", "done"}}), 1);
  auto again = this->allocate(4096);
  EXPECT_EQ(again.ptr, a.ptr);
  EXPECT_EQ(this->blocks_made(), 1u);
  this->free(again);
}

// A thread counts its done answers in its own cache, summed at scrape; at
// its exit the count moves to the allocator: read while the thread lives
// and after, each answer counts once.
TYPED_TEST_P(HostAllocatorTyped, DoneQueriesCountedByAThreadOutliveIt) {
  this->make();
  typename TestFixture::Stream s;
  auto done = [&] { return this->metric("glassbox_host_stream_queries_total", {{"outcome", "done"}}); };
  std::int64_t while_alive = -1;
  std::thread([&] {
    for (int i = 0; i < 3; ++i) {
      auto a = this->allocate(4096);
      this->record(a, s);
      s.synchronize();
      this->free(a);
    }
    while_alive = done();
  }).join();
  EXPECT_EQ(while_alive, 3);
  EXPECT_EQ(done(), 3) << "lost or counted again at the thread's exit";
  EXPECT_EQ(done(), 3);
}

// A stream found busy gets an event, and the thread's next frees on it do
// not ask again (1, then 3, ... 63 of them): a caller that frees right
// behind its copies pays for few queries. One found done is asked again.
TYPED_TEST_P(HostAllocatorTyped, AStreamFoundBusyIsNotAskedAgainForAWhile) {
  this->make("thread_cache:0");
  typename TestFixture::Stream s;
  auto busy = [&] { return this->metric("glassbox_host_stream_queries_total", {{"outcome", "busy"}}); };
  auto free_on_s = [&] {
    auto a = this->allocate(4096);
    this->record(a, s);
    this->free(a);
    return a.ptr;
  };
  {
    typename TestFixture::Gate g(s.native());
    const void* first = free_on_s();
    EXPECT_EQ(busy(), 1);
    EXPECT_EQ(this->stats().pending_events, 1);
    EXPECT_NE(free_on_s(), first) << "handed out before its stream passed its event";
    EXPECT_EQ(busy(), 1) << "asked again right after a busy answer";
    free_on_s();
    EXPECT_EQ(busy(), 2);
    EXPECT_EQ(this->stats().pending_events, 3);
    g.open();
  }
  s.synchronize();
  for (int i = 0; i < 3; ++i) free_on_s();  // the 3 the second busy answer skips: events
  EXPECT_EQ(busy(), 2);
  free_on_s();
  EXPECT_EQ(this->metric("glassbox_host_stream_queries_total", {{"outcome", "done"}}), 1);
}

// Events one thread recorded in free() on one stream share a query: the
// probe, an event with one younger in front of it, completed, so every
// older one did (stream order), and their blocks come back with it.
// (Without the idle-stream check: its stream has run everything by each free.)
TYPED_TEST_P(HostAllocatorTyped, EventsOneThreadRecordedOnAStreamShareAQuery) {
  constexpr int kBlocks = 8;
  this->make("idle_stream_check:false");
  typename TestFixture::Stream s;
  std::vector<host_allocator::HostAllocation> first;
  std::set<void*> firsts;
  for (int i = 0; i < kBlocks; ++i) first.push_back(this->allocate(4096));
  for (auto a : first) {
    this->record(a, s);
    firsts.insert(a.ptr);
  }
  for (auto a : first) this->free(a);
  EXPECT_EQ(this->stats().pending_events, kBlocks);
  s.synchronize();
  auto again = this->allocate(4096);  // one query: the probe (the seventh), covering the six before it
  EXPECT_EQ(firsts.count(again.ptr), 1u);
  EXPECT_EQ(this->metric("glassbox_host_covered_events_total"), kBlocks - 2);
  EXPECT_EQ(this->stats().pending_events, 1);  // the newest, in front of the probe
  EXPECT_EQ(this->stats().cached_blocks, kBlocks - 2);
  EXPECT_EQ(this->blocks_made(), static_cast<std::size_t>(kBlocks));
  this->free(again);
}

// A probe that completed says nothing of another stream's events, even
// those recorded before it: they wait for their own stream. (Without the
// idle-stream check: the running stream has run everything by each free.)
TYPED_TEST_P(HostAllocatorTyped, AProbeReleasesNoEventOfAnotherStream) {
  constexpr int kPairs = 4;
  this->make("idle_stream_check:false");
  typename TestFixture::Stream running, held;
  std::set<void*> on_held;
  {
    typename TestFixture::Gate g(held.native());
    std::vector<host_allocator::HostAllocation> r, h;
    for (int i = 0; i < kPairs; ++i) r.push_back(this->allocate(4096)), h.push_back(this->allocate(4096));
    for (int i = 0; i < kPairs; ++i) {  // recorded alternately: r0 h0 r1 h1 ...
      this->record(r[i], running);
      this->record(h[i], held);
      this->free(r[i]);
      this->free(h[i]);
      on_held.insert(h[i].ptr);
    }
    running.synchronize();
    std::vector<host_allocator::HostAllocation> taken;
    for (int i = 0; i < 3 * kPairs; ++i) taken.push_back(this->allocate(4096));
    for (auto a : taken) EXPECT_EQ(on_held.count(a.ptr), 0u) << "handed out before its stream passed its event";
    EXPECT_GE(this->metric("glassbox_host_covered_events_total"), 1) << "no probe covered the running stream's events";
    // The held stream's four, and the running stream's newest: in front of
    // the probe, and behind the held stream's oldest, where the walk stops.
    EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "pending_event"}}), kPairs + 1);
    for (auto a : taken) this->free(a);
    g.open();
  }
  held.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "pending_event"}}), 0);
}

// Nor of another thread's on the same stream: two threads' records are in
// no known order (each thread counts its own). Threads are given one of 16
// event shards in turn (BlockPool::kEventShards), so the seventeenth thread
// from here shares the first's queue. (Without the idle-stream check: the
// first thread's stream has run everything by its frees.)
TYPED_TEST_P(HostAllocatorTyped, AProbeReleasesNoEventAnotherThreadRecorded) {
  this->make("thread_cache:0,idle_stream_check:false");
  typename TestFixture::Stream s;
  auto on_thread = [](auto fn) { std::thread(fn).join(); };
  // Made first: no allocate() from here on finds no free block and polls
  // the first thread's shard before the test does.
  auto late = this->allocate(4096);
  this->free(this->allocate(64));
  on_thread([&] {  // three events, the thread's first three records
    std::vector<host_allocator::HostAllocation> held;
    for (int i = 0; i < 3; ++i) held.push_back(this->allocate(4096));
    for (auto a : held) this->record(a, s);
    for (auto a : held) this->free(a);
  });
  s.synchronize();
  constexpr int kEventShards = 16;
  for (int i = 1; i < kEventShards; ++i) {
    on_thread([&] { this->free(this->allocate(64)); });  // takes the next shard (and the free block)
  }
  typename TestFixture::Gate g(s.native());
  on_thread([&] {  // its first record, behind the gate, in the first thread's shard
    this->record(late, s);
    this->free(late);
  });
  this->allocator->process_events();  // the first thread's shard: a probe of its second event, then the third
  EXPECT_EQ(this->metric("glassbox_host_covered_events_total"), 1);
  EXPECT_EQ(this->stats().pending_events, 1) << "the later thread's event was released with the first's";
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "pending_event"}}), 1);
  g.open();
  s.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->stats().pending_events, 0);
}

// Each stream has its own group: an event on one stream says nothing of the
// work queued on another.
TYPED_TEST_P(HostAllocatorTyped, DeferredBlocksWaitForTheirOwnStreamsEvent) {
  this->make("thread_cache:0");
  typename TestFixture::Stream held, running;
  auto x = this->allocate(4096);
  auto y = this->allocate(4096);
  {
    typename TestFixture::Gate g(held.native());
    this->record(x, held, host_allocator::StreamLife::outlives_allocator);
    this->record(y, running, host_allocator::StreamLife::outlives_allocator);
    // y first: its stream's event is the older one, polled first (a poll
    // stops at the first event not complete, as the seed's).
    this->free(y);
    this->free(x);
    this->allocator->process_events();  // one event on each stream
    EXPECT_GE(this->stats().pending_events, 1);
    running.synchronize();
    this->allocator->process_events();
    EXPECT_EQ(this->stats().cached_blocks, 1);
    auto z = this->allocate(4096);
    EXPECT_EQ(z.ptr, y.ptr) << "the block on the held stream came back before its stream passed its event";
    this->free(z);
  }
  held.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->stats().cached_blocks, 2);
}

// The thread found the block by its context once (and remembers it); after
// empty_cache() returned it to the system, the same context names no block.
TYPED_TEST_P(HostAllocatorTyped, ARecordOnABlockReturnedToTheSystemFindsNothing) {
  this->make();
  typename TestFixture::Stream s;
  auto a = this->allocate(4096);
  this->record(a, s);
  this->free(a);
  s.synchronize();
  this->allocator->process_events();
  this->allocator->empty_cache();
  ASSERT_EQ(this->stats().allocations.current, 0);
  EXPECT_EQ(this->allocator->try_record_stream(a.ptr, a.ctx, s.id()),
            host_allocator::CachingHostAllocator::RecordOutcome::unknown_memory);
}

// A block used on two streams is not deferred (a block is in one group at
// a time), even when both were promised: its events are recorded in free().
TYPED_TEST_P(HostAllocatorTyped, ABlockOnTwoStreamsGetsItsEventsInFree) {
  this->make();
  typename TestFixture::Stream s1, s2;
  auto a = this->allocate(4096);
  this->record(a, s1, host_allocator::StreamLife::outlives_allocator);
  this->record(a, s2, host_allocator::StreamLife::outlives_allocator);
  {
    typename TestFixture::Gate g(s1.native());
    this->free(a);
    EXPECT_EQ(this->stats().pending_events, 2);
    EXPECT_EQ(this->metric("glassbox_host_deferred_blocks"), 0);
  }
  s1.synchronize();
  s2.synchronize();
  this->allocator->process_events();
  EXPECT_EQ(this->stats().cached_blocks, 1);
}

TYPED_TEST_P(HostAllocatorTyped, CapturePoolsAreKeptApartFromTheDefaultPool) {
  using T = TypeParam;
  this->make();
  typename TestFixture::Stream capture, other;
  const host_allocator::PoolId pool{1, 0};
  auto def = this->allocate(256);
  this->free(def);  // a cached default-pool block of the size

  T::begin_capture(capture);
  this->allocator->begin_allocate_to_pool(pool, [&](host_allocator::StreamId s) { return s == capture.id(); });
  host_allocator::HostAllocation in_pool;
  {
    auto g = T::make_current(capture);
    in_pool = this->allocate(256);
  }
  EXPECT_NE(in_pool.ptr, def.ptr);  // not from the default pool
  {
    auto g = T::make_current(other);  // the filter says no: the default pool
    auto d = this->allocate(256);
    EXPECT_EQ(d.ptr, def.ptr);
    this->free(d);
  }
  this->free(in_pool);  // back to the private pool, not the default one
  this->allocator->end_allocate_to_pool(pool);
  T::end_capture(capture);
  auto d2 = this->allocate(256);
  EXPECT_EQ(d2.ptr, def.ptr);
  this->free(d2);

  EXPECT_THROW(this->allocator->end_allocate_to_pool(pool), glassbox::Error);
  this->allocator->release_pool(pool);
  this->allocator->empty_cache();
  EXPECT_EQ(this->blocks_held(), 0u);  // the private pool emptied and gone
  EXPECT_THROW(this->allocator->release_pool(pool), glassbox::Error);
}

// A block used during capture may be read by every replay of the graph, so
// no event says when it is free again: it never comes back, during the
// capture or after it (on CUDA the graph, whose copy reads the block, is
// launched when the capture ends), while an unused one does.
TYPED_TEST_P(HostAllocatorTyped, ABlockUsedDuringCaptureIsNeverRecycled) {
  using T = TypeParam;
  this->make();
  typename TestFixture::Stream capture;
  const host_allocator::PoolId pool{2, 0};
  auto to_pool = [&](host_allocator::StreamId s) { return s == capture.id(); };
  T::begin_capture(capture);
  this->allocator->begin_allocate_to_pool(pool, to_pool);
  host_allocator::HostAllocation used, unused;
  {
    auto g = T::make_current(capture);
    used = this->allocate(128);
    unused = this->allocate(128);
  }
  T::read_during_capture(capture, used.ptr, 128);
  this->record(used, capture);
  this->free(used);
  this->free(unused);
  EXPECT_EQ(this->stats().pending_events, 0);  // nothing recorded during capture
  if (auto live = T::live_events(*this->backend)) {
    EXPECT_EQ(*live, 0u);
  }
  {
    auto g = T::make_current(capture);
    auto again = this->allocate(128);
    EXPECT_EQ(again.ptr, unused.ptr);  // the unused one is reusable
    auto third = this->allocate(128);
    EXPECT_NE(third.ptr, used.ptr);  // the used one never comes back
    this->free(again);
    this->free(third);
  }
  EXPECT_EQ(this->metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "captured"}}), 1);
  this->allocator->end_allocate_to_pool(pool);
  T::end_capture(capture);

  this->allocator->begin_allocate_to_pool(pool, to_pool);  // the pool again, outside capture (warns once)
  {
    auto g = T::make_current(capture);
    std::set<void*> later;
    std::vector<host_allocator::HostAllocation> held;
    for (int i = 0; i < 3; ++i) held.push_back(this->allocate(128));
    for (auto h : held) later.insert(h.ptr);
    EXPECT_EQ(later.count(used.ptr), 0u) << "a block a graph may replay was handed out again";
    for (auto h : held) this->free(h);
  }
  this->allocator->end_allocate_to_pool(pool);
  this->allocator->release_pool(pool);
  this->allocator->release_pool(pool);
}

TYPED_TEST_P(HostAllocatorTyped, AllocatingToAPrivatePoolOutsideCaptureWarnsOnce) {
  using T = TypeParam;
  this->make();
  typename TestFixture::Stream s;  // not capturing
  this->allocator->begin_allocate_to_pool({3, 0}, [](host_allocator::StreamId) { return true; });
  {
    auto g = T::make_current(s);
    this->free(this->allocate(10));
    this->free(this->allocate(10));
  }
  ASSERT_EQ(this->warnings.size(), 1u);
  EXPECT_NE(this->warnings[0].find("private pool (3,0)"), std::string::npos) << this->warnings[0];
  EXPECT_THROW(this->allocator->begin_allocate_to_pool({3, 0}, [](host_allocator::StreamId) { return true; }),
               glassbox::Error);
  this->allocator->end_allocate_to_pool({3, 0});
}

TYPED_TEST_P(HostAllocatorTyped, ABackgroundThreadProcessesEvents) {
  this->make("background_thread:true,thread_cache:0");
  typename TestFixture::Stream s;
  auto a = this->allocate(100);
  this->free(this->allocate(8));  // a miss starts the thread
  {
    typename TestFixture::Gate g(s.native());
    this->record(a, s);
    this->free(a);
    g.open();
    s.synchronize();
  }
  for (int i = 0; i < 2000 && this->stats().pending_events > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(this->stats().pending_events, 0);
  auto b = this->allocate(100);
  EXPECT_EQ(b.ptr, a.ptr);
  this->free(b);
}

TYPED_TEST_P(HostAllocatorTyped, MaxCachedBytesTrimsTheLeastRecentlyFreed) {
  this->make("max_cached_bytes:2KiB,thread_cache:0");
  auto a = this->allocate(1024), b = this->allocate(1024), c = this->allocate(1024);
  this->free(a);
  this->free(b);
  EXPECT_EQ(this->blocks_held(), 3u);
  this->free(c);  // 3 KiB cached > 2 KiB: the trim waits for the next poll, not in free()
  EXPECT_EQ(this->blocks_held(), 3u);
  this->allocator->process_events();  // `a` (the oldest) goes
  EXPECT_EQ(this->blocks_held(), 2u);
  EXPECT_EQ(this->stats().cached_bytes, 2048);
  std::set<void*> left{this->allocate(1024).ptr, this->allocate(1024).ptr};
  EXPECT_EQ(left, (std::set<void*>{b.ptr, c.ptr}));
}

// An allocate()'s poll stops at the first block of its size to become free
// and hands it over without a trip through the free list; the younger
// events wait for the next poll.
TYPED_TEST_P(HostAllocatorTyped, APollHandsTheFirstFreedBlockOfTheSizeToItsAllocate) {
  this->make("thread_cache:0");
  typename TestFixture::Stream s;
  auto x = this->allocate(512), a = this->allocate(1024), b = this->allocate(1024);
  {
    typename TestFixture::Gate g(s.native());
    for (auto h : {x, a, b}) {
      this->record(h, s);
      this->free(h);
    }
    g.open();
    s.synchronize();
  }
  auto got = this->allocate(1024);  // polls: x, then a become free
  EXPECT_EQ(got.ptr, a.ptr);
  auto st = this->stats();
  EXPECT_EQ(st.pending_events, 1) << "b's event is polled by the next allocate()";
  EXPECT_EQ(st.cached_blocks, 1);
  EXPECT_EQ(st.cached_bytes, 512);
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"bucket", "10"}, {"state", "active"}}), 1);
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"bucket", "10"}, {"state", "pending_event"}}), 1);
  EXPECT_EQ(this->metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "10"}}), 1);
  EXPECT_EQ(this->allocate(1024).ptr, b.ptr);
  EXPECT_EQ(this->stats().pending_events, 0);
  EXPECT_EQ(this->allocate(512).ptr, x.ptr);
}

// Series are computed at scrape time from each allocator's own counts: two
// allocators on one registry add up, and one that goes takes its cached
// bytes along while the per-bucket series keep their last values.
TYPED_TEST_P(HostAllocatorTyped, AllocatorsSharingARegistryAddUpInItsSeries) {
  this->make();
  host_allocator::HostAllocatorOptions o;
  o.config = host_allocator::HostAllocatorConfig::parse("");
  o.registry = &this->registry;
  auto other = std::make_unique<host_allocator::CachingHostAllocator>(this->backend, o);
  auto held = this->allocate(3000);
  this->free(this->allocate(3000));
  other->free(other->allocate(4000).ctx);
  auto other_held = other->allocate(4096);
  EXPECT_EQ(this->metric("glassbox_host_alloc_requests_total", {{"bucket", "12"}}), 4);
  EXPECT_EQ(this->metric("glassbox_host_alloc_cache_hits_total", {{"bucket", "12"}}), 1);
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "active"}}), 2);
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "free"}}), 1);
  EXPECT_EQ(this->metric("glassbox_host_memory_active_bytes"), 2 * 4096);
  EXPECT_EQ(this->metric("glassbox_host_memory_cached_bytes"), 4096);
  EXPECT_EQ(this->metric("glassbox_host_rounded_bytes_total"), 4 * 4096);
  other->free(other_held.ctx);
  other.reset();
  EXPECT_EQ(this->metric("glassbox_host_memory_cached_bytes"), 4096);  // this allocator's free block only
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "free"}}), 2);
  this->free(held);
  EXPECT_EQ(this->metric("glassbox_host_blocks", {{"state", "free"}}), 3);
  EXPECT_EQ(this->metric("glassbox_host_memory_cached_bytes"), 2 * 4096);
}

TYPED_TEST_P(HostAllocatorTyped, StatsCountRequestsHitsAndBlocks) { this->expect_stats_count("thread_cache:0"); }

// The same with thread caches, the default: a block in a cache is free, and
// the peaks say so exactly.
TYPED_TEST_P(HostAllocatorTyped, StatsCountRequestsHitsAndBlocksWithThreadCaches) { this->expect_stats_count(""); }

// Blocks sitting in one thread's cache are not handed out: the class's peak
// counts only blocks held by users, while another thread makes a new block
// and the first takes its cached ones back.
TYPED_TEST_P(HostAllocatorTyped, ThePeakCountsOnlyHandedOutBlocksWithThreadCaches) {
  this->make();
  auto a = this->allocate(3000);
  auto b = this->allocate(3000);
  this->free(a);
  this->free(b);  // both in this thread's cache: none handed out, peak 2
  host_allocator::HostAllocation c;
  std::thread([&] { c = this->allocate(3000); }).join();  // a third block, in the other thread
  auto peak = [&] { return this->stats().classes.at(0).active_requests.peak; };
  EXPECT_EQ(this->stats().classes.at(0).active_requests.current, 1);
  EXPECT_EQ(peak(), 2);
  EXPECT_EQ(this->stats().classes.at(0).active_bytes.peak, 2 * 4096);
  auto d = this->allocate(3000);  // from the cache: 2 handed out
  EXPECT_EQ(peak(), 2);
  auto e = this->allocate(3000);  // 3: a new peak
  EXPECT_EQ(peak(), 3);
  for (auto h : {c, d, e}) this->free(h);
  this->allocator->reset_peak_stats();
  EXPECT_EQ(peak(), 0);
  auto f = this->allocate(3000);
  EXPECT_EQ(peak(), 1);
  this->free(f);
}

// A record_stream racing the free of its block, from another thread: the
// record either lands first, and the block waits for the stream's event, or
// loses and throws UsageError, counted. Never does it return true while the
// block comes straight back (a lost record).
TYPED_TEST_P(HostAllocatorTyped, ARecordStreamRacingAFreeIsNeverLost) {
  this->make();
  typename TestFixture::Stream s;
  constexpr int kRounds = 3000;
  int recorded = 0, refused = 0, lost = 0;
  {
    typename TestFixture::Gate g(s.native());
    RacingCall recorder(kRounds,
                        [&](void* ptr, void* ctx) { return this->allocator->record_stream(ptr, ctx, s.id()); });
    for (int i = 0; i < kRounds; ++i) {
      auto a = this->allocate(4096);
      recorder.go(i, a.ptr, a.ctx);  // the free below races the record
      this->free(a);
      const bool taken = recorder.taken(i);
      auto next = this->allocate(4096);
      if (!taken) {
        ++refused;
      } else if (next.ptr == a.ptr) {
        ++lost;
      } else {
        ++recorded;
      }
      this->free(next);
    }
    g.open();
    s.synchronize();
  }
  EXPECT_EQ(lost, 0) << recorded << " records landed, " << refused << " were refused";
  EXPECT_EQ(this->metric("glassbox_host_usage_errors_total", {{"error", "record_stream_after_free"}}), refused);
}

REGISTER_TYPED_TEST_SUITE_P(
    HostAllocatorTyped, ZeroBytesGivesNull, ABlockUsedOnNoStreamIsReusedAtOnce,
    ABlockIsNotReusedBeforeEveryStreamPassedItsEvent, AFreedBlockIsNotReusedWhileQueuedWorkStillReadsIt,
    ADeferredBlockIsNotReusedWhileQueuedWorkStillReadsIt, ABlockOnAPoolStreamIsNotReusedWhileQueuedWorkStillReadsIt,
    BlocksOnAStreamThatOutlivesTheAllocatorShareOneEvent, BlocksOnAPoolStreamShareOneEventWithoutAPromise,
    ARecordRightAfterOneOnAPoolStreamAsksAboutItsOwnStream, AThreadRecordsItsGroupOnceItHoldsACachesWorth,
    ProcessEventsRecordsAndPollsDeferredBlocks, ADeferredRecordWaitsForTheCaptureToEnd,
    StreamsDestroyedRightAfterFreeAreNotRecordedOnLater, AFreeOnAStreamThatRanEverythingNeedsNoEvent,
    DoneQueriesCountedByAThreadOutliveIt, AStreamFoundBusyIsNotAskedAgainForAWhile,
    EventsOneThreadRecordedOnAStreamShareAQuery, AProbeReleasesNoEventOfAnotherStream,
    AProbeReleasesNoEventAnotherThreadRecorded, DeferredBlocksWaitForTheirOwnStreamsEvent,
    ARecordOnABlockReturnedToTheSystemFindsNothing, ABlockOnTwoStreamsGetsItsEventsInFree,
    WithoutRecordStreamTheOverwriteIsVisible, RecordStreamFindsABlockByPointer,
    ProcessEventsForOneSizeFreesOnlyThatSize, EmptyCacheReleasesOnlyFreeBlocks,
    EmptyCacheTakesBlocksFromOtherThreadsCaches, AThreadsCachedBlocksGoBackWhenItExits,
    BlocksOtherThreadsFreedOnStreamsAreReusedBeforeANewOne, ProcessEventsPollsWhatEveryThreadFreed,
    CapturePoolsAreKeptApartFromTheDefaultPool, ABlockUsedDuringCaptureIsNeverRecycled,
    AllocatingToAPrivatePoolOutsideCaptureWarnsOnce, ABackgroundThreadProcessesEvents,
    MaxCachedBytesTrimsTheLeastRecentlyFreed, APollHandsTheFirstFreedBlockOfTheSizeToItsAllocate,
    AllocatorsSharingARegistryAddUpInItsSeries, StatsCountRequestsHitsAndBlocks,
    StatsCountRequestsHitsAndBlocksWithThreadCaches, ThePeakCountsOnlyHandedOutBlocksWithThreadCaches,
    ARecordStreamRacingAFreeIsNeverLost);

}  // namespace glassbox::testing
