#pragma once
// A value that goes up and down, such as handles in use. One shared atomic:
// gauges are updated on slow paths (a handle lent, a block cached), where a
// contended cache line costs nothing next to the work around it.
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

/// Thread-safety: every member may be called from any thread at once. set()
/// is a relaxed store; add(), sub() and set_max() are compare-and-swap loops
/// on the one shared word, so threads updating one gauge take turns on its
/// cache line. Counts that change on hot paths belong in an UpDownCounter.
class Gauge {
 public:
  struct Config {};
  static constexpr MetricType type = MetricType::gauge;
  static Gauge create(const Config&) { return Gauge(std::make_shared<std::atomic<std::uint64_t>>(0)); }

  explicit Gauge(std::shared_ptr<std::atomic<std::uint64_t>> bits) noexcept : bits_(std::move(bits)) {}

  void set(double v) const noexcept { bits_->store(std::bit_cast<std::uint64_t>(v), std::memory_order_relaxed); }
  void add(double delta) const noexcept {
    update([delta](double cur) { return cur + delta; });
  }
  void sub(double delta) const noexcept { add(-delta); }
  /// Raises the gauge to `v` if it is lower: a high-water mark.
  void set_max(double v) const noexcept {
    update([v](double cur) { return cur < v ? v : cur; });
  }
  double value() const noexcept { return std::bit_cast<double>(bits_->load(std::memory_order_relaxed)); }
  void read_locked(SeriesSnapshot& out) const noexcept { out.value = value(); }

 private:
  template <class Fn>
  void update(Fn fn) const noexcept {
    std::uint64_t old = bits_->load(std::memory_order_relaxed);
    while (!bits_->compare_exchange_weak(old, std::bit_cast<std::uint64_t>(fn(std::bit_cast<double>(old))),
                                         std::memory_order_relaxed)) {}
  }

  std::shared_ptr<std::atomic<std::uint64_t>> bits_;
};

}  // namespace glassbox::metrics
