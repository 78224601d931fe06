#pragma once
// Checking every CUDA runtime, cuBLAS and cuDNN call: a failure throws
// glassbox::BackendError naming the call, the status and the device.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace glassbox::cuda {

void check_cuda(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);
void check_cudnn(cudnnStatus_t status, const char* call);

/// Number of CUDA devices; 0 when there is no driver or no GPU (never throws).
int cuda_device_count() noexcept;

/// Makes `device` current for its lifetime, then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace glassbox::cuda
