// Every scrape of the host allocator is self-consistent: per bucket, blocks
// by state add up to the blocks held; active + cached + pending bytes are the
// reserved bytes; nothing is negative. Checked at an exact moment (a free()
// stopped inside its event record) and by a scraper against eight busy
// threads with thread caches on.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <random>
#include <thread>

#include "forwarding_sim_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "metric_value.hpp"

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;

namespace {

// The sim backend, with one event record that waits until let_go(): a free()
// stopped between its steps.
class PausingBackend final : public glassbox::testing::ForwardingSimBackend {
 public:
  void pause_next_record() { armed_ = true; }
  void wait_until_paused() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return paused_; });
  }
  void let_go() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  gha::EventId record_event(gha::StreamId stream) override {
    if (armed_.exchange(false)) {
      std::unique_lock lock(mu_);
      paused_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    return sim.record_event(stream);
  }
  std::string name() const override { return "pausing-sim"; }

 private:
  std::atomic<bool> armed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;
  bool released_ = false;
};

constexpr std::array<std::size_t, 4> kSizes{1000, 4000, 16000, 100000};

unsigned bucket_of(std::size_t size) {
  unsigned b = 0;
  while ((std::size_t{1} << b) < size) ++b;
  return b;
}

// What is wrong with a snapshot: one line per broken rule, empty when none.
class Problems {
 public:
  void expect(bool ok, const std::string& what) {
    if (!ok) text_ += what + "\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::string scrape_problems(const gm::Registry& registry) {
  Problems p;
  const gm::Snapshot snap = registry.snapshot();
  double active_bytes = 0, cached_bytes = 0, pending_bytes = 0;
  for (std::size_t size : kSizes) {
    const std::string b = std::to_string(bucket_of(size));
    const double rounded = static_cast<double>(std::size_t{1} << bucket_of(size));
    auto blocks = [&](const char* state) {
      return gm::sum_series(snap, "glassbox_host_blocks", {{"bucket", b}, {"state", state}});
    };
    const double active = blocks("active"), free = blocks("free"), pending = blocks("pending_event");
    const std::string at = "bucket " + b + ": active " + std::to_string(active) + ", free " + std::to_string(free) +
                           ", pending " + std::to_string(pending);
    p.expect(active >= 0 && free >= 0 && pending >= 0, at + ": a negative count");
    p.expect(gm::sum_series(snap, "glassbox_host_memory_active_bytes", {{"bucket", b}}) == active * rounded,
             at + ": active bytes differ from active blocks");
    active_bytes += active * rounded;
    cached_bytes += free * rounded;
    pending_bytes += pending * rounded;
  }
  const double cached = gm::sum_series(snap, "glassbox_host_memory_cached_bytes");
  const double reserved = gm::sum_series(snap, "glassbox_host_memory_reserved_bytes");
  p.expect(cached == cached_bytes,
           "cached bytes " + std::to_string(cached) + " but free blocks hold " + std::to_string(cached_bytes));
  p.expect(reserved == active_bytes + cached_bytes + pending_bytes,
           "reserved bytes " + std::to_string(reserved) + " but blocks by state hold " +
               std::to_string(active_bytes + cached_bytes + pending_bytes));
  return p.text();
}

std::string stats_problems(const gha::HostStats& s) {
  Problems p;
  std::int64_t held = 0, held_bytes = 0;
  for (const auto& c : s.classes) {
    const std::string at = "class " + std::to_string(c.block_size) + ": ";
    p.expect(c.active_requests.current >= 0, at + "negative active count");
    p.expect(c.allocations.current >= c.active_requests.current, at + "more active than held");
    p.expect(c.active_requests.peak >= c.active_requests.current, at + "active peak below current");
    p.expect(c.allocations.peak >= c.allocations.current, at + "held peak below current");
    held += c.allocations.current;
    held_bytes += c.allocated_bytes.current;
  }
  p.expect(held == s.allocations.current,
           "classes hold " + std::to_string(held) + " blocks, the total says " + std::to_string(s.allocations.current));
  p.expect(held_bytes == s.allocated_bytes.current, "classes hold other bytes than the total");
  p.expect(s.cached_blocks >= 0, "negative cached blocks");
  p.expect(s.active_bytes.current + s.cached_bytes == s.allocated_bytes.current,
           "active " + std::to_string(s.active_bytes.current) + " + cached " + std::to_string(s.cached_bytes) +
               " != reserved " + std::to_string(s.allocated_bytes.current));
  p.expect(s.allocations.peak >= s.allocations.current, "held peak below current");
  return p.text();
}

}  // namespace

