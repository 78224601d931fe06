#include "test_kernels.hpp"

namespace glassbox::testing {

namespace {
__global__ void fill_pattern_kernel(float* p, int n, float scale, float offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = scale * static_cast<float>((i * 7) % 13) + offset;
}
}  // namespace

void fill_pattern(float* p, int n, float scale, float offset, cudaStream_t stream) {
  fill_pattern_kernel<<<(n + 255) / 256, 256, 0, stream>>>(p, n, scale, offset);
}

}  // namespace glassbox::testing
