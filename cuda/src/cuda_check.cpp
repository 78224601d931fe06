#include "glassbox/cuda/cuda_check.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {
std::string current_device_text() {
  int d = -1;
  return cudaGetDevice(&d) == cudaSuccess ? " on device " + std::to_string(d) : "";
}

int count_devices() {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status == cudaSuccess) return n;
  (void)cudaGetLastError();  // clear it: later calls must not report it again
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (classify_device_count(status, driver) == DevicePresence::none) return 0;
  throw BackendError("a CUDA driver is installed (version " + std::to_string(driver / 1000) + "." +
                     std::to_string(driver % 1000 / 10) + ") but unusable: cudaGetDeviceCount failed: " +
                     cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}
}  // namespace

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw BackendError(std::string(call) + " failed" + current_device_text() + ": " + cudaGetErrorName(status) + " (" +
                     cudaGetErrorString(status) + ")");
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw BackendError(std::string(call) + " failed" + current_device_text() + ": " + cublasGetStatusName(status) + " (" +
                     cublasGetStatusString(status) + ")");
}

void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw BackendError(std::string(call) + " failed" + current_device_text() + ": " + cudnnGetErrorString(status));
}

DevicePresence classify_device_count(cudaError_t status, int driver_version) noexcept {
  switch (status) {
    case cudaSuccess:
      return DevicePresence::present;
    case cudaErrorNoDevice:
    case cudaErrorStubLibrary:  // the toolkit's stub libcuda, found where no driver is installed
      return DevicePresence::none;
    case cudaErrorInsufficientDriver:
      return driver_version == 0 ? DevicePresence::none : DevicePresence::unusable;
    default:
      return DevicePresence::unusable;
  }
}

int cuda_device_count() {
  // Counted once; an unusable driver is not cached, so every caller hears of it.
  static const int count = count_devices();
  return count;
}

DeviceGuard::DeviceGuard(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) (void)cudaSetDevice(previous_);
}

}  // namespace glassbox::cuda
