#pragma once
// The CUDA host backend as PyTorch sees streams: everything is CudaHostBackend's
// but the current stream, which is PyTorch's (getCurrentCUDAStream) rather
// than glassbox's own. Capture pools pick allocations by the current stream,
// and under torch.cuda.graph() the capturing stream is PyTorch's current one.
#include <memory>
#include <string>

#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/host_allocator/host_backend.hpp"

namespace glassbox::torch {

class TorchStreamBackend final : public host_allocator::HostBackend {
 public:
  TorchStreamBackend(bool use_host_register, int register_threads) : cuda_(use_host_register, register_threads) {}

  void* allocate(std::size_t bytes) override { return cuda_.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) noexcept override { cuda_.deallocate(ptr, bytes); }
  host_allocator::EventId record_event(host_allocator::StreamId stream) override { return cuda_.record_event(stream); }
  host_allocator::EventPoll query_event(host_allocator::EventId event) noexcept override {
    return cuda_.query_event(event);
  }
  void release_event(host_allocator::EventId event) noexcept override { cuda_.release_event(event); }
  host_allocator::StreamId current_stream() const override;
  bool is_capturing(host_allocator::StreamId stream) const override { return cuda_.is_capturing(stream); }
  std::string name() const override { return "cuda"; }

 private:
  cuda::CudaHostBackend cuda_;
};

}  // namespace glassbox::torch
