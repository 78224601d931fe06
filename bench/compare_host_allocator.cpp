// glassbox's side of the pinned host allocator comparison, with the same
// sizes and timing harness as bench/torch/host_allocator_torch.cpp.
// Arguments name the metrics to measure (default: all).
#include "glassbox/backend/cuda_check.hpp"
#include "glassbox/backend/cuda_host_backend.hpp"
#include "torch/timing.hpp"

namespace {
constexpr std::size_t kBytes = 64 << 10;
namespace gb = glassbox::backend;

cudaStream_t thread_stream() {
  thread_local cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    gb::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }();
  return stream;
}

void* cached_pair() {
  auto& allocator = gb::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.free(a.ctx);
  return a.ptr;
}

void* record_event_path() {
  auto& allocator = gb::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.record_stream(a.ptr, a.ctx, gb::CudaHostBackend::id(thread_stream()));
  allocator.free(a.ctx);
  return a.ptr;
}

// The driver calls any record-event path makes, alone: one cudaEventRecord
// (at free) and one cudaEventQuery (at the next allocate) on an idle stream.
// Their cost moves with the host; reported next to both sides as the floor.
void* record_and_query() {
  thread_local cudaEvent_t event = [] {
    cudaEvent_t e = nullptr;
    gb::check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
  }();
  gb::check_cuda(cudaEventRecord(event, thread_stream()), "cudaEventRecord");
  if (cudaError_t e = cudaEventQuery(event); e != cudaErrorNotReady) gb::check_cuda(e, "cudaEventQuery");
  return event;
}
}  // namespace

int main(int argc, char** argv) {
  if (gb::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-host-allocator: no CUDA device\n");
    return 0;
  }
  namespace gc = glassbox::compare;
  if (gc::wanted(argc, argv, "host_alloc_cached_pair")) {
    gc::report_sweep("glassbox", "host_alloc_cached_pair", cached_pair);
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event")) {
    gc::report_sweep("glassbox", "host_alloc_record_event", record_event_path, gc::kShortThreadSweep);
    gc::report("cuda", "event_record_and_query", 1,
               gc::median_calls_per_second(record_and_query, 1, gc::calibrate(record_and_query)));
  }
}
