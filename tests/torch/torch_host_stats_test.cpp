// glassbox's HostStats as PyTorch's at::HostStats (torch.cuda.host_memory_stats()).
#include "glassbox/torch/torch_host_stats.hpp"

#include <gtest/gtest.h>

namespace gh = glassbox::host_allocator;

namespace {
gh::Stat stat(std::int64_t current, std::int64_t peak, std::int64_t allocated, std::int64_t freed) {
  gh::Stat s;
  s.current = current;
  s.peak = peak;
  s.allocated = allocated;
  s.freed = freed;
  return s;
}

void expect_same(const c10::CachingAllocator::Stat& t, const gh::Stat& s) {
  EXPECT_EQ(t.current, s.current);
  EXPECT_EQ(t.peak, s.peak);
  EXPECT_EQ(t.allocated, s.allocated);
  EXPECT_EQ(t.freed, s.freed);
}
}  // namespace

TEST(TorchHostStats, CopiesEachStatToItsNamesake) {
  gh::HostStats s;
  s.allocations = stat(1, 2, 3, 4);
  s.allocated_bytes = stat(5, 6, 7, 8);
  s.active_requests = stat(9, 10, 11, 12);
  s.active_bytes = stat(13, 14, 15, 16);
  s.num_host_alloc = 17;
  s.num_host_free = 18;
  const at::HostStats t = glassbox::torch::to_torch_stats(s);
  expect_same(t.allocations, s.allocations);
  expect_same(t.allocated_bytes, s.allocated_bytes);
  expect_same(t.active_requests, s.active_requests);
  expect_same(t.active_bytes, s.active_bytes);
  EXPECT_EQ(t.num_host_alloc, 17);
  EXPECT_EQ(t.num_host_free, 18);
}

TEST(TorchHostStats, RoundsTimesToWholeMicroseconds) {
  gh::HostStats s;
  s.host_alloc_time = {.count = 3, .total_us = 10.6, .max_us = 7.4, .min_us = 1.5};
  s.host_free_time = {.count = 1, .total_us = 0.4, .max_us = 0.4, .min_us = 0.4};
  const at::HostStats t = glassbox::torch::to_torch_stats(s);
  EXPECT_EQ(t.host_alloc_time.count, 3);
  EXPECT_EQ(t.host_alloc_time.total, 11);
  EXPECT_EQ(t.host_alloc_time.max, 7);
  EXPECT_EQ(t.host_alloc_time.min, 2);
  EXPECT_EQ(t.host_free_time.total, 0);
}

// PyTorch's bucket of a size is ceil(log2(size)); a class of 48 KiB (pow2x4)
// lands in the 64 KiB bucket with the 64 KiB class.
TEST(TorchHostStats, CountsBackendAllocationsPerPowerOfTwoBucket) {
  gh::HostStats s;
  gh::ClassStats c48;
  c48.block_size = 48 << 10;
  c48.allocations = stat(1, 1, 2, 1);
  gh::ClassStats c64;
  c64.block_size = 64 << 10;
  c64.allocations = stat(1, 1, 3, 0);
  gh::ClassStats c4k;
  c4k.block_size = 4096;
  c4k.allocations = stat(1, 1, 1, 0);
  s.classes = {c4k, c48, c64};
  const at::HostStats t = glassbox::torch::to_torch_stats(s);
  EXPECT_EQ(t.bucket_allocation[16], 5);
  EXPECT_EQ(t.bucket_allocation[12], 1);
  EXPECT_EQ(t.bucket_allocation[15], 0);
}
