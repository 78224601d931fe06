#pragma once
// A count that goes up and down on hot paths (blocks active, events pending),
// exposed as a Prometheus gauge. Each thread adds to its own cell, so threads
// never share a cache line; the value is the sum of all cells (a thread may
// hold a negative share when it frees what another took). A Gauge adds the
// same way but can also be set, which costs it an epoch check per add.
#include <cstdint>

#include "glassbox/metrics/cell_arena.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

class UpDownCounter {
 public:
  struct Config {};
  static constexpr MetricType type = MetricType::gauge;
  static UpDownCounter create(const Config&);

  explicit UpDownCounter(detail::CellId cell) noexcept : cell_(cell) {}

  /// Thread-safe, lock-free, about a nanosecond.
  void add(std::int64_t n) const noexcept { detail::add_u64(cell_, static_cast<std::uint64_t>(n)); }

  /// Current sum over all threads (takes the arena lock; not for hot paths).
  std::int64_t value() const;
  void read_locked(SeriesSnapshot& out) const;

 private:
  detail::CellId cell_;
};

}  // namespace glassbox::metrics
