// glassbox's CUDA stream pool: which streams it hands out, that the host
// allocator knows them (is_pool_stream) and no other stream, and how it
// refuses a device that does not exist. That the allocator defers a pool
// stream's events, and still never hands a block out while queued work reads
// it, is in the typed suite (BlocksOnAPoolStreamShareOneEventWithoutAPromise,
// ABlockOnAPoolStreamIsNotReusedWhileQueuedWorkStillReadsIt).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/cuda/stream_pool.hpp"
#include "glassbox/error.hpp"
#include "gpu_required.hpp"

namespace gcu = glassbox::cuda;

namespace {

class StreamPoolGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (glassbox::testing::lacks_devices()) GTEST_SKIP() << "no CUDA device";
    gcu::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  }
};

TEST_F(StreamPoolGpu, HandsOutADevicesStreamsRoundRobin) {
  std::vector<cudaStream_t> got;
  for (int i = 0; i < 2 * gcu::kPoolStreamsPerDevice; ++i) got.push_back(gcu::stream_from_pool(0));
  std::set<cudaStream_t> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(gcu::kPoolStreamsPerDevice));
  for (int i = 0; i < gcu::kPoolStreamsPerDevice; ++i) EXPECT_EQ(got[i], got[i + gcu::kPoolStreamsPerDevice]);
  for (cudaStream_t s : distinct) {
    EXPECT_NE(s, nullptr);
    EXPECT_TRUE(gcu::is_pool_stream(s));
    int device = -1;
    gcu::check_cuda(cudaStreamGetDevice(s, &device), "cudaStreamGetDevice");
    EXPECT_EQ(device, 0);
    unsigned flags = 0;
    gcu::check_cuda(cudaStreamGetFlags(s, &flags), "cudaStreamGetFlags");
    EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking) << "a pool stream waits for the legacy stream";
  }
  EXPECT_TRUE(distinct.count(gcu::stream_from_pool()) == 1) << "the current device's pool is device 0's here";
}

TEST_F(StreamPoolGpu, NoOtherStreamIsAPoolStream) {
  (void)gcu::stream_from_pool(0);  // the pool exists: the set is searched, not skipped
  cudaStream_t own = nullptr;
  gcu::check_cuda(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "cudaStreamCreate");
  EXPECT_FALSE(gcu::is_pool_stream(own));
  EXPECT_FALSE(gcu::is_pool_stream(nullptr));
  EXPECT_FALSE(gcu::is_pool_stream(cudaStreamPerThread));
  EXPECT_FALSE(gcu::is_pool_stream(cudaStreamLegacy));
  gcu::CudaHostBackend backend(false, 0);
  EXPECT_FALSE(backend.stream_outlives_allocator(gcu::CudaHostBackend::id(own)));
  EXPECT_TRUE(backend.stream_outlives_allocator(gcu::CudaHostBackend::id(gcu::stream_from_pool(0))));
  cudaStreamDestroy(own);
}

TEST_F(StreamPoolGpu, ThreadsShareOnePoolPerDevice) {
  std::vector<std::set<cudaStream_t>> seen(8);
  std::vector<std::thread> threads;
  for (auto& s : seen) {
    threads.emplace_back([&s] {
      for (int i = 0; i < 100; ++i) {
        cudaStream_t stream = gcu::stream_from_pool(0);
        if (gcu::is_pool_stream(stream)) s.insert(stream);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<cudaStream_t> all;
  for (auto& s : seen) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(gcu::kPoolStreamsPerDevice));
}

TEST_F(StreamPoolGpu, ADeviceThatDoesNotExistIsAUsageErrorNamingIt) {
  const int devices = gcu::cuda_device_count();
  for (int bad : {-1, devices}) {
    try {
      (void)gcu::stream_from_pool(bad);
      ADD_FAILURE() << "stream_from_pool(" << bad << ") returned";
    } catch (const glassbox::UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("no CUDA device " + std::to_string(bad)), std::string::npos) << m;
      EXPECT_NE(m.find("accepted: 0 to " + std::to_string(devices - 1)), std::string::npos) << m;
    }
  }
}

}  // namespace
