#pragma once
// The CPU runtime: every part runs on its sim backend, so each is live and
// reports its metrics on a machine without a GPU.
//
// - pinned staging: CachingHostAllocator on SimHostBackend, a worker-mode copy stream;
// - handles: fake cuBLAS and cuBLASLt pools, and cuDNN handles from the cuDNN
//   wrapper's inline pool (wrapper.inline_handle(), as cuDNN callers take them);
// - convolutions: installed as the conv2d runner, every forward and backward
//   kernel runs on a cuDNN state's stream through with_cudnn_state(), worker
//   i on state i (mod states per device), threads outside a round on state 0.
//   CPU tensors have no device; the sim's device 0 stands in for the GPU.
#include <memory>

#include "glassbox/autograd/conv2d_runner.hpp"
#include "glassbox/autograd/device.hpp"
#include "glassbox/cudnn/cudnn_states.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "runtime.hpp"

namespace glassbox::demo {

class SimRuntime final : public Runtime {
 public:
  SimRuntime();
  /// Restores the conv2d runner it replaced.
  ~SimRuntime() override;
  SimRuntime(const SimRuntime&) = delete;
  SimRuntime& operator=(const SimRuntime&) = delete;

  std::string description() const override { return "cpu (sim backends)"; }
  int device_count() const override { return 1; }
  int tensor_device() const noexcept override { return autograd::kCpu; }
  const std::vector<HandleSource>& handle_sources() const override { return sources_; }
  BatchStager& stager() noexcept override { return stager_; }
  host_allocator::HostStats host_stats() const override { return allocator_.stats(); }

 private:
  void run_in_cudnn_state(const std::function<void()>& kernel);

  // Before the allocator, so that it outlives it (SimPinnedStager).
  sim::SimStream copy_stream_{sim::SimStream::Mode::worker, "copy"};
  std::shared_ptr<host_allocator::SimHostBackend> host_backend_ = std::make_shared<host_allocator::SimHostBackend>();
  host_allocator::CachingHostAllocator allocator_{host_backend_};
  sim::SimStream compute_stream_{sim::SimStream::Mode::worker, "compute"};
  cudnn::CudnnStates<cudnn::SimCudnnBackend> cudnn_{cudnn::SimCudnnBackend{}, cudnn::CudnnStatesOptions::from_env()};
  std::vector<HandleSource> sources_;
  SimPinnedStager stager_{allocator_, copy_stream_};
  autograd::Conv2dRunner previous_runner_;
};

}  // namespace glassbox::demo
