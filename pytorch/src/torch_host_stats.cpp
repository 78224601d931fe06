#include "glassbox/torch/torch_host_stats.hpp"

#include <bit>
#include <cmath>

namespace glassbox::torch {

namespace {
c10::CachingAllocator::Stat to_torch(const host_allocator::Stat& s) {
  c10::CachingAllocator::Stat t;
  t.current = s.current;
  t.peak = s.peak;
  t.allocated = s.allocated;
  t.freed = s.freed;
  return t;
}

c10::CachingAllocator::DurationStat to_torch(const host_allocator::DurationStat& s) {
  c10::CachingAllocator::DurationStat t;
  t.count = s.count;
  t.total = std::llround(s.total_us);
  t.max = std::llround(s.max_us);
  t.min = std::llround(s.min_us);
  return t;
}
}  // namespace

at::HostStats to_torch_stats(const host_allocator::HostStats& stats) {
  at::HostStats t;
  t.active_requests = to_torch(stats.active_requests);
  t.active_bytes = to_torch(stats.active_bytes);
  t.allocations = to_torch(stats.allocations);
  t.allocated_bytes = to_torch(stats.allocated_bytes);
  t.host_alloc_time = to_torch(stats.host_alloc_time);
  t.host_free_time = to_torch(stats.host_free_time);
  t.num_host_alloc = stats.num_host_alloc;
  t.num_host_free = stats.num_host_free;
  for (const auto& c : stats.classes) {
    const auto bucket = static_cast<std::size_t>(std::bit_width(c.block_size - 1));
    if (bucket < t.bucket_allocation.size()) t.bucket_allocation[bucket] += c.allocations.allocated;
  }
  return t;
}

}  // namespace glassbox::torch
