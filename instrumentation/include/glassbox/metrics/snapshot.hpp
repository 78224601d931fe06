#pragma once
// What exporters read: a copy of every family's values taken at one moment.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glassbox/metrics/frozen.hpp"

namespace glassbox::metrics {

enum class MetricType { counter, gauge, histogram };

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

/// An observation kept as an example of its bucket: the span it was made in
/// (OpenMetrics exemplar), so a latency bucket leads to a trace.
struct Exemplar {
  LabelPairs labels;       ///< trace_id and span_id, lowercase hex
  double value = 0.0;      ///< the observed value
  double timestamp = 0.0;  ///< when, in seconds since the Unix epoch
};

struct HistogramValue {
  Frozen<std::vector<double>> upper_bounds;  ///< finite bounds, ascending; +Inf is implied (shared)
  std::vector<std::uint64_t> buckets;        ///< per bucket, not cumulative; last is +Inf
  std::uint64_t count = 0;                   ///< equals the sum of buckets
  double sum = 0.0;
  /// Empty, or one per bucket: the latest observation made in a sampled span.
  std::vector<std::optional<Exemplar>> exemplars;
};

struct SeriesSnapshot {
  Frozen<LabelPairs> labels;  ///< shared with the series: a snapshot copies no label
  double value = 0.0;         ///< counter or gauge
  HistogramValue histogram;   ///< histogram only
};

struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::counter;
  std::vector<SeriesSnapshot> series;
};

using Snapshot = std::vector<FamilySnapshot>;

/// The series of `name` whose labels include every pair in `labels`, or
/// nullptr. Meant for tests and tools, not hot paths.
const SeriesSnapshot* find_series(const Snapshot& snapshot, const std::string& name, const LabelPairs& labels = {});

/// The sum of the values of every series of `name` whose labels include every
/// pair in `labels` (e.g. one state across all buckets); 0 when none.
double sum_series(const Snapshot& snapshot, const std::string& name, const LabelPairs& labels = {});

/// The value below which a fraction `q` (in [0, 1]) of the observations fall,
/// interpolated linearly within its bucket as Prometheus's
/// histogram_quantile() does: a bucket's observations are taken as spread
/// evenly from the bound below it (0 for the first) to its own. A quantile
/// in the +Inf bucket is the highest finite bound. nullopt when empty.
std::optional<double> histogram_quantile(const HistogramValue& h, double q);

}  // namespace glassbox::metrics
