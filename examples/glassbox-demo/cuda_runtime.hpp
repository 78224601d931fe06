#pragma once
// The GPU runtime (built with glassbox::cuda only): the model trains on GPU 0
// in CUDA tensors (use_cuda()), so every part is the real one.
//
// - pinned staging: to() of the host batch, through cuda_host_allocator()
//   with record_stream on the device's stream (DeviceCopyStager);
// - handles: the cuBLAS, cuBLASLt and cuDNN handle pools, taken by each
//   step's fresh worker threads; matmul takes its cuBLAS handle from the same pool;
// - convolutions: cuDNN inside the cuDNN wrapper's state of the device (the
//   CUDA device kernels do that for every conv2d of CUDA tensors);
// - backward: the engine's worker thread of GPU 0 runs the device nodes.
// The other GPUs, if any, only take handles: DataParallel would replicate the
// model onto them, which this demo leaves out.
#include <string>
#include <vector>

#include "runtime.hpp"

namespace glassbox::demo {

class CudaRuntime final : public Runtime {
 public:
  /// Throws glassbox::Error when no GPU is visible.
  CudaRuntime();

  std::string description() const override;
  int device_count() const override { return devices_; }
  int tensor_device() const noexcept override { return kTrainingDevice; }
  const std::vector<HandleSource>& handle_sources() const override { return sources_; }
  BatchStager& stager() noexcept override { return stager_; }
  host_allocator::HostStats host_stats() const override;

 private:
  static constexpr int kTrainingDevice = 0;

  int devices_;
  std::vector<HandleSource> sources_;
  DeviceCopyStager stager_{kTrainingDevice};
};

}  // namespace glassbox::demo
