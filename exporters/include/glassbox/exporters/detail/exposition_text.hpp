#pragma once
// The Prometheus text format (version 0.0.4) of a metrics snapshot: what
// /metrics serves. Declared here so the scrape benchmark times the handler's
// own serializer.
#include <string>

#include "glassbox/metrics/registry.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::exporters::detail {

/// What `registry` holds now, read in place (Registry::visit()), as /metrics
/// serves it. Families with no series yet are left out.
std::string exposition_text(const metrics::Registry& registry);
/// The same text of a snapshot taken before.
std::string exposition_text(const metrics::Snapshot& snapshot);

}  // namespace glassbox::exporters::detail
