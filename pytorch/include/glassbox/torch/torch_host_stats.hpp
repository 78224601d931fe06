#pragma once
// glassbox's HostStats as PyTorch's at::HostStats, what
// torch.cuda.host_memory_stats() reports.
#include <ATen/core/CachingHostAllocator.h>

#include "glassbox/host_allocator/host_stats.hpp"

namespace glassbox::torch {

/// Same-named fields copied; times rounded to whole microseconds (PyTorch
/// keeps integers); bucket_allocation counts each size class's backend
/// allocations under PyTorch's bucket for that size, ceil(log2(block size)).
at::HostStats to_torch_stats(const host_allocator::HostStats& stats);

}  // namespace glassbox::torch
