// What one /metrics scrape costs the process: the Prometheus text the handler
// serves (before gzip and the socket), read from the registry, over a
// registry of 1 000 series of every kind glassbox registers, each updated
// from two threads so the scrape sums more than one thread's cells.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <string>
#include <thread>

#include "glassbox/exporters/detail/exposition_text.hpp"
#include "glassbox/exporters/detail/openmetrics.hpp"
#include "glassbox/metrics/registry.hpp"

namespace {

namespace gm = glassbox::metrics;

constexpr int kCounters = 500;
constexpr int kGauges = 200;
constexpr int kUpDownCounters = 200;
constexpr int kHistograms = 100;
constexpr int kSeries = kCounters + kGauges + kUpDownCounters + kHistograms;
constexpr int kPerFamily = 50;  // series per family, labelled {device, op}

std::string label(const char* prefix, int i) { return prefix + std::to_string(i); }

void touch(gm::Registry& r, int i) {
  const int family = i / kPerFamily;
  const std::string device = label("", i % 8);
  const std::string op = label("op_", i % kPerFamily);
  const std::string family_name = std::to_string(family);
  if (i < kCounters) {
    r.counter("bench_ops_" + family_name + "_total", "Operations done", {"device", "op"})
        .with({device, op})
        .inc(static_cast<std::uint64_t>(i));
  } else if (i < kCounters + kGauges) {
    r.gauge("bench_bytes_" + family_name, "Bytes held", {"device", "op"}).with({device, op}).set(1e6 * i);
  } else if (i < kCounters + kGauges + kUpDownCounters) {
    r.up_down_counter("bench_in_flight_" + family_name, "Operations in flight", {"device", "op"})
        .with({device, op})
        .add(i);
  } else {
    r.histogram("bench_op_seconds_" + family_name, "Operation latency", {"device", "op"},
                gm::exponential_buckets(1e-6, 4, 12))
        .with({device, op})
        .observe(1e-6 * i);
  }
}

gm::Registry& thousand_series() {
  static gm::Registry registry;
  static const bool populated = [] {
    for (int i = 0; i < kSeries; ++i) touch(registry, i);
    // A second thread's cells, kept live: a scrape sums every thread's share.
    std::thread([] {
      for (int i = 0; i < kSeries; ++i) touch(registry, i);
    }).join();
    return true;
  }();
  benchmark::DoNotOptimize(populated);
  return registry;
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// One scrape as the handler serves it: the registry read in place into text.
// Page faults per scrape are counted: a heap that gives its top back to the
// kernel after each scrape makes every scrape fault its buffer in again.
void scrape(benchmark::State& state, std::string (*serialize)(const gm::Registry&)) {
  const gm::Registry& registry = thousand_series();
  std::size_t bytes = 0;
  const long faults_before = minor_faults();
  for (auto _ : state) {
    std::string text = serialize(registry);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["series"] = kSeries;
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["faults"] =
      benchmark::Counter(static_cast<double>(minor_faults() - faults_before), benchmark::Counter::kAvgIterations);
}

void BM_ScrapeText1000Series(benchmark::State& state) { scrape(state, glassbox::exporters::detail::exposition_text); }
BENCHMARK(BM_ScrapeText1000Series)->Unit(benchmark::kMicrosecond);

// The same scrape for a scraper that asks for OpenMetrics (exemplars).
void BM_ScrapeOpenMetrics1000Series(benchmark::State& state) {
  scrape(state, glassbox::exporters::detail::openmetrics_text);
}
BENCHMARK(BM_ScrapeOpenMetrics1000Series)->Unit(benchmark::kMicrosecond);

// The copy the OTLP metric push, the demo's summary and tests read.
void BM_Snapshot1000Series(benchmark::State& state) {
  const gm::Registry& registry = thousand_series();
  for (auto _ : state) {
    gm::Snapshot snapshot = registry.snapshot();
    benchmark::DoNotOptimize(snapshot.data());
  }
  state.counters["series"] = kSeries;
}
BENCHMARK(BM_Snapshot1000Series)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
