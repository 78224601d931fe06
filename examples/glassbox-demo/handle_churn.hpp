#pragma once
// The demo's workload: rounds of fresh threads that each take cuBLAS,
// cuBLASLt and cuDNN handles, as DataParallel's per-step threads do.
#include <functional>
#include <string>
#include <vector>

namespace glassbox::demo {

/// One library's handle source: reserve the calling thread's handle on a device.
struct HandleSource {
  std::string library;
  std::function<void(int device)> reserve;
};

/// The sources for `device_kind` ("cuda" or "cpu": the sim backend's fake
/// handles under the same library names) and how many devices it has.
std::vector<HandleSource> make_sources(const std::string& device_kind, int& device_count);

/// Runs one round: `threads` fresh threads, thread i on device i % devices,
/// each reserving every source's handle, all alive at once, then joined.
void run_round(const std::vector<HandleSource>& sources, int threads, int devices);

}  // namespace glassbox::demo
