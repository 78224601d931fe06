#pragma once
// Handle factories of the CUDA backend, for DeviceThreadHandlePool. Each
// creates its handle with the target device current, and checks every call.
#include <string>

#include "glassbox/cuda/cuda_check.hpp"

namespace glassbox::cuda {

struct CublasFactory {
  using handle_type = cublasHandle_t;
  std::string library() const { return "cublas"; }
  int device_count() const { return cuda_device_count(); }
  handle_type create(int device);
  void destroy(int device, handle_type h) noexcept;
};

struct CublasLtFactory {
  using handle_type = cublasLtHandle_t;
  std::string library() const { return "cublaslt"; }
  int device_count() const { return cuda_device_count(); }
  handle_type create(int device);
  void destroy(int device, handle_type h) noexcept;
};

struct CudnnFactory {
  using handle_type = cudnnHandle_t;
  std::string library() const { return "cudnn"; }
  int device_count() const { return cuda_device_count(); }
  handle_type create(int device);
  void destroy(int device, handle_type h) noexcept;
};

}  // namespace glassbox::cuda
