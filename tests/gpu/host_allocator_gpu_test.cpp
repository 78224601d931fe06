// The caching host allocator on a real GPU: pinned memory, copies both ways,
// and the property that matters most: a block freed while a kernel still
// reads it is not handed out again until that kernel is done.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "test_kernels.hpp"

namespace gcu = glassbox::cuda;
namespace gha = glassbox::host_allocator;
using glassbox::testing::spin_then_copy;

namespace {

constexpr std::size_t kBytes = 1 << 16;
constexpr long long kSpinCycles = 400'000'000;  // ~0.2 s: far longer than the host's free/allocate/overwrite

class HostAllocatorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gcu::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
    gcu::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    gcu::check_cuda(cudaMalloc(&device_, kBytes), "cudaMalloc");
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (device_) cudaFree(device_);
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
  void launch_reader(void* block) {
    void* mapped = nullptr;
    gcu::check_cuda(cudaHostGetDevicePointer(&mapped, block, 0), "cudaHostGetDevicePointer");
    spin_then_copy(static_cast<unsigned char*>(mapped), static_cast<unsigned char*>(device_), kBytes, kSpinCycles,
                   stream_);
    gcu::check_cuda(cudaGetLastError(), "spin_then_copy launch");
  }
  std::vector<unsigned char> what_the_kernel_read() {
    // The stream is non-blocking: a plain cudaMemcpy would not wait for it.
    gcu::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    std::vector<unsigned char> out(kBytes);
    gcu::check_cuda(cudaMemcpy(out.data(), device_, kBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return out;
  }

  glassbox::metrics::Registry registry_;
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

TEST_F(HostAllocatorGpu, AFreedBlockIsNotReusedWhileAKernelStillReadsIt) {
  auto allocator = make("");
  auto a = allocator->allocate(kBytes);
  std::memset(a.ptr, 0xAB, kBytes);
  launch_reader(a.ptr);
  ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
  allocator->free(a.ctx);
  auto b = allocator->allocate(kBytes);  // at once, while the kernel spins
  std::memset(b.ptr, 0xCD, kBytes);
  EXPECT_NE(b.ptr, a.ptr);
  auto read = what_the_kernel_read();
  EXPECT_EQ(std::count(read.begin(), read.end(), 0xAB), static_cast<long>(kBytes))
      << "the kernel saw overwritten bytes";
  allocator->free(b.ctx);
  gcu::check_cuda(cudaStreamSynchronize(stream_), "sync");
  auto c = allocator->allocate(kBytes);  // the kernel is done: a's block may come back now
  EXPECT_TRUE(c.ptr == a.ptr || c.ptr == b.ptr);
  EXPECT_EQ(allocator->stats().allocations.current, 2);
  allocator->free(c.ctx);
}

// The control: without record_stream the block comes straight back and the
// kernel reads the overwrite, which shows the test above can see a failure.
TEST_F(HostAllocatorGpu, WithoutRecordStreamTheOverwriteIsVisible) {
  auto allocator = make("");
  auto a = allocator->allocate(kBytes);
  std::memset(a.ptr, 0xAB, kBytes);
  launch_reader(a.ptr);
  allocator->free(a.ctx);
  auto b = allocator->allocate(kBytes);
  ASSERT_EQ(b.ptr, a.ptr);
  std::memset(b.ptr, 0xCD, kBytes);
  auto read = what_the_kernel_read();
  EXPECT_GT(std::count(read.begin(), read.end(), 0xCD), 0);
  allocator->free(b.ctx);
}

TEST_F(HostAllocatorGpu, ABlockUsedDuringGraphCaptureIsNeverRecycled) {
  auto allocator = make("");
  const gha::PoolId pool{1, 1};
  allocator->begin_allocate_to_pool(pool, [&](gha::StreamId s) { return s == gcu::CudaHostBackend::id(stream_); });
  gcu::check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  gha::HostAllocation a;
  {
    gcu::CudaStreamGuard g(stream_);
    a = allocator->allocate(kBytes);
    gcu::check_cuda(cudaMemcpyAsync(device_, a.ptr, kBytes, cudaMemcpyHostToDevice, stream_), "captured H2D");
    ASSERT_TRUE(allocator->record_stream(a.ptr, a.ctx, gcu::CudaHostBackend::id(stream_)));
    allocator->free(a.ctx);
  }
  cudaGraph_t graph = nullptr;
  gcu::check_cuda(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
  allocator->end_allocate_to_pool(pool);
  cudaGraphExec_t exec = nullptr;
  gcu::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  gcu::check_cuda(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
  gcu::check_cuda(cudaStreamSynchronize(stream_), "sync");
  {
    gcu::CudaStreamGuard g(stream_);
    allocator->begin_allocate_to_pool(pool, [&](gha::StreamId s) { return s == gcu::CudaHostBackend::id(stream_); });
    auto again = allocator->allocate(kBytes);  // outside capture: warns once, still the private pool
    EXPECT_NE(again.ptr, a.ptr) << "a block a graph may replay was handed out again";
    allocator->free(again.ctx);
    allocator->end_allocate_to_pool(pool);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  allocator->release_pool(pool);
  allocator->release_pool(pool);
}

// A thread keeps the event it gave back last for its next record, without
// the pool's lock; one that exits must hand it back, or every short-lived
// thread that polled would leave an event behind and the backend would
// create one more per thread.
TEST_F(HostAllocatorGpu, EventsComeBackFromThreadsThatExit) {
  std::shared_ptr<gcu::CudaHostBackend> backend;
  auto allocator = make("", &backend);
  for (int i = 0; i < 64; ++i) std::thread([&] { cycle_one_event(*allocator); }).join();
  EXPECT_EQ(backend->events_created(), 1u);
}

// The spare is per thread, not per backend: a thread that moves on to
// another backend's events hands the first one's back, where other threads
// find it; one whose backend is gone is dropped (its events went with it).
// Fresh threads: the test runner's own may hold a spare from an earlier test.
TEST_F(HostAllocatorGpu, ASpareEventGoesBackToItsOwnBackend) {
  std::shared_ptr<gcu::CudaHostBackend> first, second;
  auto a = make("", &first);
  auto b = make("", &second);
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
