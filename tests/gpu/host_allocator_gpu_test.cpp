// The caching host allocator on a real GPU, where only a GPU can tell:
// pinned memory that copies both ways (cudaHostAlloc and cudaHostRegister),
// and the CUDA backend's event pool (each thread's spare event goes back to
// its own backend). Behaviour any backend shows, the key property included
// (a block freed while queued work still reads it is not handed out again
// until that work is done), is in the typed suite
// tests/typed/host_allocator_typed.hpp, instantiated for CUDA in
// cuda_typed_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "gpu_required.hpp"

namespace gcu = glassbox::cuda;
namespace gha = glassbox::host_allocator;

namespace {

constexpr std::size_t kBytes = 1 << 16;

class HostAllocatorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
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
