#pragma once
// What exporters read: a copy of every family's values taken at one moment.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glassbox::metrics {

enum class MetricType { counter, gauge, histogram };

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct HistogramValue {
  std::vector<double> upper_bounds;     ///< finite bounds, ascending; +Inf is implied
  std::vector<std::uint64_t> buckets;   ///< per bucket, not cumulative; last is +Inf
  std::uint64_t count = 0;              ///< equals the sum of buckets
  double sum = 0.0;
};

struct SeriesSnapshot {
  LabelPairs labels;
  double value = 0.0;        ///< counter or gauge
  HistogramValue histogram;  ///< histogram only
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
const SeriesSnapshot* find_series(const Snapshot& snapshot, const std::string& name,
                                  const LabelPairs& labels = {});

}  // namespace glassbox::metrics
