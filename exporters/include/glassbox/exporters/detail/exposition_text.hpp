#pragma once
// The Prometheus text format (version 0.0.4) of a metrics snapshot: what
// /metrics serves. Declared here so the scrape benchmark times the handler's
// own serializer.
#include <string>

#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::exporters::detail {

/// Families with no series yet are left out.
std::string exposition_text(const metrics::Snapshot& snapshot);

}  // namespace glassbox::exporters::detail
