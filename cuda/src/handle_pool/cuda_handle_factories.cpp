#include "glassbox/cuda/handle_pool/cuda_handle_factories.hpp"

namespace glassbox::cuda {

cublasHandle_t CublasFactory::create(int device) {
  DeviceGuard guard(device);
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  return h;
}
void CublasFactory::destroy(int device, cublasHandle_t h) noexcept {
  if (cudaSetDevice(device) == cudaSuccess) (void)cublasDestroy(h);
}

cublasLtHandle_t CublasLtFactory::create(int device) {
  DeviceGuard guard(device);
  cublasLtHandle_t h = nullptr;
  check_cublas(cublasLtCreate(&h), "cublasLtCreate");
  return h;
}
void CublasLtFactory::destroy(int device, cublasLtHandle_t h) noexcept {
  if (cudaSetDevice(device) == cudaSuccess) (void)cublasLtDestroy(h);
}

cudnnHandle_t CudnnFactory::create(int device) {
  DeviceGuard guard(device);
  cudnnHandle_t h = nullptr;
  check_cudnn(cudnnCreate(&h), "cudnnCreate");
  return h;
}
void CudnnFactory::destroy(int device, cudnnHandle_t h) noexcept {
  if (cudaSetDevice(device) == cudaSuccess) (void)cudnnDestroy(h);
}

}  // namespace glassbox::cuda
