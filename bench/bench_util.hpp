#pragma once
// Helpers shared by the glassbox benchmark suites.
#include <benchmark/benchmark.h>

namespace glassbox::bench {

/// Registers 1..16 threads. Real time, because the question is total throughput
/// of the process: CPU time summed over threads would hide contention that
/// shows up as stalls, and hide scaling that shows up as more work per second.
inline void thread_sweep(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2, 4, 8, 16}) b->Threads(threads);
  b->UseRealTime();
}

}  // namespace glassbox::bench
