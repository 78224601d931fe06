// glassbox's side of the cuBLAS handle comparison, with the same timing
// method as bench/torch/cublas_handle_torch.cpp. Two rows, each the same job
// on both sides, warm on 1 to 16 threads and as the first call of fresh
// threads (churn):
//   cublas_pool_reserve     the pool alone: the calling thread's handle for
//                           device 0 (ours: DeviceThreadHandlePool::reserve;
//                           PyTorch's: its pool template's PoolWindow::reserve)
//   cublas_current_handle   what getCurrentCUDABlasHandle() does: find the
//                           current device and stream, return the thread's
//                           handle bound to that stream with its workspace
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "torch/timing.hpp"

int main() {
  if (glassbox::cuda::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-cublas-handle: no CUDA device\n");
    return 0;
  }
  namespace gc = glassbox::compare;
  namespace gh = glassbox::handle_pool;
  auto reserve = [] { return gh::cublas_pool().reserve(0); };
  gc::report_sweep("glassbox", "cublas_pool_reserve", reserve);
  gc::report_churn("glassbox", "cublas_pool_reserve_churn", reserve);
  auto current = [] { return gh::current_cublas_handle(); };
  gc::report_sweep("glassbox", "cublas_current_handle", current);
  gc::report_churn("glassbox", "cublas_current_handle_churn", current);
}
