#pragma once
// A reader that walks a registry's series in place, one at a time, instead of
// copying every series into a Snapshot first. The /metrics serializers read
// this way: a scrape writes each series once and keeps nothing, so the copies
// (a vector per family, the bucket vectors of every histogram, and freeing
// them all afterwards) were a third of what it cost.
#include <cstddef>
#include <string_view>

#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

/// A family as a visitor sees it, before its series.
struct FamilyView {
  std::string_view name;
  std::string_view help;
  MetricType type = MetricType::counter;
  std::size_t series = 0;  ///< how many series() calls follow for it
};

/// What a whole visit holds, told before the first family: enough for a
/// writer to size its buffer once.
struct VisitShape {
  std::size_t families = 0;
  std::size_t series = 0;            ///< series of counters and gauges
  std::size_t histogram_series = 0;  ///< series of histograms

  /// Counts a family of `type` with `n` series.
  void add(MetricType type, std::size_t n) noexcept {
    ++families;
    (type == MetricType::histogram ? histogram_series : series) += n;
  }
};

/// Registry::visit() calls begin() once, then family() for every family in
/// name order, each followed by series() for its series in label order: the
/// order of snapshot(). It calls them holding the registry's locks (see
/// Registry::visit()), so a visitor must not call into the registry nor
/// update a metric. What a call is given lives only until it returns.
class SeriesVisitor {
 public:
  virtual ~SeriesVisitor() = default;
  virtual void begin(const VisitShape& /*shape*/) {}
  virtual void family(const FamilyView& family) = 0;
  /// `label_text` is the series' labels as both Prometheus exposition formats
  /// write them, `{k="v",...` left open, made once when the series was: set
  /// when no label value needs escaping or is not ASCII. Empty otherwise, and
  /// when the series has no labels: the visitor writes them from `s.labels`.
  virtual void series(const SeriesSnapshot& s, std::string_view label_text) = 0;
};

/// Replays `snapshot` into `visitor` as Registry::visit() would have read it,
/// without label text.
void visit(const Snapshot& snapshot, SeriesVisitor& visitor);

}  // namespace glassbox::metrics
