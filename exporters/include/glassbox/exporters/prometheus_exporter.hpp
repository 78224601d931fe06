#pragma once
// Serves a glassbox metrics registry at http://ADDRESS/metrics in the
// Prometheus text format. prometheus-cpp does the HTTP and the text; at each
// scrape it asks glassbox's registry for a snapshot, so nothing is copied or
// serialised between scrapes.
#include <cstdint>
#include <memory>
#include <string>

#include "glassbox/metrics/registry.hpp"

namespace prometheus {
class Exposer;
}

namespace glassbox::exporters {

struct PrometheusOptions {
  /// host:port or [v6-host]:port; port 0 picks a free port.
  std::string address = "127.0.0.1:9464";
  metrics::Registry* registry = &metrics::Registry::global();

  /// Address from GLASSBOX_METRICS_ADDR, else the default. A malformed value
  /// throws ConfigError naming the variable and the accepted form.
  static PrometheusOptions from_env();
};

/// Checks "host:port" / "[host]:port" with port 0..65535; throws ConfigError
/// that names `source` (the variable or flag the value came from).
void validate_listen_address(const std::string& address, const std::string& source);

class PrometheusExporter {
 public:
  /// Starts listening at once; throws glassbox::Error when the address cannot be bound.
  explicit PrometheusExporter(PrometheusOptions options = PrometheusOptions::from_env());
  ~PrometheusExporter();
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  /// The port actually bound (useful with port 0).
  std::uint16_t port() const noexcept { return port_; }
  /// http://host:port/metrics
  std::string url() const;

 private:
  class Collector;
  PrometheusOptions options_;
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::uint16_t port_ = 0;
};

}  // namespace glassbox::exporters
