#include "glassbox/torch/torch_host_allocator.hpp"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <utility>

#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/error.hpp"
#include "glassbox/torch/install.hpp"
#include "glassbox/torch/torch_host_stats.hpp"

namespace glassbox::torch {

namespace {
// PyTorch reports c10 errors to Python as its own exception types; a
// glassbox error passing through its C++ would reach Python as an unknown
// one. Out-of-memory becomes torch.OutOfMemoryError, the rest RuntimeError.
template <typename F>
decltype(auto) as_torch_errors(F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const OutOfMemoryError& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  } catch (const Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

host_allocator::PoolId to_pool(c10::MempoolId_t id) {
  return {static_cast<std::uint64_t>(id.first), static_cast<std::uint64_t>(id.second)};
}

host_allocator::StreamId to_stream_id(c10::Stream stream) {
  return cuda::CudaHostBackend::id(c10::cuda::CUDAStream(stream).stream());
}

// What PyTorch's capture filter takes: the stream on the current device (a
// capture's allocations run on its device).
c10::Stream to_torch_stream(host_allocator::StreamId id) {
  return c10::cuda::getStreamFromExternal(reinterpret_cast<cudaStream_t>(id), c10::cuda::current_device()).unwrap();
}

void free_block(void* ctx) { installed()->allocator().free(ctx); }
}  // namespace

at::DataPtr TorchHostAllocator::allocate(size_t size) {
  const host_allocator::HostAllocation a = as_torch_errors([&] { return allocator_.allocate(size); });
  return {a.ptr, a.ctx, &free_block, at::Device(at::DeviceType::CPU)};
}

// PyTorch's copy kernel asks about pageable memory too: not ours, and no
// misuse, so it is passed on (PyTorch's own blocks from before install())
// or answered false, as PyTorch answers, without counting an error.
bool TorchHostAllocator::record_event(void* ptr, void* ctx, c10::Stream stream) {
  using Outcome = host_allocator::CachingHostAllocator::RecordOutcome;
  switch (allocator_.try_record_stream(ptr, ctx, to_stream_id(stream))) {
    case Outcome::recorded:
      return true;
    case Outcome::freed:
      return false;  // counted: glassbox_host_usage_errors_total{error="record_stream_after_free"}
    case Outcome::unknown_memory:
      break;
  }
  return previous_ != nullptr && previous_->record_event(ptr, ctx, stream);
}

void TorchHostAllocator::empty_cache() {
  as_torch_errors([&] { allocator_.empty_cache(); });
  if (previous_ != nullptr) previous_->empty_cache();
}

at::HostStats TorchHostAllocator::get_stats() { return to_torch_stats(allocator_.stats()); }

void TorchHostAllocator::reset_accumulated_stats() { allocator_.reset_accumulated_stats(); }

void TorchHostAllocator::reset_peak_stats() { allocator_.reset_peak_stats(); }

void TorchHostAllocator::begin_allocate_to_pool(c10::MempoolId_t pool_id, std::function<bool(c10::Stream)> filter) {
  as_torch_errors([&] {
    allocator_.begin_allocate_to_pool(to_pool(pool_id), [filter = std::move(filter)](host_allocator::StreamId s) {
      return filter(to_torch_stream(s));
    });
  });
}

void TorchHostAllocator::end_allocate_to_pool(c10::MempoolId_t pool_id) {
  as_torch_errors([&] { allocator_.end_allocate_to_pool(to_pool(pool_id)); });
}

void TorchHostAllocator::release_pool(c10::MempoolId_t pool_id) {
  as_torch_errors([&] { allocator_.release_pool(to_pool(pool_id)); });
}

void TorchHostAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

}  // namespace glassbox::torch
