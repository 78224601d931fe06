// glassbox's side of the pinned host allocator comparison, with the same
// sizes and timing harness as bench/torch/host_allocator_torch.cpp.
// Arguments name the metrics to measure (default: all).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/cuda/stream_pool.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "torch/timing.hpp"

namespace {
constexpr std::size_t kBytes = 64 << 10;
namespace gcu = glassbox::cuda;

cudaStream_t thread_stream() {
  thread_local cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    gcu::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
  }();
  return stream;
}

void* cached_pair() {
  auto& allocator = gcu::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.free(a.ctx);
  return a.ptr;
}

// The least a cached pair can do, under the same harness: take a block off
// the calling thread's own free list and put it back, with no counts, no
// checks and no call into a library. What glassbox's cached pair costs
// beyond this row is its own work (the allocator's entry points, per-bucket
// counts, exact peaks, the record_stream race, the capture check). The
// blocks are null: the list's operations are what is timed.
void* thread_free_list_pair() {
  thread_local std::array<void*, 8> free_list{};
  thread_local std::size_t count = free_list.size();
  void* block = free_list[--count];
  glassbox::compare::keep(block);
  free_list[count++] = block;
  return block;
}

void* record_event_path() {
  auto& allocator = gcu::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(thread_stream()));
  allocator.free(a.ctx);
  return a.ptr;
}

// The same with work on the stream at each free, as a caller that stages a
// copy and frees the block right behind it: a 256-byte copy of the block to
// the device, queued before the free (so the stream query at the free finds
// the stream busy, and its backoff then skips the query).
void* record_event_busy() {
  thread_local void* device = [] {
    void* d = nullptr;
    gcu::check_cuda(cudaMalloc(&d, 256), "cudaMalloc");
    return d;
  }();
  auto& allocator = gcu::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  gcu::check_cuda(cudaMemcpyAsync(device, a.ptr, 256, cudaMemcpyHostToDevice, thread_stream()), "cudaMemcpyAsync");
  allocator.record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(thread_stream()));
  allocator.free(a.ctx);
  return a.ptr;
}

// The same on a stream promised to outlive the allocator (it is never
// destroyed, as PyTorch's pool streams, which its side uses): the event is
// recorded once for all the blocks freed on the stream meanwhile.
void* record_event_long_lived() {
  auto& allocator = gcu::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(thread_stream()),
                          glassbox::host_allocator::StreamLife::outlives_allocator);
  allocator.free(a.ctx);
  return a.ptr;
}

// The same on a stream of glassbox's pool, without a promise: the allocator
// knows a pool stream is never destroyed, as PyTorch's side uses its pool's.
void* record_event_pool_stream() {
  thread_local cudaStream_t stream = gcu::stream_from_pool();
  auto& allocator = gcu::cuda_host_allocator();
  auto a = allocator.allocate(kBytes);
  allocator.record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream));
  allocator.free(a.ctx);
  return a.ptr;
}

cudaEvent_t thread_event() {
  thread_local cudaEvent_t event = [] {
    cudaEvent_t e = nullptr;
    gcu::check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
  }();
  return event;
}

// One cudaEventRecord alone, on an idle stream, each thread its own event and
// stream: what a free on a stream the allocator cannot know outlives it must
// pay at the least (its queries can be shared, as one covers every earlier
// event on its stream; the record cannot be).
void* record_only() {
  cudaEvent_t event = thread_event();
  gcu::check_cuda(cudaEventRecord(event, thread_stream()), "cudaEventRecord");
  return event;
}

// The driver calls any record-event path makes, alone: one cudaEventRecord
// (at free) and one cudaEventQuery (at the next allocate).
// Their cost moves with the host; reported next to both sides as the floor.
void* record_and_query() {
  auto* event = static_cast<cudaEvent_t>(record_only());
  if (cudaError_t e = cudaEventQuery(event); e != cudaErrorNotReady) gcu::check_cuda(e, "cudaEventQuery");
  return event;
}

// The calls a record on a caller's stream makes besides the record, as
// glassbox's backend makes them (driver entry points): whether the stream
// captures (PyTorch's side asks this too) and the stream's serial (a
// StreamId is the handle, which CUDA reuses; the serial is not reused).
// Each alone, and within record_path_floor below.
gcu::CudaHostBackend& probe_backend() {
  static gcu::CudaHostBackend backend(false, 0);
  return backend;
}

void* stream_is_capturing() {
  return reinterpret_cast<void*>(
      std::uintptr_t{probe_backend().is_capturing(gcu::CudaHostBackend::id(thread_stream()))});
}

void* stream_serial() {
  return reinterpret_cast<void*>(probe_backend().stream_serial(gcu::CudaHostBackend::id(thread_stream())));
}

