#pragma once
// The set of metric families a process exposes. Registry::global() is where
// glassbox's parts register; tests make their own to count in isolation.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "glassbox/metrics/counter.hpp"
#include "glassbox/metrics/family.hpp"
#include "glassbox/metrics/gauge.hpp"
#include "glassbox/metrics/histogram.hpp"
#include "glassbox/metrics/series_visitor.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "glassbox/metrics/up_down_counter.hpp"

namespace glassbox::metrics {

/// Thread-safety: every member may be called from any thread at once.
/// Declaring a family takes the registry's mutex, and with() the family's, so
/// parts resolve their series once and keep the handles; hot-path updates
/// take neither lock (see cell_arena.hpp), so a snapshot() does not stall them.
/// Families are never removed: the references returned live as long as the
/// registry.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The process-wide registry. Never destroyed, so threads that exit during
  /// static destruction can still update metrics.
  static Registry& global();

  /// Declares a family, or returns the one already declared with the same
  /// name, type, labels and buckets. A clash (same name, anything else
  /// different) or a name Prometheus does not accept throws ConfigError.
  /// Counter names must end in `_total`.
  Family<Counter>& counter(std::string_view name, std::string_view help, std::vector<std::string> labels = {});
  Family<Gauge>& gauge(std::string_view name, std::string_view help, std::vector<std::string> labels = {});
  /// A gauge whose updates are per-thread adds (see UpDownCounter).
  Family<UpDownCounter>& up_down_counter(std::string_view name, std::string_view help,
                                         std::vector<std::string> labels = {});
  Family<Histogram>& histogram(std::string_view name, std::string_view help, std::vector<std::string> labels,
                               std::vector<double> upper_bounds);

  /// Runs `collect` at the start of every visit() and snapshot(), before any
  /// series is read: a part whose gauges follow from counts it keeps anyway
  /// brings them up to date here instead of updating them on its hot path.
  /// `collect` may update metrics but not read the registry nor call the
  /// collector functions.
  /// Returns the id remove_collector() takes.
  std::uint64_t add_collector(std::function<void()> collect);
  /// Stops running a collector; returns once no run of it is in progress.
  void remove_collector(std::uint64_t id);

  /// Every family's values at one moment: no thread's exit is seen half-way.
  /// Collectors run first, so their series are as of the call.
  Snapshot snapshot() const;

  /// What snapshot() reads, handed to `visitor` series by series instead of
  /// copied. It holds the registry's lock and the metric arena's (no thread
  /// registers or folds its cells meanwhile; updates go on) while `visitor`
  /// runs, so a visitor should be quick: a /metrics serializer is.
  void visit(SeriesVisitor& visitor) const;

 private:
  template <class Metric>
  Family<Metric>& declare(FamilyInfo info, typename Metric::Config config);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
  mutable std::mutex collectors_mu_;  // taken before mu_, never inside it
  std::map<std::uint64_t, std::function<void()>> collectors_;
  std::uint64_t next_collector_ = 0;
};

}  // namespace glassbox::metrics
