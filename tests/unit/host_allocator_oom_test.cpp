// Out of memory: the observers, the counter, the span event and the JSON
// snapshot of every block (read back here, and checked against stats()).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/sampler.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
namespace gs = glassbox::sim;

namespace {

double oom_total(const gm::Registry& registry) {
  return gm::sum_series(registry.snapshot(), "glassbox_host_oom_total", {});
}

struct Fixture {
  explicit Fixture(std::string snapshot = {}) {
    gha::HostAllocatorOptions o{};
    o.config = gha::HostAllocatorConfig::parse("thread_cache:4");
    o.config.oom_snapshot = std::move(snapshot);
    o.registry = &registry;
    o.warn = [this](const std::string& w) { warnings.push_back(w); };
    backend->capacity_bytes = 64 * 1024;
    allocator = std::make_unique<gha::CachingHostAllocator>(backend, o);
  }
  gm::Registry registry;
  std::shared_ptr<gha::SimHostBackend> backend = std::make_shared<gha::SimHostBackend>();
  std::vector<std::string> warnings;
  std::unique_ptr<gha::CachingHostAllocator> allocator;
};

std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

}  // namespace

TEST(HostAllocatorOom, ObserverCalledOncePerOomWithSizeAndStats) {
  Fixture f;
  std::vector<gha::OutOfMemoryInfo> seen;
  f.allocator->add_oom_observer([&](const gha::OutOfMemoryInfo& info) { seen.push_back(info); });
  EXPECT_EQ(oom_total(f.registry), 0);  // the series exists before any OOM
  auto held = f.allocator->allocate(40000);
  EXPECT_THROW(f.allocator->allocate(40000), glassbox::OutOfMemoryError);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].size, 40000u);
  EXPECT_EQ(seen[0].rounded_size, f.allocator->round_size(40000));
  EXPECT_EQ(seen[0].stats.active_bytes.current, static_cast<std::int64_t>(f.allocator->round_size(40000)));
  EXPECT_TRUE(seen[0].snapshot_path.empty());
  EXPECT_EQ(oom_total(f.registry), 1);
  EXPECT_THROW(f.allocator->allocate(50000), glassbox::OutOfMemoryError);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(oom_total(f.registry), 2);
  f.allocator->free(held.ctx);
}

TEST(HostAllocatorOom, ObserverExceptionIsWarnedNotThrown) {
  Fixture f;
  f.allocator->add_oom_observer([](const gha::OutOfMemoryInfo&) { throw std::runtime_error("observer broke"); });
  int second = 0;
  f.allocator->add_oom_observer([&](const gha::OutOfMemoryInfo&) { ++second; });
  f.backend->fail_allocations = 2;
  EXPECT_THROW(f.allocator->allocate(100), glassbox::OutOfMemoryError);
  EXPECT_EQ(second, 1);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("observer broke"), std::string::npos);
}

TEST(HostAllocatorOom, AddsAnEventToTheSlowPathSpan) {
  auto processor = std::make_shared<glassbox::trace::InMemorySpanProcessor>();
  glassbox::trace::set_sampler(glassbox::trace::always_on());
  glassbox::trace::set_span_processor(processor);
  {
    Fixture f;
    f.backend->fail_allocations = 2;
    EXPECT_THROW(f.allocator->allocate(100), glassbox::OutOfMemoryError);
  }
  glassbox::trace::set_span_processor(nullptr);
  glassbox::trace::set_sampler(nullptr);
  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 1u);
  ASSERT_EQ(spans[0].events.size(), 1u);
  EXPECT_EQ(spans[0].events[0].name, "glassbox.host_allocator.oom");
  EXPECT_EQ(std::get<std::int64_t>(spans[0].events[0].attributes[0].value), 100);
}

