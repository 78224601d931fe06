#pragma once
// A monotonically increasing count. Handles are cheap to copy and stay valid
// for the life of the process; inc() touches only the calling thread's cell.
#include <cstdint>

#include "glassbox/metrics/cell_arena.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

/// Thread-safety: inc() from any number of threads at once, without a lock
/// (a thread's very first metric update registers its cells under the
/// arena's lock, once). value() and scrapes sum every thread's cell, so an
/// inc() racing with them is counted in that read or in the next.
class Counter {
 public:
  struct Config {};
  static constexpr MetricType type = MetricType::counter;
  static Counter create(const Config&);

  explicit Counter(detail::CellId cell) noexcept : cell_(cell) {}

  /// Thread-safe, lock-free, about a nanosecond: a relaxed load and store on
  /// a cell only this thread writes.
  void inc(std::uint64_t n = 1) const noexcept { detail::add_u64(cell_, n); }

  /// Current total over all threads (takes the arena lock; not for hot paths).
  std::uint64_t value() const;
  void read_locked(SeriesSnapshot& out) const;

 private:
  detail::CellId cell_;
};

}  // namespace glassbox::metrics
