#include "glassbox/cuda/cuda_check.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {
std::string current_device_text() {
  int d = -1;
  return cudaGetDevice(&d) == cudaSuccess ? " on device " + std::to_string(d) : "";
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

int cuda_device_count() noexcept {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no driver" error
      return 0;
    }
    return n;
  }();
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
