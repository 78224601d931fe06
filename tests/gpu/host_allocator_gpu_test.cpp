// The caching host allocator on a real GPU, where only a GPU can tell:
// pinned memory that copies both ways (cudaHostAlloc and cudaHostRegister),
// the CUDA backend's event pool (each thread's spare event goes back to its
// own backend), and CUDA graph capture in each of its three modes. Behaviour
// any backend shows, the key property included (a block freed while queued
// work still reads it is not handed out again until that work is done), is
// in the typed suite tests/typed/host_allocator_typed.hpp, instantiated for
// CUDA in cuda_typed_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/current_stream.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "gpu_required.hpp"
#include "test_kernels.hpp"

namespace gcu = glassbox::cuda;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
using glassbox::testing::spin_then_copy;

namespace {

constexpr std::size_t kBytes = 1 << 16;
constexpr long long kSpinCycles = 400'000'000;  // ~0.2 s: far longer than the host's free/allocate/overwrite

class HostAllocatorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
    gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
    gcu::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    gcu::check_cuda(cudaMalloc(&device_, kBytes), "cudaMalloc");
  }
  void TearDown() override {
    end_any_capture();
    if (stream_) cudaStreamDestroy(stream_);
    if (device_) cudaFree(device_);
  }
  // A test that failed mid-capture leaves stream_ capturing; end it, so that
  // the next test starts clean.
  void end_any_capture() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (!stream_ || cudaStreamIsCapturing(stream_, &status) != cudaSuccess) return;
    if (status == cudaStreamCaptureStatusNone) return;
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
  }
  std::unique_ptr<gha::CachingHostAllocator> make(const char* conf,
                                                  std::shared_ptr<gcu::CudaHostBackend>* backend_out = nullptr) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    o.registry = &registry_;
    auto backend = std::make_shared<gcu::CudaHostBackend>(o.config.use_host_register, o.config.register_threads);
    if (backend_out != nullptr) *backend_out = backend;
    return std::make_unique<gha::CachingHostAllocator>(backend, o);
  }
  // Every free on a stream records an event: without the idle-stream check,
  // stream_, idle at each free, would take none.
  static constexpr const char* kEventsAlways = "idle_stream_check:false";
  // One event through its whole life: recorded at the free of a block used
  // on stream_, found complete by the next allocate's poll, given back.
  void cycle_one_event(gha::CachingHostAllocator& allocator) {
    auto a = allocator.allocate(kBytes);
    ASSERT_TRUE(allocator.record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
    allocator.free(a.ctx);
    gcu::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    allocator.free(allocator.allocate(kBytes).ctx);
  }
  // The kernel reads `block` through its device mapping after spinning.
  void launch_reader(void* block, cudaStream_t stream) {
    void* mapped = nullptr;
    gcu::check_cuda(cudaHostGetDevicePointer(&mapped, block, 0), "cudaHostGetDevicePointer");
    spin_then_copy(static_cast<unsigned char*>(mapped), static_cast<unsigned char*>(device_), kBytes, kSpinCycles,
                   stream);
    gcu::check_cuda(cudaGetLastError(), "spin_then_copy launch");
  }
  std::vector<unsigned char> what_the_kernel_read() {
    // The stream is non-blocking: a plain cudaMemcpy would not wait for it.
    gcu::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    std::vector<unsigned char> out(kBytes);
    gcu::check_cuda(cudaMemcpy(out.data(), device_, kBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return out;
  }

  double metric(const std::string& name, const gm::LabelPairs& labels) const {
    return gm::sum_series(registry_.snapshot(), name, labels);
  }
  double captured_blocks() const { return metric("glassbox_host_blocks_unrecyclable_total", {{"reason", "captured"}}); }

  gm::Registry registry_;
  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace

TEST_F(HostAllocatorGpu, PinnedMemoryCopiesBothWays) {
  for (const char* conf : {"", "use_host_register:true,register_threads:4"}) {
    SCOPED_TRACE(conf);
    auto allocator = make(conf);
    auto src = allocator->allocate(kBytes), dst = allocator->allocate(kBytes);
    cudaPointerAttributes attr{};
    gcu::check_cuda(cudaPointerGetAttributes(&attr, src.ptr), "cudaPointerGetAttributes");
    EXPECT_EQ(attr.type, cudaMemoryTypeHost);  // page-locked, known to CUDA
    for (std::size_t i = 0; i < kBytes; ++i)
      static_cast<unsigned char*>(src.ptr)[i] = static_cast<unsigned char>(i * 31);
    std::memset(dst.ptr, 0, kBytes);
    gcu::check_cuda(cudaMemcpyAsync(device_, src.ptr, kBytes, cudaMemcpyHostToDevice, stream_), "H2D");
    gcu::check_cuda(cudaMemcpyAsync(dst.ptr, device_, kBytes, cudaMemcpyDeviceToHost, stream_), "D2H");
    gcu::check_cuda(cudaStreamSynchronize(stream_), "sync");
    EXPECT_EQ(std::memcmp(src.ptr, dst.ptr, kBytes), 0);
    allocator->free(src.ctx);
    allocator->free(dst.ctx);
  }
}

// A thread keeps the event it gave back last for its next record, without
// the pool's lock; one that exits must hand it back, or every short-lived
// thread that polled would leave an event behind and the backend would
// create one more per thread.
TEST_F(HostAllocatorGpu, EventsComeBackFromThreadsThatExit) {
  std::shared_ptr<gcu::CudaHostBackend> backend;
  auto allocator = make(kEventsAlways, &backend);
  for (int i = 0; i < 64; ++i) std::thread([&] { cycle_one_event(*allocator); }).join();
  EXPECT_EQ(backend->events_created(), 1u);
}

// The spare is per thread, not per backend: a thread that moves on to
// another backend's events hands the first one's back, where other threads
// find it; one whose backend is gone is dropped (its events went with it).
// Fresh threads: the test runner's own may hold a spare from an earlier test.
TEST_F(HostAllocatorGpu, ASpareEventGoesBackToItsOwnBackend) {
  std::shared_ptr<gcu::CudaHostBackend> first, second;
  auto a = make(kEventsAlways, &first);
  auto b = make(kEventsAlways, &second);
  std::thread([&] {
    cycle_one_event(*b);  // this thread keeps the second backend's event
    cycle_one_event(*a);  // and hands it back when it keeps the first's
    std::thread([&] { cycle_one_event(*b); }).join();
  }).join();
  EXPECT_EQ(second->events_created(), 1u) << "the other thread did not find the second backend's event";
  EXPECT_EQ(first->events_created(), 1u);
  std::thread([&] {
    cycle_one_event(*b);
    b.reset();
    second.reset();  // this thread still holds the second backend's event
    cycle_one_event(*a);
  }).join();
  EXPECT_EQ(first->events_created(), 1u);
}

namespace {

// Graph capture in each of CUDA's three modes. In global mode a capture
// forbids "unsafe" calls on every thread whose own mode is not relaxed, in
// thread-local mode on the capturing thread: among them cudaHostAlloc,
// cudaFreeHost, cudaHostRegister, cudaHostUnregister and cudaEventQuery. Such
// a call fails with cudaErrorStreamCaptureUnsupported and invalidates the
// capture, so the allocator makes its own in relaxed mode.
class HostAllocatorGpuCapture : public HostAllocatorGpu, public ::testing::WithParamInterface<cudaStreamCaptureMode> {
 protected:
  // A stream beside the capturing one, and device memory for a captured
  // memset; waited for and released when the test ends.
  struct Side {
    cudaStream_t stream = nullptr;
    void* scratch = nullptr;
    Side() {
      gcu::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      gcu::check_cuda(cudaMalloc(&scratch, 64), "cudaMalloc");
    }
    ~Side() {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
      (void)cudaFree(scratch);
    }
    Side(const Side&) = delete;
    Side& operator=(const Side&) = delete;
  };
  void begin_capture() { gcu::check_cuda(cudaStreamBeginCapture(stream_, GetParam()), "cudaStreamBeginCapture"); }
  // Ends the capture and, if it survived, replays the graph once; returns the
  // capture's status ("cudaSuccess" when it survived).
  std::string end_capture_and_replay() {
    cudaGraph_t graph = nullptr;
    cudaError_t status = cudaStreamEndCapture(stream_, &graph);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      return cudaGetErrorName(status);
    }
    cudaGraphExec_t exec = nullptr;
    gcu::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    gcu::check_cuda(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
    gcu::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return cudaGetErrorName(status);
  }
  void allocate_to_pool(gha::CachingHostAllocator& allocator, gha::PoolId pool) {
    allocator.begin_allocate_to_pool(pool, [s = gcu::CudaHostBackend::id(stream_)](gha::StreamId x) { return x == s; });
  }
  void captured_copy_from(void* block) {
    gcu::check_cuda(cudaMemcpyAsync(device_, block, kBytes, cudaMemcpyHostToDevice, stream_), "captured H2D");
  }
};

cudaStreamCaptureMode thread_capture_mode() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  gcu::check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode");
  cudaStreamCaptureMode back = mode;
  gcu::check_cuda(cudaThreadExchangeStreamCaptureMode(&back), "cudaThreadExchangeStreamCaptureMode");
  return mode;
}

std::string mode_name(const ::testing::TestParamInfo<cudaStreamCaptureMode>& mode) {
  switch (mode.param) {
    case cudaStreamCaptureModeGlobal:
      return "Global";
    case cudaStreamCaptureModeThreadLocal:
      return "ThreadLocal";
    default:
      return "Relaxed";
  }
}

// allocate() as a string: empty, or what it threw.
std::string allocate_and_free(gha::CachingHostAllocator& allocator) {
  try {
    allocator.free(allocator.allocate(kBytes).ctx);
    return "";
  } catch (const glassbox::Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_P(HostAllocatorGpuCapture, ABlockUsedDuringGraphCaptureIsNeverRecycled) {
  auto allocator = make("");
  const gha::PoolId pool{1, 1};
  allocate_to_pool(*allocator, pool);
  begin_capture();
  gha::HostAllocation a;
  {
    gcu::StreamGuard g(stream_);
    a = allocator->allocate(kBytes);  // the pool has no block yet: cudaHostAlloc during the capture
    captured_copy_from(a.ptr);
    ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
    allocator->free(a.ctx);
  }
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
  allocator->end_allocate_to_pool(pool);
  {
    gcu::StreamGuard g(stream_);
    allocate_to_pool(*allocator, pool);
    auto again = allocator->allocate(kBytes);  // outside capture: warns once, still the private pool
    EXPECT_NE(again.ptr, a.ptr) << "a block a graph may replay was handed out again";
    allocator->free(again.ctx);
    allocator->end_allocate_to_pool(pool);
  }
  EXPECT_EQ(captured_blocks(), 1);
  allocator->release_pool(pool);
  allocator->release_pool(pool);
}

// Every driver call the allocator makes on its own behalf during a capture:
// a new block (cudaHostAlloc, or cudaHostRegister), empty_cache() returning
// one (cudaFreeHost, or cudaHostUnregister). The capture survives, the
// replay copies what the block holds, and the thread's mode is restored.
TEST_P(HostAllocatorGpuCapture, TheAllocatorsDriverCallsKeepTheCaptureValid) {
  for (const char* conf : {"", "use_host_register:true"}) {
    SCOPED_TRACE(conf);
    auto allocator = make(conf);
    allocator->free(allocator->allocate(2 * kBytes).ctx);  // cached: empty_cache() returns it below
    const gha::PoolId pool{2, 2};
    allocate_to_pool(*allocator, pool);
    begin_capture();
    {
      gcu::StreamGuard g(stream_);
      auto a = allocator->allocate(kBytes);
      std::memset(a.ptr, 0x5A, kBytes);
      captured_copy_from(a.ptr);
      ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
      allocator->free(a.ctx);
    }
    allocator->empty_cache();
    EXPECT_EQ(thread_capture_mode(), cudaStreamCaptureModeGlobal) << "the thread's capture mode was not restored";
    EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
    allocator->end_allocate_to_pool(pool);
    auto read = what_the_kernel_read();
    EXPECT_EQ(std::count(read.begin(), read.end(), 0x5A), static_cast<long>(kBytes));
    allocator->release_pool(pool);
  }
}

// Events recorded before the capture are polled during it (cudaEventQuery),
// by an allocate() on the capturing thread and by one on another thread; a
// kernel spinning on another stream keeps them pending.
TEST_P(HostAllocatorGpuCapture, PollingEventsDuringCaptureKeepsTheCaptureValid) {
  auto allocator = make("");
  Side side;
  auto a = allocator->allocate(kBytes);
  launch_reader(a.ptr, side.stream);
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(side.stream)));
  allocator->free(a.ctx);
  begin_capture();
  gcu::check_cuda(cudaMemsetAsync(side.scratch, 0, 64, stream_), "captured memset");
  EXPECT_EQ(allocate_and_free(*allocator), "");
  std::string other;
  std::thread([&] { other = allocate_and_free(*allocator); }).join();
  EXPECT_EQ(other, "");
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
}

// A free on a stream that does not capture, while another captures, queries
// its stream (it has run all its work): in relaxed mode, so the capture
// survives in every mode, and the block is free at once.
TEST_P(HostAllocatorGpuCapture, AStreamQueryAtAFreeDuringACaptureKeepsItValid) {
  auto allocator = make("");
  Side side;
  auto a = allocator->allocate(kBytes);
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(side.stream)));
  begin_capture();
  gcu::check_cuda(cudaMemsetAsync(side.scratch, 0, 64, stream_), "captured memset");
  allocator->free(a.ctx);
  EXPECT_EQ(metric("glassbox_host_stream_queries_total", {{"outcome", "done"}}), 1);
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
  auto again = allocator->allocate(kBytes);
  EXPECT_EQ(again.ptr, a.ptr);
  allocator->free(again.ctx);
}

// A free on a stream that does not capture but still runs work, while another
// captures: the stream query finds it busy and the free records an event on
// it, which takes no relaxed mode (CUDA allows an event record on a stream
// that does not capture in every mode: session 32's probe, H200, driver 580).
// Freed on the capturing thread and on another, the capture survives in
// every mode, and both blocks wait on their events.
TEST_P(HostAllocatorGpuCapture, AnEventRecordedAtAFreeDuringACaptureKeepsItValid) {
  auto allocator = make("");
  Side side;
  auto a = allocator->allocate(kBytes);
  auto b = allocator->allocate(kBytes);
  launch_reader(a.ptr, side.stream);  // side.stream runs it for ~0.2 s
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(side.stream)));
  ASSERT_TRUE(allocator->record_stream(b.ptr, b.ctx, gcu::CudaHostBackend::id(side.stream)));
  begin_capture();
  gcu::check_cuda(cudaMemsetAsync(side.scratch, 0, 64, stream_), "captured memset");
  allocator->free(a.ctx);
  std::thread([&] { allocator->free(b.ctx); }).join();
  EXPECT_EQ(metric("glassbox_host_stream_queries_total", {{"outcome", "busy"}}), 2);
  EXPECT_EQ(metric("glassbox_host_pending_events", {}), 2);
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
}

