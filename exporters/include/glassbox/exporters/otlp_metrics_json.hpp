#pragma once
// A metrics::Snapshot as an OTLP ExportMetricsServiceRequest in the OTLP/HTTP
// JSON encoding (the same proto3 JSON rules as otlp_json.hpp): one metric per
// family that has series, named as /metrics names it, with the help text as
// its description. Counters are cumulative monotonic sums, gauges (up-down
// counters included) gauges, histograms cumulative explicit-bucket
// histograms with the family's bounds; every point is a double
// (asDouble) and carries its labels as string attributes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "glassbox/exporters/resource.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::exporters {

/// When the points were taken and since when the cumulative ones count.
struct PointTimes {
  std::uint64_t start_unix_ns = 0;  ///< startTimeUnixNano of sums and histograms
  std::uint64_t time_unix_ns = 0;   ///< timeUnixNano of every point
};

/// One resourceMetrics with one scopeMetrics holding every family of
/// `snapshot` that has series, as a JSON text.
std::string otlp_metrics_json(const metrics::Snapshot& snapshot, const Resource& resource, PointTimes times);

/// The data points otlp_metrics_json() writes for `snapshot`: one per series.
std::size_t otlp_data_points(const metrics::Snapshot& snapshot) noexcept;

}  // namespace glassbox::exporters
