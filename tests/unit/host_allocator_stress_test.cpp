// 16 threads allocating, using on streams, and freeing at once (also blocks
// allocated on one thread and freed on another). Run under ThreadSanitizer by
// scripts/sanitize tsan. Totals must come out exact.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/detail/biased_lock.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "racing_call.hpp"

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;

namespace {

void stress(const char* conf) {
  constexpr int kThreads = 16, kOps = 3000;
  gm::Registry registry;
  auto backend = std::make_shared<gha::SimHostBackend>();
  gha::HostAllocatorOptions o;
  o.config = gha::HostAllocatorConfig::parse(conf);
  o.registry = &registry;
  gha::CachingHostAllocator allocator(backend, o);
  std::array<gs::SimStream, 4> streams{
      gs::SimStream(gs::SimStream::Mode::worker), gs::SimStream(gs::SimStream::Mode::worker),
      gs::SimStream(gs::SimStream::Mode::worker), gs::SimStream(gs::SimStream::Mode::worker)};
  std::mutex handoff_mu;
  std::vector<gha::HostAllocation> handoff;  // allocated by one thread, freed by another
  std::atomic<std::int64_t> requests{0};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<gha::HostAllocation> mine;
      start.arrive_and_wait();
      for (int i = 0; i < kOps; ++i) {
        auto a = allocator.allocate(std::size_t{64} << (rng() % 6));
        ++requests;
        static_cast<char*>(a.ptr)[0] = static_cast<char>(t);  // the memory is really ours
        if (rng() % 3 == 0) {
          auto& s = streams[rng() % streams.size()];
          s.enqueue([] {});
          allocator.record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(s));
        }
        if (rng() % 5 == 0) {
          std::lock_guard lock(handoff_mu);
          handoff.push_back(a);
        } else {
          mine.push_back(a);
        }
        if (mine.size() > 4) {
          allocator.free(mine.front().ctx);
          mine.erase(mine.begin());
        }
        std::lock_guard lock(handoff_mu);
        if (!handoff.empty() && rng() % 2 == 0) {
          allocator.free(handoff.back().ctx);
          handoff.pop_back();
        }
      }
      for (auto& a : mine) allocator.free(a.ctx);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& a : handoff) allocator.free(a.ctx);
  for (auto& s : streams) s.synchronize();
  // A background thread may hold an event it popped; give it a moment.
  for (int i = 0; i < 1000 && allocator.stats().pending_events + allocator.stats().active_requests.current > 0; ++i) {
    allocator.process_events();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  auto st = allocator.stats();
  std::int64_t counted = 0, active = 0;
  for (auto& c : st.classes) {
    counted += c.requests;
    active += c.active_requests.current;
  }
  EXPECT_EQ(counted, requests.load());
  EXPECT_EQ(active, 0);
  EXPECT_EQ(st.pending_events, 0);
  EXPECT_EQ(static_cast<std::size_t>(st.allocations.current), backend->live_blocks());
  EXPECT_EQ(st.cached_blocks, st.allocations.current);
  allocator.empty_cache();
  EXPECT_EQ(backend->live_blocks(), 0u);
  EXPECT_EQ(backend->live_events(), 0u);
  auto snap = registry.snapshot();
  EXPECT_EQ(gm::find_series(snap, "glassbox_host_memory_reserved_bytes")->value, 0);
  EXPECT_EQ(gm::find_series(snap, "glassbox_host_pending_events")->value, 0);
}

// Owners run allocate/free pairs out of their own caches while another thread
// keeps reaching into those caches (empty_cache, stats). A block handed to two
// threads at once shows as a stamp overwritten under its owner.
void drain_while_owners_run() {
  constexpr int kThreads = 8, kPairs = 20000;
  gm::Registry registry;
  auto backend = std::make_shared<gha::SimHostBackend>();
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  gha::CachingHostAllocator allocator(backend, o);
  std::atomic<int> running{kThreads};
  std::atomic<std::int64_t> clashes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPairs; ++i) {
        auto a = allocator.allocate(std::size_t{256} << (i % 3));
        auto* stamp = static_cast<std::atomic<std::uint64_t>*>(a.ptr);
        const std::uint64_t mine = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint32_t>(i);
        stamp->store(mine, std::memory_order_relaxed);
        if (i % 64 == 0) std::this_thread::yield();  // widen the window now and then
        if (stamp->load(std::memory_order_relaxed) != mine) ++clashes;
        allocator.free(a.ctx);
      }
      --running;
    });
  }
  int drains = 0;
  while (running > 0) {
    allocator.empty_cache();
    (void)allocator.stats();
    ++drains;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clashes.load(), 0);
  EXPECT_GT(drains, 0);
  auto st = allocator.stats();
  EXPECT_EQ(st.active_requests.current, 0);
  std::int64_t requests = 0;
  for (auto& c : st.classes) requests += c.requests;
  EXPECT_EQ(requests, std::int64_t{kThreads} * kPairs);
  allocator.empty_cache();
  EXPECT_EQ(backend->live_blocks(), 0u);
}

