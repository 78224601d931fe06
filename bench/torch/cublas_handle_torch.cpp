// PyTorch's side of the cuBLAS handle comparison: at::cuda's
// getCurrentCUDABlasHandle() (pool reserve + bind to the current stream +
// workspace), warm on 1 to 16 threads and as the first call of fresh threads
// (churn); built on the GPU machine against its libtorch.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "timing.hpp"

int main() {
  // Initialises ATen's CUDA state (allocator, primary context) as any real
  // PyTorch program has by the time it asks for a handle.
  at::ones({1}, at::device(at::kCUDA)).sum().item<float>();
  auto current = [] { return at::cuda::getCurrentCUDABlasHandle(); };
  const long calls = glassbox::compare::calibrate(current);
  for (int threads : {1, 2, 4, 8, 16}) {
    glassbox::compare::report("pytorch", "cublas_handle_warm", threads,
                              glassbox::compare::median_calls_per_second(current, threads, calls));
  }
  glassbox::compare::report_churn("pytorch", "cublas_handle_churn", current);
}
