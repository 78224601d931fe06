#pragma once
// Serves a glassbox metrics registry at http(s)://ADDRESS/metrics in the
// Prometheus text format, and a live page at http(s)://ADDRESS/ that polls
// it and draws each part's last minutes (exporters/ui/, compiled in; the
// same access rules). At each scrape it takes a snapshot of the registry
// and prometheus-cpp writes the text, so nothing is copied or serialised
// between scrapes.
//
// The HTTP side is glassbox's own small server (src/http_server.hpp): one
// event-loop thread for every connection and one worker thread for the
// scrapes, with bounded header read time, header size and connection counts
// (HttpLimits), so hanging or hostile clients cannot starve real scrapes, and
// TLS through the system's OpenSSL (TlsConfig). Neither prometheus-cpp's
// Exposer (its civetweb threads have a fixed 100 KiB stack, and glibc carves
// the static TLS of every loaded library out of it: cuBLASLt alone has
// ~92 KiB, so in a process that links cuBLAS it cannot start) nor
// cpp-httplib (a thread per connection: 200 hanging connections made every
// scrape time out) serves it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glassbox/exporters/basic_auth.hpp"
#include "glassbox/exporters/http_limits.hpp"
#include "glassbox/exporters/tls_config.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::exporters {

namespace detail {
class HttpServer;
}

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
  /// When set, HTTPS only. With basic_auth, the way to expose the port.
  std::optional<TlsConfig> tls;
  /// An address other than loopback (127.0.0.0/8, ::1, localhost) without
  /// basic_auth or client certificates (tls->client_ca_file) is refused at
  /// startup unless this is true: anyone who can reach the port could
  /// otherwise read the process's metrics.
  bool allow_unauthenticated = false;
  /// Header read time, header size, connection caps.
  HttpLimits limits;
  /// Serve the live page at / (else / answers 404, as any unknown path).
  bool live_page = true;

  /// Address from GLASSBOX_METRICS_ADDR, credentials from BasicAuth::from_env(),
  /// tls from TlsConfig::from_env(), limits from HttpLimits::from_env(),
  /// allow_unauthenticated from GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED
  /// (true|false), live_page from GLASSBOX_METRICS_UI (true|false), else the
  /// defaults. A malformed value throws ConfigError naming the variable and
  /// the accepted form.
  static PrometheusOptions from_env();
};

/// Checks "host:port" / "[host]:port" with port 0..65535; throws ConfigError
/// that names `source` (the variable or flag the value came from).
void validate_listen_address(const std::string& address, const std::string& source);

class PrometheusExporter {
 public:
  /// Starts listening at once; throws glassbox::Error when the address cannot be
  /// bound, ConfigError when it is beyond loopback with no authentication, the
  /// limits are out of range or the TLS files do not load. The destructor
  /// stops serving, closes every connection and joins the server's threads.
  explicit PrometheusExporter(PrometheusOptions options = PrometheusOptions::from_env());
  ~PrometheusExporter();
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  /// The port actually bound (useful with port 0).
  std::uint16_t port() const noexcept { return port_; }
  /// http://host:port/metrics, or https:// with TLS
  std::string url() const;
  /// http(s)://host:port/, the live page; empty when live_page is off.
  std::string page_url() const;

 private:
  std::string origin() const;  // scheme://host:port

  PrometheusOptions options_;
  std::unique_ptr<detail::HttpServer> server_;
  std::uint16_t port_ = 0;
};

}  // namespace glassbox::exporters
