#pragma once
// The OpenMetrics 1.0 text format, which /metrics serves to a scraper that
// asks for it (Accept: application/openmetrics-text), because only it carries
// exemplars: a histogram bucket's link to the trace of one observation in it.
// prometheus-cpp's serializers write the 0.0.4 text and have no exemplars,
// so this one is glassbox's. A detail/ header so that the fuzz target
// (fuzz/openmetrics_fuzz.cpp) and the unit tests reach it.
#include <string>
#include <string_view>

#include "glassbox/metrics/registry.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::exporters::detail {

inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether a request's Accept value asks for OpenMetrics 1.0: a range
/// `application/openmetrics-text` without a version or with version=1.0.0,
/// with a q above 0 and no lower than the q of `text/plain` (0.0.4) in the
/// same header. Wildcards (`*/*`) keep the 0.0.4 text, as before.
bool accepts_openmetrics(std::string_view accept);

/// `snapshot` in OpenMetrics 1.0 text, ending in `# EOF`. A counter family
/// `x_total` is the OpenMetrics counter `x` with the sample `x_total`;
/// up-down counters are gauges; histogram buckets are cumulative, each with
/// its exemplar when it has one. Label values and help text are escaped
/// (backslash, double quote, newline), and any byte sequence that is not
/// UTF-8 is written as U+FFFD, so the output always parses. An exemplar whose
/// label names and values together exceed the 128 characters OpenMetrics
/// allows is left out (glassbox's own trace_id/span_id pair has 63).
/// Families without series are left out, as in the 0.0.4 text. `registry`
/// is read in place (Registry::visit()), as /metrics serves it.
std::string openmetrics_text(const metrics::Registry& registry);
/// The same text of a snapshot taken before.
std::string openmetrics_text(const metrics::Snapshot& snapshot);

}  // namespace glassbox::exporters::detail
