// glassbox's side of the cuBLAS handle comparison, with the same timing
// method as bench/torch/cublas_handle_torch.cpp: current_cublas_handle() on
// the default stream, as getCurrentCUDABlasHandle() is on PyTorch's, warm on
// 1 to 16 threads and as the first call of fresh threads (churn).
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "torch/timing.hpp"

int main() {
  if (glassbox::cuda::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-cublas-handle: no CUDA device\n");
    return 0;
  }
  auto current = [] { return glassbox::handle_pool::current_cublas_handle(0, nullptr); };
  glassbox::compare::report_sweep("glassbox", "cublas_handle_warm", current);
  glassbox::compare::report_churn("glassbox", "cublas_handle_churn", current);
}
