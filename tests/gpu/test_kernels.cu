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

namespace glassbox::testing {

namespace {
__global__ void spin_then_copy_kernel(const unsigned char* src, unsigned char* dst, std::size_t n, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}
}  // namespace

void spin_then_copy(const unsigned char* src, unsigned char* dst, std::size_t n, long long cycles,
                    cudaStream_t stream) {
  spin_then_copy_kernel<<<1, 256, 0, stream>>>(src, dst, n, cycles);
}

}  // namespace glassbox::testing
