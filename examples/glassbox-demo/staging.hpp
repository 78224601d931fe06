#pragma once
// How a batch reaches the model: staged in a pinned block from the caching
// host allocator and copied on a copy stream, as a DataLoader with
// pin_memory=True followed by a non_blocking copy does.
#include "data.hpp"
#include "glassbox/autograd/tensor.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/sim/sim_stream.hpp"

namespace glassbox::demo {

/// Per device kind; make_runtime() picks one.
class BatchStager {
 public:
  virtual ~BatchStager() = default;
  /// The batch's images as a tensor the model can read, on the runtime's
  /// tensor device.
  virtual autograd::Tensor stage(const Batch& batch) = 0;
};

/// For the CPU: a pinned block from `allocator` (on the sim host backend),
/// the "device" copy queued on `copy_stream`, record_stream so the block is
/// reused only after that copy has run, and the block freed at once.
/// Thread-safety: stage() may be called from one thread at a time.
class SimPinnedStager final : public BatchStager {
 public:
  /// Both must outlive the stager, and `copy_stream` the allocator too: it is
  /// promised to (StreamLife::outlives_allocator), so its events are shared.
  SimPinnedStager(host_allocator::CachingHostAllocator& allocator, sim::SimStream& copy_stream)
      : allocator_(allocator), copy_stream_(copy_stream) {}
  autograd::Tensor stage(const Batch& batch) override;

 private:
  host_allocator::CachingHostAllocator& allocator_;
  sim::SimStream& copy_stream_;
};

/// For a GPU: to(images, device), whose upload of CUDA tensors is the pinned
/// path itself (a block of cuda_host_allocator(), the copy queued on the
/// device's stream, record_stream, the block freed at once), so the host
/// never waits for the copy: later ops on the device are queued behind it.
/// Thread-safety: stage() may be called from any thread.
class DeviceCopyStager final : public BatchStager {
 public:
  explicit DeviceCopyStager(int device) : device_(device) {}
  autograd::Tensor stage(const Batch& batch) override;

 private:
  int device_;
};

}  // namespace glassbox::demo
