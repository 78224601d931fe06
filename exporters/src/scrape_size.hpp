#pragma once
// How much room a scrape's text takes, roughly, so both /metrics serializers
// reserve it once instead of growing (and copying) the string as they write.
#include <cstddef>

#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::exporters::detail {

/// About 64 bytes a line: two comment lines per family, one line per series,
/// and 16 per histogram series (buckets, count and sum of a typical layout).
inline std::size_t scrape_size(const metrics::Snapshot& snapshot) {
  std::size_t lines = 0;
  for (const auto& f : snapshot) lines += 2 + f.series.size() * (f.type == metrics::MetricType::histogram ? 16 : 1);
  return lines * 64;
}

}  // namespace glassbox::exporters::detail
