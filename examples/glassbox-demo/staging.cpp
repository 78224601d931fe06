#include "staging.hpp"

#include <cstring>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"

namespace glassbox::demo {

autograd::Tensor SimPinnedStager::stage(const Batch& batch) {
  const std::size_t bytes = batch.images.size() * sizeof(float);
  host_allocator::HostAllocation block = allocator_.allocate(bytes);
  std::memcpy(block.ptr, batch.images.data(), bytes);  // the DataLoader's pin_memory copy
  autograd::Tensor images = autograd::Tensor::zeros(batch.shape);
  copy_stream_.enqueue(
      [dst = images.mutable_data().data(), src = block.ptr, bytes, keep = images] { std::memcpy(dst, src, bytes); });
  allocator_.record_stream(block.ptr, block.ctx, host_allocator::SimHostBackend::id(copy_stream_),
                           host_allocator::StreamLife::outlives_allocator);
  // Freed with the copy still queued: the allocator holds the block back
  // until an event on the copy stream has completed, one shared by the
  // blocks of several steps (the stream outlives the allocator).
  allocator_.free(block.ctx);
  // The CPU model reads the images on the host, so the host waits for the
  // copy here; a GPU step would make its compute stream wait instead.
  copy_stream_.record().synchronize();
  return images;
}

autograd::Tensor DeviceCopyStager::stage(const Batch& batch) {
  return autograd::to(autograd::Tensor::from(batch.shape, batch.images), device_);
}

}  // namespace glassbox::demo
