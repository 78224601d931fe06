#pragma once
// What a handle pool reports: per {library, device} metric series (resolved
// once per device, on the pool's slow path) and an NVTX range plus a span
// around every handle creation. Not a template, so the pool stays small.
#include <chrono>
#include <string>
#include <string_view>

#include "glassbox/metrics/registry.hpp"
#include "glassbox/nvtx/range.hpp"
#include "glassbox/trace/counter_track.hpp"
#include "glassbox/trace/span.hpp"

namespace glassbox::handle_pool {

struct PoolSeries {
  metrics::Counter created;
  metrics::Gauge in_use;
  metrics::Gauge available;
  metrics::Gauge high_water_mark;
  metrics::Histogram create_seconds;
  /// Handles lent, as a counter track (trace file, NVTX):
  /// "glassbox.handles_in_use{library=...,device=...}".
  trace::CounterTrack in_use_track;

  /// Both the gauge and the track; call under the pool's mutex, so the track
  /// gets the values in order.
  void in_use_changed(double delta, std::size_t in_use_now) {
    in_use.add(delta);
    in_use_track.set(static_cast<std::int64_t>(in_use_now));
  }

  static PoolSeries resolve(metrics::Registry& registry, const std::string& library, int device);
};

/// Brackets one handle creation: NVTX range `glassbox.handle_pool.create:<library>`
/// in category handle_pool, span `glassbox.handle_pool.create` with attributes
/// glassbox.library and glassbox.device, and the creation-time histogram.
class CreationScope {
 public:
  CreationScope(const std::string& library, int device);
  /// Call once creation returned a handle; without it the span ends as an error.
  void succeeded(const PoolSeries& series) noexcept;
  void failed(const char* what) noexcept;

 private:
  nvtx::ScopedRange range_;
  trace::Span span_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace glassbox::handle_pool
