#pragma once
// Switching device tensors to CUDA memory.
namespace glassbox::autograd {

/// Installs the CUDA device kernels (see device_kernels.hpp): from then on a
/// tensor made on device d >= 0 lives in the memory of GPU d and its ops run
/// on GPU d's stream. Call it before making any device tensor (it throws while
/// one kept in host memory is alive); calling it again does nothing. Throws
/// glassbox::Error when glassbox was built without CUDA support or no GPU is
/// visible. Defined by glassbox::cuda (link it) in a
/// CUDA build, by glassbox::core otherwise.
void use_cuda();

}  // namespace glassbox::autograd
