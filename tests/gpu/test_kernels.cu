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

namespace glassbox::testing {

namespace {
__device__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void wait_until_open_kernel(const volatile unsigned* open, volatile unsigned* timed_out,
                                       unsigned long long limit_ns) {
  const unsigned long long start = global_ns();
  while (*open == 0) {
    if (global_ns() - start > limit_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}
}  // namespace

void wait_until_open(const volatile unsigned* open, volatile unsigned* timed_out, unsigned long long limit_ns,
                     cudaStream_t stream) {
  wait_until_open_kernel<<<1, 1, 0, stream>>>(open, timed_out, limit_ns);
}

}  // namespace glassbox::testing