// The stream query a free on a caller's stream makes first (relaxed capture
// mode around cuStreamQuery): on a stream that has run all its work, it and
// the capture check are all the driver calls the pair makes.
void* stream_done() {
  return reinterpret_cast<void*>(
      std::uintptr_t{probe_backend().stream_done(gcu::CudaHostBackend::id(thread_stream()))});
}

// Every call our record path makes into the CUDA backend on a caller's
// stream when it records an event, and nothing of the allocator's: the stream's capture status and
// serial, an event recorded (8 in flight, each given back 8 records later,
// as a cache's worth of blocks waits), and every eighth time a query of
// the record four before (one query covers a cache's worth of blocks).
// What the record path costs beyond this row is the allocator's own work.
// Events still in flight when a benchmark thread ends stay the backend's,
// which destroys every event it made.
void* record_path_floor() {
  auto& backend = probe_backend();
  thread_local std::array<glassbox::host_allocator::EventId, 8> in_flight{};
  thread_local unsigned calls = 0;
  const auto stream = gcu::CudaHostBackend::id(thread_stream());
  glassbox::compare::keep(backend.is_capturing(stream));
  glassbox::compare::keep(backend.stream_serial(stream));
  const unsigned i = calls++ % in_flight.size();
  if (in_flight[i] != glassbox::host_allocator::EventId{}) backend.release_event(in_flight[i]);
  in_flight[i] = backend.record_event(stream);
  if (i == in_flight.size() - 1) glassbox::compare::keep(backend.query_event(in_flight[i - 4]).status);
  return reinterpret_cast<void*>(in_flight[i]);
}

// The driver calls of a free on a caller's idle stream, and nothing of the
// allocator's: whether the stream captures, then the query in relaxed
// capture mode (each needed: session 32's probe on an H200, driver 580, saw a
// query without relaxed mode during another thread's global capture, and a
// query of a capturing stream in any mode, refused and the capture invalidated).
void* free_driver_calls(glassbox::host_allocator::StreamId stream) {
  glassbox::compare::keep(probe_backend().is_capturing(stream));
  return reinterpret_cast<void*>(std::uintptr_t{probe_backend().stream_done(stream)});
}

void* callers_stream_floor() { return free_driver_calls(gcu::CudaHostBackend::id(thread_stream())); }

// The least any allocator's caller's-stream pair can do: the harness's
// thread free list (thread_free_list_pair) around the free's driver calls,
// the stream written into the block at the record and read back at the free.
void* minimal_pair() {
  thread_local std::array<glassbox::host_allocator::StreamId, 8> block_stream{};
  thread_local std::size_t count = block_stream.size();
  const std::size_t block = --count;
  block_stream[block] = gcu::CudaHostBackend::id(thread_stream());
  void* done = free_driver_calls(block_stream[block]);
  ++count;
  return done;
}

// Nanoseconds per call of `fn`, over `calls` calls.
template <class Fn>
double ns_per_call(Fn fn, long calls) {
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) glassbox::compare::keep(fn());
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(calls);
}

// The caller's-stream pair, its floor and the minimal pair, timed in
// alternating blocks of about a millisecond on one thread and stream, seven
// fresh threads: the driver's query moves by up to 2x within a process over
// seconds (session 32's probe), so a floor timed at another moment says
// little of what the pair's own driver calls cost. What the pair costs
// beyond the floor is the allocator's part at the same moments; the
// minimal pair's, what any allocator's would be at the least. Side
// "interleaved": reference rows.
void report_pair_over_floor() {
  struct Row {
    const char* metric;
    void* (*fn)();
    std::vector<double> ns;
  };
  std::array<Row, 3> rows{{{"host_alloc_record_event", record_event_path, {}},
                           {"callers_stream_floor", callers_stream_floor, {}},
                           {"minimal_pair", minimal_pair, {}}}};
  constexpr int kBlocks = 50;
  const long calls = std::max(1000L, glassbox::compare::calibrate(record_event_path) / kBlocks);
  for (int rep = 0; rep < 7; ++rep) {
    std::thread([&] {
      for (Row& r : rows)
        for (int i = 0; i < 1000; ++i) glassbox::compare::keep(r.fn());
      std::array<double, 3> sum{};
      for (int b = 0; b < kBlocks; ++b)
        for (std::size_t i = 0; i < rows.size(); ++i) sum[i] += ns_per_call(rows[i].fn, calls);
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i].ns.push_back(sum[i] / kBlocks);
    }).join();
  }
  for (const Row& r : rows)
    glassbox::compare::report("interleaved", r.metric, 1, 1e9 / glassbox::compare::median(r.ns));
}

// One cudaEventRecord on an idle stream, then cudaEventQuery until it has
// completed: how long the GPU takes to pass an event, which sets how many
// records of the record path are in flight (its batching waits beyond them).
void* record_until_complete() {
  auto* event = static_cast<cudaEvent_t>(record_only());
  cudaError_t e;
  while ((e = cudaEventQuery(event)) == cudaErrorNotReady) {}
  gcu::check_cuda(e, "cudaEventQuery");
  return event;
}

