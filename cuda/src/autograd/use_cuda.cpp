// use_cuda() in a CUDA build: installs the CUDA device kernels.
#include "glassbox/autograd/use_cuda.hpp"

#include "glassbox/autograd/device_kernels.hpp"
#include "glassbox/cuda/autograd/cuda_device_kernels.hpp"

namespace glassbox::cuda {

CudaDeviceKernels& cuda_device_kernels() {
  static auto* kernels = new CudaDeviceKernels();
  return *kernels;
}

}  // namespace glassbox::cuda

namespace glassbox::autograd {

void use_cuda() { install_device_kernels(cuda::cuda_device_kernels()); }

}  // namespace glassbox::autograd
