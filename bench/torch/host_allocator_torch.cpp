// PyTorch's side of the pinned host allocator comparison:
// at::getHostAllocator(at::kCUDA), the allocator behind pin_memory().
// Arguments name the metrics to measure (default: all), as for glassbox's side.
#include <ATen/ATen.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAContext.h>

#include "timing.hpp"

namespace {
constexpr std::size_t kBytes = 64 << 10;

void* cached_pair() {
  at::DataPtr p = at::getHostAllocator(at::kCUDA)->allocate(kBytes);
  return p.get();
}

// allocate, mark used on a stream (records an event at free), free.
void* record_event_path() {
  thread_local c10::Stream stream = at::cuda::getStreamFromPool().unwrap();
  auto* allocator = at::getHostAllocator(at::kCUDA);
  at::DataPtr p = allocator->allocate(kBytes);
  allocator->record_event(p.get(), p.get_context(), stream);
  return p.get();
}

// The same with work on the stream at each free, as a caller that stages a
// copy and frees the block right behind it: a 256-byte copy of the block to
// the device, queued before the free.
void* record_event_busy() {
  thread_local c10::Stream stream = at::cuda::getStreamFromPool().unwrap();
  thread_local void* device = [] {
    void* d = nullptr;
    C10_CUDA_CHECK(cudaMalloc(&d, 256));
    return d;
  }();
  auto* allocator = at::getHostAllocator(at::kCUDA);
  at::DataPtr p = allocator->allocate(kBytes);
  const auto s = at::cuda::CUDAStream(at::cuda::CUDAStream::UNCHECKED, stream).stream();
  C10_CUDA_CHECK(cudaMemcpyAsync(device, p.get(), 256, cudaMemcpyHostToDevice, s));
  allocator->record_event(p.get(), p.get_context(), stream);
  return p.get();
}
}  // namespace

int main(int argc, char** argv) {
  at::ones({1}, at::device(at::kCUDA)).sum().item<float>();
  namespace gc = glassbox::compare;
  if (gc::wanted(argc, argv, "host_alloc_cached_pair")) {
    gc::report_sweep("pytorch", "host_alloc_cached_pair", cached_pair);
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event")) {
    gc::report_sweep("pytorch", "host_alloc_record_event", record_event_path, gc::kShortThreadSweep);
  }
  // glassbox's side of this row promises that its stream outlives the
  // allocator; PyTorch's pool streams do, but it cannot be told: the same calls.
  if (gc::wanted(argc, argv, "host_alloc_record_event_long_lived")) {
    gc::report_sweep("pytorch", "host_alloc_record_event_long_lived", record_event_path, gc::kShortThreadSweep);
  }
  // glassbox's side of this row uses a stream of glassbox's pool, as this
  // side uses one of PyTorch's, without a promise: the same calls again.
  if (gc::wanted(argc, argv, "host_alloc_record_event_pool_stream")) {
    gc::report_sweep("pytorch", "host_alloc_record_event_pool_stream", record_event_path, gc::kShortThreadSweep);
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event_busy")) {
    gc::report_sweep("pytorch", "host_alloc_record_event_busy", record_event_busy, gc::kShortThreadSweep);
  }
}
