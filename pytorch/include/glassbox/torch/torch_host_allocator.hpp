#pragma once
// glassbox's caching pinned-host allocator behind PyTorch's at::HostAllocator
// interface, so that pin_memory(), pinned empty(), non_blocking copies
// (record_event), torch.cuda.host_memory_stats() and CUDA graph capture with
// private pools all run on it once it is registered (install.hpp).
//
// Where PyTorch's allocator answers false, this one does too: record_event on
// memory it did not hand out (a non_blocking copy of pageable memory calls it
// for every copy) returns false rather than throwing, and counts no usage
// error: it is no misuse (CachingHostAllocator::try_record_stream). Such a
// record is passed on to `previous` (PyTorch's allocator, when
// installed after it had handed out pinned memory), whose blocks stay its own.
//
// Thread-safety: as CachingHostAllocator, every member from any thread.
#include <ATen/core/CachingHostAllocator.h>

#include "glassbox/host_allocator/caching_host_allocator.hpp"

namespace glassbox::torch {

class TorchHostAllocator final : public at::HostAllocator {
 public:
  /// `previous` may be null; it must outlive this (PyTorch's is static).
  TorchHostAllocator(host_allocator::CachingHostAllocator& allocator, at::HostAllocator* previous) noexcept
      : allocator_(allocator), previous_(previous) {}

  /// A CPU DataPtr whose context is our block; its deleter frees the block.
  at::DataPtr allocate(size_t size) override;
  bool record_event(void* ptr, void* ctx, c10::Stream stream) override;
  /// Ours and `previous`'s cache: blocks PyTorch cached before install too.
  void empty_cache() override;
  /// Ours only: `previous`'s blocks are not counted.
  at::HostStats get_stats() override;
  void reset_accumulated_stats() override;
  void reset_peak_stats() override;
  void begin_allocate_to_pool(c10::MempoolId_t pool_id, std::function<bool(c10::Stream)> filter) override;
  void end_allocate_to_pool(c10::MempoolId_t pool_id) override;
  void release_pool(c10::MempoolId_t pool_id) override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  host_allocator::CachingHostAllocator& allocator() noexcept { return allocator_; }

 private:
  host_allocator::CachingHostAllocator& allocator_;
  at::HostAllocator* previous_;
};

}  // namespace glassbox::torch
