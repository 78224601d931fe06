#pragma once
// NVTX counters (nvToolsExtCounters.h, the counters extension of NVTX 3, which
// CUDA 13 ships): int64 counters in the glassbox domain that Nsight
// Systems draws as rows next to the ranges. Without the extension's header at
// build time, or without a tool attached, registration answers 0 and a sample
// is a no-op.
#include <cstdint>

namespace glassbox::nvtx {

/// Whether glassbox was built with NVTX's counters extension.
bool counters_compiled_in() noexcept;

/// Registers an int64 counter named `name` (copied by the tool); 0 when no
/// tool took it, and then nothing need be sampled.
std::uint64_t register_counter(const char* name) noexcept;
void sample_counter(std::uint64_t id, std::int64_t value) noexcept;

}  // namespace glassbox::nvtx
