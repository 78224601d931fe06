#pragma once
// Reads one series from a registry, for tests that check what was counted.
#include <algorithm>
#include <string>

#include "glassbox/metrics/registry.hpp"

namespace glassbox::testing {

/// The value of the series of `name` with these labels; 0 when there is none yet.
inline double metric_value(const metrics::Registry& registry, const std::string& name,
                           const metrics::LabelPairs& labels = {}) {
  metrics::Snapshot snap = registry.snapshot();
  const metrics::SeriesSnapshot* s = metrics::find_series(snap, name, labels);
  return s ? s->value : 0.0;
}

/// The sum over every series of `name` that has these labels (and maybe more),
/// e.g. one state of a per-bucket family across all buckets.
inline double metric_sum(const metrics::Registry& registry, const std::string& name,
                         const metrics::LabelPairs& labels = {}) {
  return metrics::sum_series(registry.snapshot(), name, labels);
}

}  // namespace glassbox::testing
