// The cuDNN algorithm cache, with a counted query standing in for cuDNN's
// heuristics: hits skip the query, the bound evicts the least recently used,
// failed queries store nothing, concurrent users see one answer per key, and
// the metrics say all of it. tests/gpu/autograd_gpu_test.cpp checks the
// convolutions that use it on a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cudnn/algorithm_cache.hpp"
#include "glassbox/cudnn/cudnn_states.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/error.hpp"

namespace gc = glassbox::cudnn;
namespace gm = glassbox::metrics;

namespace {

using Cache = gc::AlgorithmCache<int, int>;

// A cache on its own registry, so every metric starts at zero, and a query
// that counts its calls and answers 10 * key.
struct Counted {
  explicit Counted(std::size_t capacity) : cache("test", capacity, registry) {}

  int get(int key) {
    return cache.get(key, [&] {
      ++queries;
      return 10 * key;
    });
  }
  double metric(const std::string& name) const {
    const gm::Snapshot snap = registry.snapshot();
    const auto* s = gm::find_series(snap, name, {{"cache", "test"}});
    return s == nullptr ? -1 : s->value;
  }

  gm::Registry registry;
  Cache cache;
  std::atomic<int> queries{0};
};

}  // namespace

TEST(CudnnAlgorithmCache, ASecondLookupOfAKeyIsAHitAndSkipsTheQuery) {
  Counted c(8);
  EXPECT_EQ(c.get(3), 30);
  EXPECT_EQ(c.get(3), 30);
  EXPECT_EQ(c.get(4), 40);
  EXPECT_EQ(c.queries, 2);
  EXPECT_EQ(c.cache.size(), 2U);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_hits_total"), 1);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_misses_total"), 2);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_entries"), 2);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_evictions_total"), 0);
}

TEST(CudnnAlgorithmCache, StaysWithinItsCapacityByEvictingTheLeastRecentlyUsed) {
  Counted c(2);
  c.get(1);
  c.get(2);
  c.get(1);  // 2 is now the least recently used
  c.get(3);  // evicts 2
  EXPECT_EQ(c.cache.size(), 2U);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_evictions_total"), 1);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_entries"), 2);
  const int before = c.queries;
  c.get(1);
  c.get(3);
  EXPECT_EQ(c.queries, before) << "1 and 3 should still be cached";
  EXPECT_EQ(c.get(2), 20);
  EXPECT_EQ(c.queries, before + 1) << "2 should have been evicted and asked again";
  for (int k = 0; k < 100; ++k) c.get(k);
  EXPECT_EQ(c.cache.size(), 2U);
}

TEST(CudnnAlgorithmCache, AFailedQueryStoresNothingAndPropagates) {
  Counted c(4);
  EXPECT_THROW(c.cache.get(7, []() -> int { throw std::runtime_error("no algorithm"); }), std::runtime_error);
  EXPECT_EQ(c.cache.size(), 0U);
  EXPECT_EQ(c.get(7), 70);
  EXPECT_EQ(c.queries, 1);
}

TEST(CudnnAlgorithmCache, ZeroCapacityIsRefusedNamingTheCache) {
  gm::Registry registry;
  try {
    Cache cache("conv_forward", 0, registry);
    FAIL() << "capacity 0 was accepted";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("conv_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("capacity 0"), std::string::npos) << e.what();
  }
}

TEST(CudnnAlgorithmCache, ThreadsSharingKeysAllGetTheAnswerAndEntriesStayCounted) {
  constexpr int kThreads = 8, kKeys = 16, kRounds = 20000;
  Counted c(kKeys / 2);  // smaller than the keys in use: evictions race with hits
  std::barrier start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        const int key = (t + r) % kKeys;
        if (c.get(key) != 10 * key) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_LE(c.cache.size(), static_cast<std::size_t>(kKeys / 2));
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_entries"), static_cast<double>(c.cache.size()));
  EXPECT_EQ(
      c.metric("glassbox_cudnn_algorithm_cache_hits_total") + c.metric("glassbox_cudnn_algorithm_cache_misses_total"),
      kThreads * kRounds);
  EXPECT_EQ(c.metric("glassbox_cudnn_algorithm_cache_misses_total"), c.queries);
}

TEST(CudnnAlgorithmCache, DestroyingACacheTakesItsEntriesOffTheGauge) {
  gm::Registry registry;
  auto entries = [&] {
    const gm::Snapshot snap = registry.snapshot();
    return gm::find_series(snap, "glassbox_cudnn_algorithm_cache_entries", {{"cache", "shared"}})->value;
  };
  {
    Cache a("shared", 4, registry);
    Cache b("shared", 4, registry);
    a.get(1, [] { return 1; });
    b.get(1, [] { return 1; });
    b.get(2, [] { return 2; });
    EXPECT_EQ(entries(), 3);
  }
  EXPECT_EQ(entries(), 0);
}

TEST(CudnnAlgorithmCache, CudnnStatesShowTheConvCachesAtZeroBeforeAnyConvolution) {
  gm::Registry registry;
  gc::CudnnStates<gc::SimCudnnBackend> states(gc::SimCudnnBackend({}, registry), {}, registry);
  const gm::Snapshot snap = registry.snapshot();
  for (const char* cache : gc::kConvPlanCaches) {
    for (const char* family :
         {"glassbox_cudnn_algorithm_cache_hits_total", "glassbox_cudnn_algorithm_cache_misses_total",
          "glassbox_cudnn_algorithm_cache_evictions_total", "glassbox_cudnn_algorithm_cache_entries"}) {
      const auto* s = gm::find_series(snap, family, {{"cache", cache}});
      ASSERT_NE(s, nullptr) << family << " {cache=" << cache << "}";
      EXPECT_EQ(s->value, 0) << family << " {cache=" << cache << "}";
    }
  }
}