TEST(HostAllocatorOom, SnapshotListsEveryBlockAndMatchesStats) {
  const std::string path = temp_path("glassbox_oom_snapshot_test.json");
  std::filesystem::remove(path);
  Fixture f(path);
  gs::SimStream stream;
  auto active = f.allocator->allocate(3000);
  auto pending = f.allocator->allocate(3000);
  auto cached = f.allocator->allocate(20000);
  stream.enqueue([] {});  // a queued copy: the event stays pending until stepped
  f.allocator->record_stream(pending.ptr, pending.ctx, gha::SimHostBackend::id(stream));
  f.allocator->record_stream(active.ptr, active.ctx, gha::SimHostBackend::id(stream));
  f.allocator->free(pending.ctx);
  f.allocator->free(cached.ctx);  // cached; the out-of-memory path's empty_cache() returns it
  std::string reported;
  f.allocator->add_oom_observer([&](const gha::OutOfMemoryInfo& info) { reported = info.snapshot_path; });
  f.backend->fail_allocations = 2;
  EXPECT_THROW(f.allocator->allocate(40000), glassbox::OutOfMemoryError);
  EXPECT_EQ(reported, path);

  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["request"]["size"], 40000);
  EXPECT_EQ(j["request"]["backend"], "sim");
  EXPECT_NE(j["config"].get<std::string>().find("oom_snapshot:" + path), std::string::npos);

  std::map<std::string, int> states;
  for (const auto& b : j["blocks"]) {
    const std::string state = b["state"];
    ++states[state];
    if (state == "active") {
      EXPECT_EQ(b["requested_bytes"], 3000);
      ASSERT_EQ(b["streams"].size(), 1u);
    }
    if (state == "pending_event") {
      EXPECT_EQ(b["pending_events"], 1);
    }
    EXPECT_GE(b["age_seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["blocks"].size(), 2u);
  EXPECT_EQ(states["active"], 1);
  EXPECT_EQ(states["pending_event"], 1);

  const gha::HostStats stats = f.allocator->stats();
  ASSERT_EQ(j["buckets"].size(), stats.classes.size());
  for (const auto& bucket : j["buckets"]) {
    const auto& cs = *std::find_if(stats.classes.begin(), stats.classes.end(),
                                   [&](const gha::ClassStats& c) { return c.block_size == bucket["block_size"]; });
    EXPECT_EQ(bucket["blocks"], cs.allocations.current);
    EXPECT_EQ(bucket["bytes"], cs.allocated_bytes.current);
    EXPECT_EQ(bucket["active"].get<std::int64_t>() + bucket["pending_event"].get<std::int64_t>() +
                  bucket["retired"].get<std::int64_t>(),
              cs.active_requests.current);
    EXPECT_EQ(bucket["free"], cs.allocations.current - cs.active_requests.current);
    EXPECT_EQ(bucket["requests"], cs.requests);
    EXPECT_EQ(bucket["cache_hits"], cs.cache_hits);
  }
  stream.run_until_blocked();
  f.allocator->free(active.ctx);
  std::filesystem::remove(path);
}

// An owner's free of a block only it recorded on takes the block's streams
// under its own cache lock, not the block's (free_own_with_streams):
// snapshots, the block's only other readers then, hold every cache while
// they read. Here four owners allocate, record on a stream of their own and
// free, while this thread runs out of memory over and over, each time
// writing the snapshot of every block (and emptying the caches). Under
// ThreadSanitizer a free that took the streams under neither lock is a
// reported race; here too, every snapshot must parse and each block in it
// be whole.
TEST(HostAllocatorOom, SnapshotsWhileOwnersFreeRecordedBlocks) {
  constexpr int kOwners = 4, kSnapshots = 40;
  const std::string path = temp_path("glassbox_oom_snapshot_owners_test.json");
  Fixture f(path);
  // 300 000 bytes (512 KiB rounded) never fit; the owners' blocks (4 KiB,
  // a few each, more while their frees record events) always do.
  f.backend->capacity_bytes = 256 * 1024;
  std::atomic<bool> stop{false};
  std::atomic<long> pairs{0};
  std::vector<std::thread> owners;
  for (int t = 0; t < kOwners; ++t) {
    owners.emplace_back([&] {
      gs::SimStream stream;  // never given work: each free finds it done
      while (!stop.load(std::memory_order_relaxed)) {
        auto a = f.allocator->allocate(3000);
        f.allocator->record_stream(a.ptr, a.ctx, gha::SimHostBackend::id(stream));
        f.allocator->free(a.ctx);
        pairs.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (pairs.load() < 1000) std::this_thread::yield();
  const long before = pairs.load();
  for (int i = 0; i < kSnapshots; ++i) {
    EXPECT_THROW(f.allocator->allocate(300000), glassbox::OutOfMemoryError);
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    for (const auto& b : j["blocks"]) {
      EXPECT_LE(b["streams"].size(), 1u) << b.dump();
      EXPECT_GE(b["pending_events"].get<int>(), 0) << b.dump();
      EXPECT_LE(b["pending_events"].get<int>(), 1) << b.dump();
    }
  }
  stop = true;
  for (auto& t : owners) t.join();
  std::filesystem::remove(path);
  EXPECT_GT(pairs.load(), before);  // the owners ran while the snapshots were taken
}

TEST(HostAllocatorOom, UnwritableSnapshotWarns) {
  Fixture f("/nonexistent-dir/glassbox/oom.json");
  std::string reported = "unset";
  f.allocator->add_oom_observer([&](const gha::OutOfMemoryInfo& info) { reported = info.snapshot_path; });
  f.backend->fail_allocations = 2;
  EXPECT_THROW(f.allocator->allocate(100), glassbox::OutOfMemoryError);
  EXPECT_TRUE(reported.empty());
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("/nonexistent-dir/glassbox/oom.json"), std::string::npos);
}

TEST(HostAllocatorOom, ConfigKey) {
  EXPECT_EQ(gha::HostAllocatorConfig::parse("oom_snapshot:/tmp/a:b.json").oom_snapshot, "/tmp/a:b.json");
  EXPECT_THROW(gha::HostAllocatorConfig::parse("oom_snapshot:"), glassbox::ConfigError);
  EXPECT_THROW(gha::HostAllocatorConfig::parse("oom_snapshot:a\nb"), glassbox::ConfigError);
  auto c = gha::HostAllocatorConfig::parse("oom_snapshot:/var/tmp/oom.json");
  EXPECT_EQ(gha::HostAllocatorConfig::parse(c.to_string()).oom_snapshot, "/var/tmp/oom.json");
}
