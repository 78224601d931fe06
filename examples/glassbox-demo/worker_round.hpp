#pragma once
// Per-step worker threads, as DataParallel's: every round starts fresh
// threads that each take their cuBLAS, cuBLASLt and cuDNN handles from the
// pools, then do their share of the step.
#include <functional>
#include <string>
#include <vector>

namespace glassbox::demo {

/// One library's handle source: reserve the calling thread's handle on a device.
struct HandleSource {
  std::string library;
  std::function<void(int device)> reserve;
};

/// Runs one round: `threads` fresh threads named worker-<i>, thread i on
/// device i % devices. Each reserves every source's handle and waits until
/// all hold theirs (so the pools see `threads` concurrent users), then runs
/// work(i). Returns when all have joined; rethrows the first exception one
/// of them threw. Spans: glassbox.demo.round, and glassbox.demo.worker per thread.
void run_worker_round(const std::vector<HandleSource>& sources, int threads, int devices,
                      const std::function<void(int worker)>& work);

/// One worker's round on the calling thread, as DataParallel runs a single
/// replica: no thread is started; the caller reserves every source's handle
/// on device 0 and runs work(0). Same spans and errors as run_worker_round().
void run_on_caller(const std::vector<HandleSource>& sources, const std::function<void(int worker)>& work);

/// The calling thread's worker index inside run_worker_round() or
/// run_on_caller(); -1 elsewhere.
int current_worker() noexcept;

}  // namespace glassbox::demo
