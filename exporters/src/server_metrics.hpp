#pragma once
// What /metrics's server counts about itself, declared in one place. Every
// series exists from the start, at 0, so that dashboards and alerts see a 0
// rather than nothing (the TLS reload series too when TLS is off).
#include <vector>

#include "glassbox/metrics/registry.hpp"
#include "http_connection.hpp"

namespace glassbox::exporters::detail {

struct ServerMetrics {
  explicit ServerMetrics(metrics::Registry& registry);

  /// glassbox_metrics_http_connections_rejected_total, indexed by Rejection.
  std::vector<metrics::Counter> rejected;
  /// glassbox_metrics_http_connections: open now.
  metrics::Gauge open;
  /// glassbox_metrics_tls_certificate_reloads_total{result="ok"|"failed"}.
  metrics::Counter tls_reloaded;
  metrics::Counter tls_reload_failed;
};

}  // namespace glassbox::exporters::detail
