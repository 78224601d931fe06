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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glassbox/exporters/basic_auth.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::exporters {

struct PrometheusOptions {
  // A constructor, not aggregate init, so `{address, &registry}` stays valid
  // (and warning-free) as members are added.
  PrometheusOptions(std::string listen = "127.0.0.1:9464", metrics::Registry* source = &metrics::Registry::global())
      : address(std::move(listen)), registry(source) {}

  /// host:port or [v6-host]:port; port 0 picks a free port.
  std::string address;
  metrics::Registry* registry;
  /// When set, every request needs these credentials (else 401).
  std::optional<BasicAuth> basic_auth;
  /// An address other than loopback (127.0.0.0/8, ::1, localhost) without
  /// basic_auth is refused at startup unless this is true: anyone who can
  /// reach the port could otherwise read the process's metrics.
  bool allow_unauthenticated = false;

  /// Address from GLASSBOX_METRICS_ADDR, credentials from BasicAuth::from_env(),
  /// allow_unauthenticated from GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED
  /// (true|false), else the defaults. A malformed value throws ConfigError
  /// naming the variable and the accepted form.
  static PrometheusOptions from_env();
};

/// Checks "host:port" / "[host]:port" with port 0..65535; throws ConfigError
/// that names `source` (the variable or flag the value came from).
void validate_listen_address(const std::string& address, const std::string& source);

class PrometheusExporter {
 public:
  /// Starts listening at once; throws glassbox::Error when the address cannot be
  /// bound, ConfigError when it is beyond loopback with no authentication.
  /// The destructor stops serving and joins the server thread.
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
