#pragma once
// The timing method both sides of a comparison share: warm up, then repeat a
// fixed number of calls on each of `threads` threads started together, and
// report the median over repetitions of total calls per second (wall clock);
// or, for thread churn, start fresh threads that make one call each.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace glassbox::compare {

template <class T>
inline void keep(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Calls per thread that take about 50 ms on one thread: long enough that
/// thread start-up skew is noise, short enough for slow sides to finish.
template <class Fn>
long calibrate(Fn fn) {
  for (int i = 0; i < 1000; ++i) keep(fn());
  constexpr long probe = 20000;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < probe; ++i) keep(fn());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::max(probe, static_cast<long>(probe * 0.05 / secs));
}

/// Median calls/s over `reps` runs of `calls` calls of `fn` on each thread.
template <class Fn>
double median_calls_per_second(Fn fn, int threads, long calls, int reps = 7) {
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    std::barrier start(threads + 1), done(threads + 1);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) keep(fn());  // warm: first call creates the handle
        start.arrive_and_wait();
        for (long i = 0; i < calls; ++i) keep(fn());
        done.arrive_and_wait();
      });
    }
    start.arrive_and_wait();
    auto t0 = std::chrono::steady_clock::now();
    done.arrive_and_wait();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto& t : ts) t.join();
    rates.push_back(static_cast<double>(calls) * threads / secs);
  }
  return median(rates);
}

/// Thread churn, as DataParallel's fresh threads every step: each step starts
/// `threads` threads that make one call of `fn` each (their first) and exit,
/// and joins them.
struct ChurnRates {
  /// Threads through the whole start, first call, exit cycle per second (the
  /// library's thread-exit hand-back included); report()'s ns_per_call is
  /// then the time of one step.
  double threads_per_second;
  /// The first call alone: `threads` / its mean latency, so that report()'s
  /// ns_per_call reads as that mean latency.
  double first_calls_per_second;
};

/// Medians over `reps` runs of `steps` steps. A step before timing lets the
/// library create what `threads` threads hold at once, so the timed steps
/// measure reuse, as in a training loop after its first step.
template <class Fn>
ChurnRates median_churn_rates(Fn fn, int threads, int steps, int reps = 7) {
  std::atomic<long> call_ns{0};
  auto step = [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        auto t0 = std::chrono::steady_clock::now();
        keep(fn());
        call_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      });
    }
    for (auto& t : ts) t.join();
  };
  step();
  std::vector<double> cycle, first;
  for (int r = 0; r < reps; ++r) {
    call_ns = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) step();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double started = static_cast<double>(steps) * threads;
    cycle.push_back(started / secs);
    first.push_back(threads * 1e9 * started / static_cast<double>(call_ns.load()));
  }
  return {median(cycle), median(first)};
}

/// Steps that each end with the GPU done (a training step ending in a loss
/// read back): warm-up, then the median steps per second over `reps`
/// repetitions of about `rep_seconds` each, sized from the last warm-up
/// steps. bench/torch/training_step.py times PyTorch's step the same way.
template <class Step>
double median_steps_per_second(Step step, double rep_seconds = 0.25, int reps = 5) {
  constexpr int warmup = 20, calibration = 10, min_steps = 10;
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup - calibration; ++i) step();
  auto t0 = clock::now();
  for (int i = 0; i < calibration; ++i) step();
  const double per_step = std::chrono::duration<double>(clock::now() - t0).count() / calibration;
  const long steps = std::max<long>(min_steps, static_cast<long>(rep_seconds / per_step));
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    t0 = clock::now();
    for (long i = 0; i < steps; ++i) step();
    rates.push_back(static_cast<double>(steps) / std::chrono::duration<double>(clock::now() - t0).count());
  }
  return median(rates);
}

/// Whether a comparison program should measure `metric`: its command line
/// names the metrics to measure, all of them when it names none.
inline bool wanted(int argc, char** argv, const char* metric) {
  if (argc < 2) return true;
  return std::find_if(argv + 1, argv + argc, [&](const char* a) { return std::string(a) == metric; }) != argv + argc;
}

/// One JSON line a run of the comparison prints per measurement.
inline void report(const char* side, const char* metric, int threads, double calls_per_second) {
  std::printf("{\"side\":\"%s\",\"metric\":\"%s\",\"threads\":%d,\"calls_per_second\":%.6g,\"ns_per_call\":%.6g}\n",
              side, metric, threads, calls_per_second, 1e9 * threads / calls_per_second);
  std::fflush(stdout);
}