// One round of a race with the first foreign use of a fresh allocator (no
// such use has switched its record_mode yet): a block of it goes to `racer`
// for round i, then, after a random spin that sweeps it across the racer's
// switch (a heavy fence: microseconds), the test thread's own call on it,
// own(allocator, block).
template <class Own>
void first_foreign_use_round(int i, glassbox::testing::RacingCall& racer,
                             std::atomic<gha::CachingHostAllocator*>& shared, std::mt19937& rng,
                             const gha::HostAllocatorOptions& o, Own own) {
  gha::CachingHostAllocator allocator(std::make_shared<gha::SimHostBackend>(), o);
  auto a = allocator.allocate(4096);
  shared = &allocator;
  racer.go(i, a.ptr, a.ctx);
  for (auto spin = rng() % 200000; spin > 0; --spin) std::atomic_signal_fence(std::memory_order_seq_cst);
  own(allocator, a);
}

}  // namespace

// Until some thread records on a block another thread allocated, an owner's
// free settles the race with record_stream by plain loads and stores; that
// first foreign record switches every free to an exchange, with one heavy
// fence that must order the owners' frees already in flight. Here the first
// foreign record of a fresh allocator races its block's free by the owner,
// round after round: it lands (the block waits for its event) or is refused,
// never lost. Also run without membarrier (HostAllocatorStress.WithoutMembarrier).
TEST(HostAllocatorStress, TheFirstForeignRecordRacingItsOwnersFreeIsNeverLost) {
  constexpr int kRounds = 3000;
  gs::SimStream stream;  // manual: an event recorded on it never completes here
  stream.enqueue([] {});
  std::atomic<gha::CachingHostAllocator*> shared{nullptr};
  glassbox::testing::RacingCall recorder(kRounds, [&](void* ptr, void* ctx) {
    return shared.load()->record_stream(ptr, ctx, gha::SimHostBackend::id(stream));
  });
  std::mt19937 rng(7);
  int lost = 0, refused = 0;
  gm::Registry registry;  // one for all: metric cells are a process-wide arena
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  for (int i = 0; i < kRounds; ++i) {
    first_foreign_use_round(i, recorder, shared, rng, o, [&](gha::CachingHostAllocator& allocator, auto a) {
      allocator.free(a.ctx);
      const bool recorded = recorder.taken(i);
      auto next = allocator.allocate(4096);
      if (!recorded) ++refused;
      if (recorded && next.ptr == a.ptr) ++lost;
      allocator.free(next.ctx);
    });
  }
  EXPECT_EQ(lost, 0) << refused << " of " << kRounds << " records were refused";
  // Both outcomes happened: the free and the switch did overlap.
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, kRounds);
}

// The other side: until some thread frees or records on a block another
// thread allocated, an owner records on its own block under its cache's
// lock with plain stores (record_own); the first foreign free switches
// that off for good, and must wait out an owner's record in flight. Here
// the first foreign free of a fresh allocator races the owner's record on
// that block, round after round: the record lands (the free then leaves
// the block waiting on its stream's event) or is refused, never lost.
TEST(HostAllocatorStress, TheFirstForeignFreeRacingItsOwnersRecordIsNeverLost) {
  constexpr int kRounds = 3000;
  gs::SimStream stream;  // manual: an event recorded on it never completes here
  stream.enqueue([] {});
  // Before the freeing thread: its exit may end the last allocator, whose
  // cache it holds, after this test's body.
  gm::Registry registry;
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  std::atomic<gha::CachingHostAllocator*> shared{nullptr};
  glassbox::testing::RacingCall freer(kRounds, [&](void*, void* ctx) {
    shared.load()->free(ctx);
    return true;
  });
  std::mt19937 rng(11);
  int lost = 0, refused = 0, phantom = 0;
  for (int i = 0; i < kRounds; ++i) {
    first_foreign_use_round(i, freer, shared, rng, o, [&](gha::CachingHostAllocator& allocator, auto a) {
      const auto outcome = allocator.try_record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(stream));
      (void)freer.taken(i);
      // The freed block sits in the freeing thread's cache, unless its free
      // saw the record: then it waits on an event of the stream.
      const bool waits = allocator.stats().pending_events > 0;
      if (outcome == gha::CachingHostAllocator::RecordOutcome::recorded) {
        lost += waits ? 0 : 1;
      } else {
        ++refused;
        phantom += waits ? 1 : 0;
      }
    });
  }
  EXPECT_EQ(lost, 0) << refused << " of " << kRounds << " records were refused";
  EXPECT_EQ(phantom, 0);
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, kRounds);
}

TEST(HostAllocatorStress, CachesDrainedWhileTheirOwnersRun) { drain_while_owners_run(); }
TEST(HostAllocatorStress, SixteenThreadsWithThreadCaches) { stress(""); }
TEST(HostAllocatorStress, SixteenThreadsSharedListsOnly) { stress("thread_cache:0"); }
TEST(HostAllocatorStress, SixteenThreadsWithABackgroundThread) { stress("background_thread:true"); }

// ctest runs this binary twice: as is, and with GLASSBOX_NO_MEMBARRIER=1, so
// the stress tests above cover both sides of the thread caches' lock.
TEST(BiasedLock, UsesMembarrierUnlessTurnedOff) {
  namespace d = gha::detail;
  const char* off = std::getenv("GLASSBOX_NO_MEMBARRIER");
  const bool turned_off = off != nullptr && *off != '\0' && std::string(off) != "0";
  EXPECT_EQ(d::membarrier_turned_off(), turned_off);
  EXPECT_EQ(d::asymmetric_fences(), !turned_off && d::register_membarrier());
}
