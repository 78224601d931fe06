#pragma once
// A histogram's bucket lines as both /metrics serializers start and end their
// labels: the same `le` strings in either format, so a series keeps its
// identity when a scraper switches, and made once per family (the bounds) or
// per series (the start), since every bucket line shares them.
#include <string>
#include <string_view>
#include <vector>

#include "glassbox/metrics/snapshot.hpp"
#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

/// Per bucket, how its line's labels end: `le="0.25"} `, the family's finite
/// bounds (a histogram accepts no other), then the implied `le="+Inf"} `.
inline std::vector<std::string> bucket_le_endings(const metrics::FamilySnapshot& f) {
  const auto& bounds = f.series.front().histogram.upper_bounds;
  std::vector<std::string> endings;
  endings.reserve(bounds.size() + 1);
  char buffer[32];
  for (double b : bounds) endings.push_back("le=\"" + std::string(buffer, sixteen_digits(buffer, b)) + "\"} ");
  endings.emplace_back("le=\"+Inf\"} ");
  return endings;
}

/// How every bucket line of a series starts: `name_bucket{k="v",` (`labels`
/// as written, `{k="v"` left open), or `name_bucket{` without labels.
inline std::string bucket_line_start(std::string_view name, std::string_view labels) {
  return std::string(name) + "_bucket" + std::string(labels) + (labels.empty() ? '{' : ',');
}

}  // namespace glassbox::exporters::detail
