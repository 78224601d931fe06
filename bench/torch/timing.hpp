#pragma once
// The timing method both sides of a comparison share: warm up, then repeat a
// fixed number of calls on each of `threads` threads started together, and
// report the median over repetitions of total calls per second (wall clock).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace glassbox::compare {

template <class T>
inline void keep(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
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
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

/// One JSON line a run of the comparison prints per measurement.
inline void report(const char* side, const char* metric, int threads, double calls_per_second) {
  std::printf("{\"side\":\"%s\",\"metric\":\"%s\",\"threads\":%d,\"calls_per_second\":%.6g,\"ns_per_call\":%.6g}\n",
              side, metric, threads, calls_per_second, 1e9 * threads / calls_per_second);
  std::fflush(stdout);
}

}  // namespace glassbox::compare