// free() bumps its thread's freed count before the block's events are
// queued: a scrape in between saw the block neither active nor pending, so
// a free block that was on no list.
TEST(HostAllocatorScrape, AFreeStoppedBeforeItsEventsAreQueuedShowsNoPhantomFreeBlock) {
  gm::Registry registry;
  auto backend = std::make_shared<PausingBackend>();
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  // The stream has run everything by the free: it records only without the check.
  o.config = gha::HostAllocatorConfig::parse("idle_stream_check:false");
  gha::CachingHostAllocator allocator(backend, o);
  gs::SimStream stream(gs::SimStream::Mode::worker);
  auto a = allocator.allocate(4000);
  ASSERT_TRUE(allocator.record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(stream)));
  backend->pause_next_record();
  std::thread freeing([&] { allocator.free(a.ctx); });
  backend->wait_until_paused();
  const gm::LabelPairs bucket{{"bucket", "12"}};
  auto state = [&](const char* s) {
    gm::LabelPairs l = bucket;
    l.emplace_back("state", s);
    return glassbox::testing::metric_sum(registry, "glassbox_host_blocks", l);
  };
  EXPECT_EQ(state("free"), 0);
  EXPECT_EQ(state("active") + state("pending_event"), 1);
  EXPECT_EQ(scrape_problems(registry), "");
  backend->let_go();
  freeing.join();
  stream.synchronize();
  allocator.process_events();
  EXPECT_EQ(state("free"), 1);
}

// Eight threads allocate, use on streams, free (some blocks on another
// thread), with thread caches on; a ninth scrapes the registry and reads
// stats() all the while and checks every snapshot.
TEST(HostAllocatorScrape, EverySnapshotUnderEightBusyThreadsIsConsistent) {
  constexpr int kThreads = 8, kOps = 20000;
  gm::Registry registry;
  auto backend = std::make_shared<gha::SimHostBackend>();
  gha::HostAllocatorOptions o;
  o.registry = &registry;
  gha::CachingHostAllocator allocator(backend, o);
  std::array<gs::SimStream, 4> streams{
      gs::SimStream(gs::SimStream::Mode::worker), gs::SimStream(gs::SimStream::Mode::worker),
      gs::SimStream(gs::SimStream::Mode::worker), gs::SimStream(gs::SimStream::Mode::worker)};
  std::atomic<int> working{kThreads};
  std::barrier start(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<gha::HostAllocation> held;
      start.arrive_and_wait();
      for (int i = 0; i < kOps; ++i) {
        auto a = allocator.allocate(kSizes[rng() % kSizes.size()]);
        if (rng() % 2 == 0) allocator.record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(streams[rng() % 4]));
        held.push_back(a);
        if (held.size() > 4 || rng() % 3 == 0) {
          allocator.free(held.front().ctx);
          held.erase(held.begin());
        }
      }
      for (auto& a : held) allocator.free(a.ctx);
      working.fetch_sub(1);
    });
  }
  int scrapes = 0;
  std::string problems;
  start.arrive_and_wait();
  while (working.load() > 0 && problems.empty()) {
    problems = scrape_problems(registry) + stats_problems(allocator.stats());
    ++scrapes;
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(problems, "") << "after " << scrapes << " snapshots";
  EXPECT_GT(scrapes, 10);
  for (auto& s : streams) s.synchronize();
  allocator.process_events();
  EXPECT_EQ(scrape_problems(registry), "");
  EXPECT_EQ(stats_problems(allocator.stats()), "");
}