// Which way the frees went so far: a stream query that found the stream
// done reuses the block at once; a busy one (or none, where another thread
// was querying or the idle-stream gate skipped it) records an event, which
// costs the pair about twice as much. Said on stderr.
void say_stream_queries(const char* row) {
  const auto snapshot = glassbox::metrics::Registry::global().snapshot();
  auto queries = [&](const char* outcome) {
    return glassbox::metrics::sum_series(snapshot, "glassbox_host_stream_queries_total", {{"outcome", outcome}});
  };
  auto total = [&](const char* name) { return glassbox::metrics::sum_series(snapshot, name); };
  std::fprintf(stderr,
               "glassbox-compare-host-allocator: %s: %.0f allocations, %.0f stream queries found done, %.0f busy; "
               "%.0f group events\n",
               row, total("glassbox_host_alloc_requests_total"), queries("done"), queries("busy"),
               total("glassbox_host_group_events_total"));
}
}  // namespace

int main(int argc, char** argv) {
  if (gcu::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-host-allocator: no CUDA device\n");
    return 0;
  }
  namespace gc = glassbox::compare;
  if (gc::wanted(argc, argv, "host_alloc_cached_pair")) {
    gc::report_sweep("glassbox", "host_alloc_cached_pair", cached_pair);
    if (gc::driver_call_counter() == nullptr) {
      gc::report_sweep("harness", "thread_free_list_pair", thread_free_list_pair, std::span(gc::kShortThreadSweep, 1));
    }
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event")) {
    const std::span<const int> sweep(gc::kShortThreadSweep);
    say_stream_queries("before host_alloc_record_event @1 thr");
    gc::report_sweep("glassbox", "host_alloc_record_event", record_event_path, sweep.first(1));
    say_stream_queries("after host_alloc_record_event @1 thr");
    // Under the profiler (GLASSBOX_COMPARE_PROFILE) one thread only.
    if (!gc::profiling()) gc::report_sweep("glassbox", "host_alloc_record_event", record_event_path, sweep.subspan(1));
    // The floor at each thread count: from a few threads on the driver
    // serialises these calls, on both sides. A timing; counted, it is two
    // calls by definition.
    if (gc::driver_call_counter() == nullptr) {
      gc::report_sweep("cuda", "event_record_and_query", record_and_query, gc::kShortThreadSweep);
      gc::report_sweep("cuda", "event_record", record_only, gc::kShortThreadSweep);
      gc::report_sweep("cuda", "event_record_until_complete", record_until_complete,
                       std::span(gc::kShortThreadSweep, 1));
      gc::report_sweep("cuda", "stream_is_capturing", stream_is_capturing, std::span(gc::kShortThreadSweep, 1));
      gc::report_sweep("cuda", "stream_serial", stream_serial, std::span(gc::kShortThreadSweep, 1));
      gc::report_sweep("cuda", "stream_done", stream_done, std::span(gc::kShortThreadSweep, 1));
      gc::report_sweep("cuda", "record_path_floor", record_path_floor, std::span(gc::kShortThreadSweep, 1));
      if (!gc::profiling()) report_pair_over_floor();
    }
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event_long_lived")) {
    gc::report_sweep("glassbox", "host_alloc_record_event_long_lived", record_event_long_lived, gc::kShortThreadSweep);
  }
  if (gc::wanted(argc, argv, "host_alloc_record_event_pool_stream")) {
    gc::report_sweep("glassbox", "host_alloc_record_event_pool_stream", record_event_pool_stream,
                     gc::kShortThreadSweep);
  }
  // Last, as on PyTorch's side: its blocks, many still waiting on copies
  // at its 16-thread sweep, would weigh on the rows after it (session 28's
  // run had the promise row after it on this side only).
  if (gc::wanted(argc, argv, "host_alloc_record_event_busy")) {
    gc::report_sweep("glassbox", "host_alloc_record_event_busy", record_event_busy, gc::kShortThreadSweep);
  }
  // What the pool grew to (deferred events keep blocks out longer), and how
  // many blocks each shared event covered.
  const auto stats = gcu::cuda_host_allocator().stats();
  const auto snapshot = glassbox::metrics::Registry::global().snapshot();
  auto total = [&](const char* name) { return glassbox::metrics::sum_series(snapshot, name); };
  std::fprintf(stderr,
               "glassbox-compare-host-allocator: %lld blocks held (peak %lld), %lld bytes; %.0f group events "
               "covering %.0f blocks\n",
               static_cast<long long>(stats.allocations.current), static_cast<long long>(stats.allocations.peak),
               static_cast<long long>(stats.allocated_bytes.current), total("glassbox_host_group_events_total"),
               total("glassbox_host_group_blocks_total"));
}
