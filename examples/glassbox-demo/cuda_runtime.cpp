#include "cuda_runtime.hpp"

#include "glassbox/autograd/use_cuda.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/error.hpp"

namespace glassbox::demo {

CudaRuntime::CudaRuntime()
    : devices_(cuda::cuda_device_count()),
      sources_{{"cublas", [](int d) { handle_pool::current_cublas_handle(d, nullptr); }},
               {"cublaslt", [](int d) { handle_pool::current_cublaslt_handle(d); }},
               {"cudnn", [](int d) { handle_pool::current_cudnn_handle(d, nullptr); }}} {
  if (devices_ <= 0) throw Error("--device cuda: no CUDA device found; use --device cpu or auto");
  // Before any tensor exists: from here on tensors on a device are CUDA tensors.
  autograd::use_cuda();
}

std::string CudaRuntime::description() const {
  return "cuda (GPU " + std::to_string(kTrainingDevice) + " of " + std::to_string(devices_) + ")";
}

host_allocator::HostStats CudaRuntime::host_stats() const { return cuda::cuda_host_allocator().stats(); }

}  // namespace glassbox::demo
