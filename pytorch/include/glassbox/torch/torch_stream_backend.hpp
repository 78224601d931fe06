#pragma once
// The CUDA host backend as PyTorch sees streams: everything is CudaHostBackend's
// but the current stream, which is PyTorch's (getCurrentCUDAStream) rather
// than glassbox's own. Capture pools pick allocations by the current stream,
// and under torch.cuda.graph() the capturing stream is PyTorch's current one.
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/host_allocator/forwarding_host_backend.hpp"

namespace glassbox::torch {

class TorchStreamBackend final : public host_allocator::ForwardingHostBackend<cuda::CudaHostBackend> {
 public:
  TorchStreamBackend(bool use_host_register, int register_threads)
      : ForwardingHostBackend(use_host_register, register_threads) {}

  host_allocator::StreamId current_stream() const override;
};

}  // namespace glassbox::torch
