// Hot-path cost of metric updates, and whether it scales with threads:
// counters, histograms and gauges write per-thread cells.
// Plus the cost of a scrape, which is what pays for the per-thread cells.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/context.hpp"

namespace {

namespace gm = glassbox::metrics;

gm::Registry& bench_registry() {
  static gm::Registry registry;
  return registry;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> bounds = gm::exponential_buckets(1e-6, 4, 12);
  return bounds;
}

// Values spread log-uniformly over every bucket including +Inf, in an order
// the branch predictor cannot learn, so observe()'s bucket search is not
// flattered by always landing in the same place.
constexpr std::size_t kValueCount = 1024;
const std::vector<double>& observed_values() {
  static const std::vector<double> values = [] {
    std::vector<double> v(kValueCount);
    const double golden = 0.6180339887498949;
    for (std::size_t i = 0; i < v.size(); ++i) {
      double frac = std::fmod(static_cast<double>(i) * golden, 1.0);
      v[i] = 0.5e-6 * std::pow(4.0, 13.0 * frac);
    }
    return v;
  }();
  return values;
}

// The thread's first update allocates its cells; do it before timing starts.
template <class Update>
void run_updates(benchmark::State& state, Update update) {
  update(std::size_t{0});
  std::size_t i = 0;
  for (auto _ : state) update(i++);
  state.SetItemsProcessed(state.iterations());
}

void BM_CounterInc(benchmark::State& state) {
  static const gm::Counter counter = bench_registry().counter("bench_x_total", "help").with();
  run_updates(state, [](std::size_t) { counter.inc(); });
}
BENCHMARK(BM_CounterInc)->Apply(glassbox::bench::thread_sweep);

void BM_HistogramObserve(benchmark::State& state) {
  static const gm::Histogram histogram =
      bench_registry().histogram("bench_latency_seconds", "help", {}, latency_buckets()).with();
  const std::vector<double>& values = observed_values();
  run_updates(state, [&values](std::size_t i) { histogram.observe(values[i % kValueCount]); });
}
BENCHMARK(BM_HistogramObserve)->Apply(glassbox::bench::thread_sweep);

// Every observe() inside a sampled span: each one also writes its bucket's
// exemplar (a seqlock slot, the wall clock). Threads share the slots, so this
// is also what racing writers cost one another.
void BM_HistogramObserveWithExemplar(benchmark::State& state) {
  static const gm::Histogram histogram =
      bench_registry().histogram("bench_exemplar_seconds", "help", {}, latency_buckets()).with();
  glassbox::trace::SpanContext sampled;
  sampled.trace_id.bytes.fill(0xab);
  sampled.span_id.bytes.fill(0xcd);
  sampled.sampled = true;
  glassbox::trace::ContextScope scope(sampled);
  const std::vector<double>& values = observed_values();
  run_updates(state, [&values](std::size_t i) { histogram.observe(values[i % kValueCount]); });
}
BENCHMARK(BM_HistogramObserveWithExemplar)->Apply(glassbox::bench::thread_sweep);

void BM_GaugeAdd(benchmark::State& state) {
  static const gm::Gauge gauge = bench_registry().gauge("bench_level", "help").with();
  run_updates(state, [](std::size_t) { gauge.add(1.0); });
}
BENCHMARK(BM_GaugeAdd)->Apply(glassbox::bench::thread_sweep);

// A process with a few pools and allocators: 200 series over the three kinds,
// each touched once so the scrape reads real cells.
constexpr int kCounterSeries = 80;
constexpr int kGaugeSeries = 80;
constexpr int kHistogramSeries = 40;
constexpr int kScrapeSeries = kCounterSeries + kGaugeSeries + kHistogramSeries;

gm::Registry& scrape_registry() {
  static gm::Registry registry;
  static const bool populated = [] {
    auto& ops = registry.counter("bench_scrape_ops_total", "help", {"op"});
    auto& bytes = registry.gauge("bench_scrape_bytes", "help", {"pool"});
    auto& seconds = registry.histogram("bench_scrape_seconds", "help", {"op"}, latency_buckets());
    for (int i = 0; i < kCounterSeries; ++i) ops.with({std::to_string(i)}).inc();
    for (int i = 0; i < kGaugeSeries; ++i) bytes.with({std::to_string(i)}).set(i);
    for (int i = 0; i < kHistogramSeries; ++i) seconds.with({std::to_string(i)}).observe(1e-3 * i);
    return true;
  }();
  benchmark::DoNotOptimize(populated);
  return registry;
}

void BM_Scrape(benchmark::State& state) {
  const gm::Registry& registry = scrape_registry();
  for (auto _ : state) {
    gm::Snapshot snapshot = registry.snapshot();
    benchmark::DoNotOptimize(snapshot.data());
  }
  state.SetItemsProcessed(state.iterations() * kScrapeSeries);
  state.counters["series"] = kScrapeSeries;
}
BENCHMARK(BM_Scrape);

}  // namespace

BENCHMARK_MAIN();
