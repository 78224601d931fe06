#pragma once
// A value that goes up and down and can be set, such as handles in use or
// bytes reserved. add() is as cheap as a counter's inc(): each thread adds to
// its own cell, so threads adding to one gauge never share a written cache
// line. set() must still read as the set value, whatever other threads added
// before it, so a gauge is a base plus per-thread deltas tagged with an epoch:
//   set(v)  stores v as the base and starts a new epoch (a seqlock write on
//           the gauge's shared word, so concurrent sets take turns);
//   add(d)  reads the epoch (a read-only shared line) and adds d to this
//           thread's delta, dropping first a delta left from an older epoch;
//   value   is the base plus the deltas tagged with the base's epoch, read
//           again when a set() ran meanwhile.
// An add that races with a set() lands before or after it, as it would with
// one shared atomic.
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#include "glassbox/metrics/cell_arena.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

/// Thread-safety: every member may be called from any thread at once.
/// add()/sub() are lock-free and touch only the calling thread's cells;
/// set() and set_max() write the gauge's shared word; value() and scrapes
/// take the arena lock and sum every thread's cell.
class Gauge {
 public:
  struct Config {};
  static constexpr MetricType type = MetricType::gauge;
  static Gauge create(const Config&);

  /// Thread-safe, lock-free, a few nanoseconds.
  void add(double delta) const noexcept {
    detail::add_epoch_delta(cells_, shared_->epoch.load(std::memory_order_acquire), delta);
  }
  void sub(double delta) const noexcept { add(-delta); }
  /// Replaces the value, including what any thread added before.
  void set(double v) const noexcept;
  /// Raises the gauge to `v` if it is lower: a high-water mark. Reads the
  /// value (the arena lock), so keep it off hot paths: compare against a
  /// local maximum first.
  void set_max(double v) const;

  /// Current value (takes the arena lock; not for hot paths).
  double value() const;
  void read_locked(SeriesSnapshot& out) const { out.value = value_locked(); }

 private:
  // Even when no set() is under way; written only by set() and set_max().
  struct Shared {
    std::atomic<std::uint64_t> epoch{0};
    std::atomic<std::uint64_t> base_bits{0};
  };

  Gauge(std::shared_ptr<Shared> shared, detail::CellId cells) noexcept : shared_(std::move(shared)), cells_(cells) {}
  double value_locked() const;
  // Starts epoch `from` + 1 with base `v` if the epoch is still `from`.
  bool try_set(std::uint64_t from, double v) const noexcept;

  std::shared_ptr<Shared> shared_;
  detail::CellId cells_;  ///< the (epoch, delta) pair
};

}  // namespace glassbox::metrics
