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

/// What cudaGetDeviceCount's answer says about this machine.
enum class DevicePresence {
  none,      ///< no GPU: no driver installed, or a driver that sees no device
  present,   ///< devices to use
  unusable,  ///< a driver is installed and fails: too old for this runtime,
             ///< mismatched with its kernel module, devices unavailable...
};

/// Reads `status` (from cudaGetDeviceCount) with `driver_version` (from
/// cudaDriverGetVersion, which gives 0 when no driver is installed): the
/// runtime says "insufficient driver" both where there is none and where it
/// is too old, and only the second is a GPU machine.
DevicePresence classify_device_count(cudaError_t status, int driver_version) noexcept;

/// Number of CUDA devices; 0 on a machine without a GPU (no driver, or no
/// device). Throws BackendError where a driver is installed but unusable: a
/// GPU machine that cannot use its GPU fails loudly instead of passing for
/// one without.
int cuda_device_count();

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
