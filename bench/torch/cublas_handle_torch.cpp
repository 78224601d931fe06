// PyTorch's side of the warm cuBLAS handle comparison: at::cuda's
// getCurrentCUDABlasHandle() (pool reserve + bind to the current stream +
// workspace), built on the GPU machine against its libtorch.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "timing.hpp"

int main() {
  // Initialises ATen's CUDA state (allocator, primary context) as any real
  // PyTorch program has by the time it asks for a handle.
  at::ones({1}, at::device(at::kCUDA)).sum().item<float>();
  const long calls = glassbox::compare::calibrate([] { return at::cuda::getCurrentCUDABlasHandle(); });
  for (int threads : {1, 2, 4, 8, 16}) {
    double rate = glassbox::compare::median_calls_per_second(
        [] { return at::cuda::getCurrentCUDABlasHandle(); }, threads, calls);
    glassbox::compare::report("pytorch", "cublas_handle_warm", threads, rate);
  }
}
