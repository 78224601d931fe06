#pragma once
// A distribution over fixed buckets (Prometheus `le` semantics: a value lands
// in the first bucket whose upper bound is >= it). observe() touches only the
// calling thread's cells.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "glassbox/metrics/cell_arena.hpp"
#include "glassbox/metrics/exemplar_slot.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "glassbox/trace/context.hpp"

namespace glassbox::metrics {

/// Thread-safety: observe() from any number of threads at once, without a
/// lock, on the calling thread's cells (its bucket, then the sum). value() and
/// scrapes do not stop writers, so a read racing with an observe() may see
/// one of its two updates and not the other; the next read has both.
///
/// An observe() made while the thread's current span is sampled also becomes
/// its bucket's exemplar (exemplar_slot.hpp); otherwise the span costs it one
/// thread-local load.
class Histogram {
 public:
  struct Config {
    std::shared_ptr<const std::vector<double>> upper_bounds;
  };
  static constexpr MetricType type = MetricType::histogram;
  static Histogram create(const Config& config);

  /// `first_cell` starts bounds->size()+1 bucket cells followed by one sum
  /// cell; `exemplars` holds one slot per bucket.
  Histogram(std::shared_ptr<const std::vector<double>> bounds, detail::CellId first_cell,
            std::shared_ptr<detail::ExemplarSlot[]> exemplars) noexcept
      : bounds_(std::move(bounds)), exemplars_(std::move(exemplars)), first_cell_(first_cell) {}

  void observe(double v) const noexcept {
    const auto& b = *bounds_;
    auto bucket = static_cast<detail::CellId>(std::lower_bound(b.begin(), b.end(), v) - b.begin());
    detail::add_u64(first_cell_ + bucket, 1);
    detail::add_f64(sum_cell(), v);
    const trace::SpanContext& span = trace::detail::current;
    if (span.sampled) [[unlikely]]
      exemplars_[bucket].record(span, v);
  }

  /// Current buckets, count and sum over all threads (takes the arena lock).
  HistogramValue value() const;
  /// Reads into `out`, a fresh snapshot or one this histogram read into
  /// before (whose bounds it keeps and whose vectors' room it reuses),
  /// without locking; the caller holds detail::lock_threads().
  void read_locked(SeriesSnapshot& out) const;

 private:
  detail::CellId sum_cell() const noexcept { return first_cell_ + static_cast<detail::CellId>(bounds_->size()) + 1; }

  std::shared_ptr<const std::vector<double>> bounds_;
  std::shared_ptr<detail::ExemplarSlot[]> exemplars_;
  detail::CellId first_cell_;
};

/// Bucket bounds growing by `factor` from `start`, `count` of them.
std::vector<double> exponential_buckets(double start, double factor, std::size_t count);

}  // namespace glassbox::metrics
