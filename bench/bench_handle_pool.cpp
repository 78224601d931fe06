// DeviceThreadHandlePool's two costs: the warm reserve() that every library
// call pays, and what a short-lived thread pays to take a handle and give it
// back (DataParallel starts fresh threads every step).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/sim/fake_handle.hpp"

namespace {

using Pool = glassbox::handle_pool::DeviceThreadHandlePool<glassbox::sim::FakeHandleFactory>;

// A registry of its own keeps these series out of Registry::global(). It is
// built while the pool's static is being initialised, so it is destroyed after
// the pool: a pool's registry must outlive the pool.
glassbox::metrics::Registry& bench_registry() {
  static glassbox::metrics::Registry registry;
  return registry;
}

// One pool for every benchmark and thread, as in a process: handles given back
// by one run's threads are reused by the next run's.
Pool& pool() {
  static const std::shared_ptr<Pool> p = Pool::create(glassbox::sim::FakeHandleFactory("bench"), bench_registry());
  return *p;
}

void BM_WarmReserve(benchmark::State& state) {
  Pool& p = pool();
  benchmark::DoNotOptimize(p.reserve(0));  // the thread's first reserve takes the slow path; keep it out of timing
  for (auto _ : state) benchmark::DoNotOptimize(p.reserve(0));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WarmReserve);
BENCHMARK(BM_WarmReserve)->Apply(glassbox::bench::thread_sweep);

// Each iteration is one "step": `threads` fresh threads run `body` and exit.
// ns_per_thread is timed here rather than derived from a rate counter, so it
// is wall time per thread whatever the library's time accounting does.
template <class Body>
void run_churn(benchmark::State& state, Body body) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  std::vector<std::thread> step;
  step.reserve(threads);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (std::size_t i = 0; i < threads; ++i) step.emplace_back(body);
    for (auto& t : step) t.join();
    step.clear();
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  const auto started = state.iterations() * static_cast<std::int64_t>(threads);
  state.SetItemsProcessed(started);
  state.counters["ns_per_thread"] = elapsed.count() / static_cast<double>(started);
}

// Real time: the benchmark thread spends the step blocked in join().
void churn_sizes(benchmark::internal::Benchmark* b) { b->Arg(1)->Arg(4)->Arg(16)->UseRealTime(); }

// Thread start-up on a VM costs 30-100 us and varies by tens of us, which buries
// the pool's share of the difference against BM_ThreadSpawnOnly; so each thread
// also times its own first reserve (window set-up, lock, reuse of a returned
// handle). The give-back at thread exit is only in the difference.
void BM_ThreadChurn(benchmark::State& state) {
  Pool& p = pool();
  std::atomic<std::int64_t> reserve_ns{0};
  run_churn(state, [&p, &reserve_ns] {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(p.reserve(0));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    reserve_ns.fetch_add(ns.count(), std::memory_order_relaxed);
  });
  state.counters["first_reserve_ns"] =
      static_cast<double>(reserve_ns.load()) / static_cast<double>(state.iterations() * state.range(0));
  // Stays at the most threads ever alive at once, however many came and went.
  state.counters["handles_created"] = static_cast<double>(p.counts(0).created);
}
BENCHMARK(BM_ThreadChurn)->Apply(churn_sizes);

// The same threads doing nothing: the pool's own cost per thread is the difference.
void BM_ThreadSpawnOnly(benchmark::State& state) {
  run_churn(state, [] {});
}
BENCHMARK(BM_ThreadSpawnOnly)->Apply(churn_sizes);

}  // namespace

BENCHMARK_MAIN();