// The sequence: a block from before the capture, a captured copy from
// it, record_stream and free during the capture, no private pool. An event
// recorded then would be captured, and every later query of it fails
// (cudaErrorInvalidValue); none is recorded, the block stays out for good,
// and the allocator carries on.
TEST_P(HostAllocatorGpuCapture, AFreeDuringCaptureRecordsNoEventOnTheCapturingStream) {
  auto allocator = make("");
  auto a = allocator->allocate(kBytes);
  begin_capture();
  captured_copy_from(a.ptr);
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
  allocator->free(a.ctx);
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
  int failed = 0, reused = 0;
  for (int i = 0; i < 50; ++i) {
    try {
      auto b = allocator->allocate(kBytes);
      reused += b.ptr == a.ptr;
      allocator->free(b.ctx);
      allocator->process_events();
    } catch (const glassbox::Error& e) {
      if (failed++ == 0) ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(reused, 0);
  EXPECT_EQ(captured_blocks(), 1);
  EXPECT_EQ(metric("glassbox_host_event_errors_total", {}), 0);
}

// Used during capture includes recorded on a capturing stream: freed after
// the capture, the block is still read by every replay of the graph.
TEST_P(HostAllocatorGpuCapture, ABlockRecordedOnACapturingStreamIsNotRecycledAfterTheCapture) {
  auto allocator = make("");
  auto a = allocator->allocate(kBytes);  // before the capture, from the default pool
  const gha::PoolId pool{3, 3};
  allocate_to_pool(*allocator, pool);
  begin_capture();
  captured_copy_from(a.ptr);
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
  EXPECT_EQ(end_capture_and_replay(), "cudaSuccess");
  allocator->end_allocate_to_pool(pool);
  allocator->free(a.ctx);
  gcu::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  auto b = allocator->allocate(kBytes);
  EXPECT_NE(b.ptr, a.ptr) << "a block a graph replay reads was handed out again";
  allocator->free(b.ctx);
  EXPECT_EQ(captured_blocks(), 1);
  allocator->release_pool(pool);
}

INSTANTIATE_TEST_SUITE_P(Modes, HostAllocatorGpuCapture,
                         ::testing::Values(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed),
                         mode_name);
