#pragma once
// A histogram family's bucket bounds as both /metrics serializers write them
// in `le`: the same strings in either format, so a series keeps its identity
// when a scraper switches, and written once per family, since every series of
// it shares them.
#include <string>
#include <vector>

#include "glassbox/metrics/snapshot.hpp"
#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

/// The family's finite bounds (a histogram accepts no other), then the implied +Inf.
inline std::vector<std::string> bucket_bound_texts(const metrics::FamilySnapshot& f) {
  const std::vector<double>& bounds = f.series.front().histogram.upper_bounds;
  std::vector<std::string> texts;
  texts.reserve(bounds.size() + 1);
  char buffer[32];
  for (double b : bounds) texts.emplace_back(buffer, sixteen_digits(buffer, b));
  texts.emplace_back("+Inf");
  return texts;
}

}  // namespace glassbox::exporters::detail
