// The caching host allocator's CPU cost on the sim backend (no GPU): the
// cached allocate+free pair from 1 to 16 threads, with and without thread
// caches, and the record-event path. The CUDA side-by-side with PyTorch is
// glassbox-compare-host-allocator, run on the GPU machine.
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>

#include "bench_util.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"

#include <map>
#include <mutex>

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;

namespace {

constexpr std::size_t kBytes = 64 << 10;

gha::CachingHostAllocator& allocator(const char* conf) {
  static glassbox::metrics::Registry registry;
  static std::map<std::string, std::unique_ptr<gha::CachingHostAllocator>> by_conf;
  static std::mutex mu;
  std::lock_guard lock(mu);
  auto& a = by_conf[conf];
  if (!a) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    o.registry = &registry;
    a = std::make_unique<gha::CachingHostAllocator>(std::make_shared<gha::SimHostBackend>(), o);
  }
  return *a;
}

void cached_pair(benchmark::State& state, const char* conf) {
  auto& a = allocator(conf);
  a.free(a.allocate(kBytes).ctx);  // warm: the block exists
  for (auto _ : state) {
    auto x = a.allocate(kBytes);
    benchmark::DoNotOptimize(x.ptr);
    a.free(x.ctx);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_CachedPair(benchmark::State& state) { cached_pair(state, ""); }
void BM_CachedPairSharedListsOnly(benchmark::State& state) { cached_pair(state, "thread_cache:0"); }
BENCHMARK(BM_CachedPair)->Apply(glassbox::bench::thread_sweep);
BENCHMARK(BM_CachedPairSharedListsOnly)->Apply(glassbox::bench::thread_sweep);

// allocate, use on a stream whose work is already done, free: one event
// recorded, and polled complete by the next allocate.
// From several threads, each on its own stream, as the GPU comparison runs it.
void record_event_path(benchmark::State& state, gha::StreamLife life) {
  auto& a = allocator("");
  // A stream per thread that outlives the allocator: the benchmark's threads
  // exit after each thread count, the streams stay (as the GPU comparison's).
  static std::array<gs::SimStream, 64> streams;
  static std::atomic<unsigned> next{0};
  thread_local gs::SimStream& stream = streams[next++ % streams.size()];
  for (auto _ : state) {
    auto x = a.allocate(kBytes);
    a.record_stream(x.ptr, x.ctx, gha::SimHostBackend::id(stream), life);
    a.free(x.ctx);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["blocks"] = static_cast<double>(a.stats().allocations.current);
}
void BM_RecordEventPath(benchmark::State& state) { record_event_path(state, gha::StreamLife::unknown); }
// The same on a stream that outlives the allocator: events deferred and shared.
void BM_RecordEventPathLongLived(benchmark::State& state) {
  record_event_path(state, gha::StreamLife::outlives_allocator);
}
BENCHMARK(BM_RecordEventPath)->Apply(glassbox::bench::thread_sweep);
BENCHMARK(BM_RecordEventPathLongLived)->Apply(glassbox::bench::thread_sweep);

}  // namespace

BENCHMARK_MAIN();
