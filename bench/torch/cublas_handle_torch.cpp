// PyTorch's side of the cuBLAS handle comparison (see
// bench/compare_cublas_handle.cpp for the rows): its handle pool template
// (ATen/cuda/detail/DeviceThreadHandles.h, instantiated here for cuBLAS as
// PyTorch's CublasHandlePool.cpp does, one PoolWindow per thread), and
// at::cuda::getCurrentCUDABlasHandle(). Built on the GPU machine against its
// libtorch.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/detail/DeviceThreadHandles.h>

#include <cstdlib>

#include "timing.hpp"

namespace {

void create_cublas(cublasHandle_t* handle) {
  if (cublasCreate(handle) != CUBLAS_STATUS_SUCCESS) std::abort();
}
// Kept for the process, as both libraries keep theirs.
void keep_cublas(cublasHandle_t) {}

using TorchCublasPool = at::cuda::DeviceThreadHandlePool<cublasHandle_t, create_cublas, keep_cublas>;

cublasHandle_t pool_reserve() {
  static auto* pool = new std::shared_ptr<TorchCublasPool>(std::make_shared<TorchCublasPool>());
  thread_local std::unique_ptr<TorchCublasPool::PoolWindow> window((*pool)->newPoolWindow());
  return window->reserve(0);
}

}  // namespace

int main() {
  // Initialises ATen's CUDA state (allocator, primary context) as any real
  // PyTorch program has by the time it asks for a handle.
  at::ones({1}, at::device(at::kCUDA)).sum().item<float>();
  namespace gc = glassbox::compare;
  gc::report_sweep("pytorch", "cublas_pool_reserve", pool_reserve);
  gc::report_churn("pytorch", "cublas_pool_reserve_churn", pool_reserve);
  auto current = [] { return at::cuda::getCurrentCUDABlasHandle(); };
  gc::report_sweep("pytorch", "cublas_current_handle", current);
  gc::report_churn("pytorch", "cublas_current_handle_churn", current);
}
