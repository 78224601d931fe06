#pragma once
// Device code the GPU tests use, compiled for sm_90 plus PTX.
#include <cuda_runtime_api.h>

namespace glassbox::testing {

/// p[i] = scale * ((i * 7) % 13) + offset, on `stream`.
void fill_pattern(float* p, int n, float scale, float offset, cudaStream_t stream);

/// The same pattern on the host, for references.
inline float pattern(int i, float scale, float offset) { return scale * static_cast<float>((i * 7) % 13) + offset; }

}  // namespace glassbox::testing
