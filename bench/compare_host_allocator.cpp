// glassbox's side of the pinned host allocator comparison, with the same
// sizes and timing harness as bench/torch/host_allocator_torch.cpp.
#include "glassbox/backend/cuda_check.hpp"
#include "glassbox/backend/cuda_host_backend.hpp"
#include "torch/timing.hpp"

namespace {
constexpr std::size_t kBytes = 64 << 10;
namespace gb = glassbox::backend;

void* cached_pair() {
  auto& allocator = gb::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.free(a.ctx);
  return a.ptr;
}

void* record_event_path() {
  thread_local cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    gb::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }();
  auto& allocator = gb::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.record_stream(a.ptr, a.ctx, gb::CudaHostBackend::id(stream));
  allocator.free(a.ctx);
  return a.ptr;
}
}  // namespace

int main() {
  if (gb::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-host-allocator: no CUDA device\n");
    return 0;
  }
  namespace gc = glassbox::compare;
  const long pair_calls = gc::calibrate(cached_pair);
  for (int threads : {1, 2, 4, 8, 16}) {
    gc::report("glassbox", "host_alloc_cached_pair", threads, gc::median_calls_per_second(cached_pair, threads, pair_calls));
  }
  const long record_calls = gc::calibrate(record_event_path);
  for (int threads : {1, 4, 16}) {
    gc::report("glassbox", "host_alloc_record_event", threads,
               gc::median_calls_per_second(record_event_path, threads, record_calls));
  }
}