/// The CUDA runtime call counter (bench/driver_calls), present when the
/// process was started with it in LD_PRELOAD; null otherwise.
using DriverCallCounts = std::size_t (*)(const char* const** names, const std::atomic<unsigned long long>** values);
inline DriverCallCounts driver_call_counter() {
  static const auto counter = reinterpret_cast<DriverCallCounts>(dlsym(RTLD_DEFAULT, "glassbox_cuda_call_counts"));
  return counter;
}

/// Instead of timing `fn`, one JSON line with the CUDA calls (runtime, and driver
/// calls through entry points fetched from it) per call
/// of it, counted over `calls` warm calls on one thread (every thread of the
/// process counts: a side's background work is part of what it pays).
template <class Fn>
void report_driver_calls(const char* side, const char* metric, Fn fn, long calls = 10000) {
  const char* const* names = nullptr;
  const std::atomic<unsigned long long>* values = nullptr;
  const std::size_t n = driver_call_counter()(&names, &values);
  for (int i = 0; i < 1000; ++i) keep(fn());
  std::vector<unsigned long long> before(n);
  for (std::size_t i = 0; i < n; ++i) before[i] = values[i].load(std::memory_order_relaxed);
  for (long i = 0; i < calls; ++i) keep(fn());
  std::string per_call;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned long long made = values[i].load(std::memory_order_relaxed) - before[i];
    if (made == 0) continue;
    char cell[96];
    std::snprintf(cell, sizeof cell, "%s\"%s\":%.4g", per_call.empty() ? "" : ",", names[i],
                  static_cast<double>(made) / static_cast<double>(calls));
    per_call += cell;
  }
  std::printf("{\"side\":\"%s\",\"metric\":\"%s\",\"threads\":1,\"driver_calls_per_call\":{%s}}\n", side, metric,
              per_call.c_str());
  std::fflush(stdout);
}

/// The warm thread counts every comparison sweeps; the short sweep is for
/// paths that serialise in the driver from a few threads on, on both sides.
inline constexpr int kThreadSweep[] = {1, 2, 4, 8, 16};
inline constexpr int kShortThreadSweep[] = {1, 4, 16};

/// Calls per thread for a repetition of about 50 ms at `threads` threads,
/// from one probe repetition there: contention slows a side's calls up to
/// 100x at 16 threads, and the one-thread count would then take seconds per
/// repetition (minutes per sweep) without measuring anything better.
template <class Fn>
long calibrate_at(Fn fn, int threads, long one_thread_calls) {
  if (threads == 1) return one_thread_calls;
  const long probe = std::max(1000L, one_thread_calls / 20);
  const double total_rate = median_calls_per_second(fn, threads, probe, 1);
  return std::max(probe, static_cast<long>(total_rate * 0.05 / threads));
}

/// Whether the process runs under a sampling profiler (scripts/gpu-bench
/// profile sets GLASSBOX_COMPARE_PROFILE=1): then report_sweep times only the
/// compared sides' rows, at one thread, since the reference rows (the
/// driver's floors, the harness's own) and the other thread counts would mix
/// into the samples. Said on stderr, so that no such run passes for a full one.
inline bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("GLASSBOX_COMPARE_PROFILE");
    const bool set = v != nullptr && *v != '\0' && std::string_view(v) != "0";
    if (set) std::fprintf(stderr, "GLASSBOX_COMPARE_PROFILE: the compared rows only, at one thread\n");
    return set;
  }();
  return on;
}

/// Calibrates `fn` at each of `threads` thread counts, then reports its
/// median rate there.
/// With the call counter loaded, reports driver calls per call instead.
template <class Fn>
void report_sweep(const char* side, const char* metric, Fn fn, std::span<const int> threads = kThreadSweep) {
  if (driver_call_counter() != nullptr) return report_driver_calls(side, metric, fn);
  if (profiling()) {
    if (std::string_view(side) != "glassbox" && std::string_view(side) != "pytorch") return;
    threads = threads.first(1);
  }
  const long calls = calibrate(fn);
  for (int t : threads) report(side, metric, t, median_calls_per_second(fn, t, calibrate_at(fn, t, calls)));
}

/// The churn sweep both sides run: 1, 4 and 16 threads a step, 512 threads a
/// repetition; reports `metric`_cycle and `metric`_first_call.
/// Nothing when the call counter is loaded: the counting pass reports warm
/// calls only (report_sweep), and a timing taken under it would count as a run.
template <class Fn>
void report_churn(const char* side, const std::string& metric, Fn fn) {
  if (driver_call_counter() != nullptr) return;
  for (int threads : {1, 4, 16}) {
    ChurnRates rates = median_churn_rates(fn, threads, 512 / threads);
    report(side, (metric + "_cycle").c_str(), threads, rates.threads_per_second);
    report(side, (metric + "_first_call").c_str(), threads, rates.first_calls_per_second);
  }
}

}  // namespace glassbox::compare
