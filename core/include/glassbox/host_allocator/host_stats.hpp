#pragma once
// The allocator's statistics, as PyTorch's HostStats, per size class and in total.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace glassbox::host_allocator {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;  ///< increases since the last reset_accumulated_stats
  std::int64_t freed = 0;      ///< decreases since the last reset_accumulated_stats

  void increase(std::int64_t n) noexcept;
  void decrease(std::int64_t n) noexcept;
};

struct DurationStat {
  std::int64_t count = 0;
  double total_us = 0;
  double max_us = 0;
  double min_us = 0;

  void record(double us) noexcept;
};

struct ClassStats {
  std::size_t block_size = 0;
  Stat allocations;  ///< host blocks of this size held
  Stat allocated_bytes;
  /// Blocks handed out and not yet reusable (in use, or waiting on events);
  /// blocks in thread caches are free. `peak` is the exact highest count of
  /// such blocks, thread caches on or off (a hand-out and a free that overlap
  /// may count in either order).
  Stat active_requests;
  Stat active_bytes;
  std::int64_t requests = 0;    ///< allocate() calls of this class since the last reset
  std::int64_t cache_hits = 0;  ///< of which served from a cache
};

struct HostStats {
  Stat allocations;      ///< host blocks held (backend allocations)
  Stat allocated_bytes;  ///< pinned bytes held: cached or in use
  Stat active_requests;  ///< sums over classes; peaks add class peaks (an upper bound)
  Stat active_bytes;
  std::int64_t num_host_alloc = 0;
  std::int64_t num_host_free = 0;
  DurationStat host_alloc_time;
  DurationStat host_free_time;
  std::int64_t pending_events = 0;
  std::int64_t cached_blocks = 0;  ///< free blocks: shared free lists (every pool) and thread caches
  std::int64_t cached_bytes = 0;
  /// Only classes that ever held a block.
  std::vector<ClassStats> classes;
};

}  // namespace glassbox::host_allocator
