#include "server_metrics.hpp"

namespace glassbox::exporters::detail {

namespace {

std::vector<metrics::Counter> rejection_counters(metrics::Registry& registry) {
  auto& family = registry.counter(
      "glassbox_metrics_http_connections_rejected_total",
      "Connections /metrics closed to keep serving, by reason: header_timeout, write_timeout, answer_timeout "
      "(answered 503), header_too_large (answered 431), bad_request (400 or 505), tls_error, max_connections, "
      "max_connections_per_client.",
      {"reason"});
  std::vector<metrics::Counter> out;
  for (Rejection r : kAllRejections) out.push_back(family.with({to_string(r)}));
  return out;
}

metrics::Family<metrics::Counter>& tls_reloads(metrics::Registry& registry) {
  return registry.counter("glassbox_metrics_tls_certificate_reloads_total",
                          "Times /metrics read its changed TLS certificate files again, by result (ok: now served; "
                          "failed: the last good certificate stays in use).",
                          {"result"});
}

}  // namespace

ServerMetrics::ServerMetrics(metrics::Registry& registry)
    : rejected(rejection_counters(registry)),
      open(registry.gauge("glassbox_metrics_http_connections", "Connections open to /metrics now.").with()),
      tls_reloaded(tls_reloads(registry).with({"ok"})),
      tls_reload_failed(tls_reloads(registry).with({"failed"})) {}

}  // namespace glassbox::exporters::detail
