#include "glassbox/torch/torch_stream_backend.hpp"

#include <c10/cuda/CUDAStream.h>

namespace glassbox::torch {

host_allocator::StreamId TorchStreamBackend::current_stream() const {
  return cuda::CudaHostBackend::id(c10::cuda::getCurrentCUDAStream().stream());
}

}  // namespace glassbox::torch
