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
  glassbox::compare::report_sweep("pytorch", "cublas_handle_warm", current);
  glassbox::compare::report_churn("pytorch", "cublas_handle_churn", current);
}
