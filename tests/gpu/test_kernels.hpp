#pragma once
// Device code the GPU tests use, compiled for sm_90 plus PTX.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace glassbox::testing {

/// p[i] = scale * ((i * 7) % 13) + offset, on `stream`.
void fill_pattern(float* p, int n, float scale, float offset, cudaStream_t stream);

/// The same pattern on the host, for references.
inline float pattern(int i, float scale, float offset) { return scale * static_cast<float>((i * 7) % 13) + offset; }

}  // namespace glassbox::testing

namespace glassbox::testing {

/// Spins for about `cycles` GPU clock cycles, then copies `n` bytes from
/// `src` (device-visible, e.g. mapped pinned memory) to `dst`, on `stream`.
void spin_then_copy(const unsigned char* src, unsigned char* dst, std::size_t n, long long cycles, cudaStream_t stream);

}  // namespace glassbox::testing

namespace glassbox::testing {

/// Holds `stream` until the host writes nonzero to `*open` (device-visible
/// memory: mapped pinned), polling it with one thread. Gives up after
/// `limit_ns` of GPU time and sets `*timed_out`, so that a test that never
/// opens its gate fails instead of hanging.
void wait_until_open(const volatile unsigned* open, volatile unsigned* timed_out, unsigned long long limit_ns,
                     cudaStream_t stream);

}  // namespace glassbox::testing
