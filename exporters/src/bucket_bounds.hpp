#pragma once
// A histogram's bucket lines as both /metrics serializers start and end their
// labels: the same `le` strings in either format, so a series keeps its
// identity when a scraper switches, and made once per family (the bounds) or
// per series (the start), since every bucket line shares them.
#include <string>
#include <string_view>
#include <vector>

#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

/// The most bytes an ending of bucket_le_endings() holds: `le="`, a bound and `"} `.
inline constexpr std::size_t kLeRoom = 4 + kSixteenDigitsMax + 3;

/// Per bucket, how its line's labels end: `le="0.25"} `, the finite bounds
/// (a histogram accepts no other), then the implied `le="+Inf"} `.
inline std::vector<std::string> bucket_le_endings(const std::vector<double>& bounds) {
  std::vector<std::string> endings;
  endings.reserve(bounds.size() + 1);
  char buffer[32];
  for (double b : bounds) endings.push_back("le=\"" + std::string(buffer, sixteen_digits(buffer, b)) + "\"} ");
  endings.emplace_back("le=\"+Inf\"} ");
  return endings;
}

/// How every bucket line of a series starts, written into `out`:
/// `name_bucket{k="v",` (`labels` as written, `{k="v"` left open), or
/// `name_bucket{` without labels.
inline void bucket_line_start(std::string& out, std::string_view name, std::string_view labels) {
  out.assign(name);
  out.append("_bucket");
  out.append(labels);
  out.push_back(labels.empty() ? '{' : ',');
}

}  // namespace glassbox::exporters::detail
