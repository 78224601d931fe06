#pragma once
// Serves a glassbox metrics registry at http://ADDRESS/metrics in the
// Prometheus text format. At each scrape it takes a snapshot of the registry
// and prometheus-cpp writes the text, so nothing is copied or serialised
// between scrapes.
//
// Why not prometheus-cpp's Exposer for the HTTP side: its civetweb server
// starts threads with a fixed 100 KiB stack, and glibc carves the static TLS
// of every loaded library out of each thread's stack. cuBLASLt alone has
// ~92 KiB of TLS, so in any process that links cuBLAS the Exposer cannot start
// ("Cannot create threads"). cpp-httplib uses std::thread with default stacks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "glassbox/metrics/registry.hpp"

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
  /// Starts listening at once; throws glassbox::Error when the address cannot be
  /// bound. The destructor stops serving and joins the server thread.
  explicit PrometheusExporter(PrometheusOptions options = PrometheusOptions::from_env());
  ~PrometheusExporter();
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  /// The port actually bound (useful with port 0).
  std::uint16_t port() const noexcept { return port_; }
  /// http://host:port/metrics
  std::string url() const;

 private:
  struct Server;
  PrometheusOptions options_;
  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

}  // namespace glassbox::exporters
