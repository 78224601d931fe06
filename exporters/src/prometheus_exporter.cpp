#include "glassbox/exporters/prometheus_exporter.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <regex>

#include "env_values.hpp"
#include "glassbox/error.hpp"
#include "glassbox/exporters/detail/exposition_text.hpp"
#include "glassbox/exporters/detail/openmetrics.hpp"
#include "gzip.hpp"
#include "http_router.hpp"
#include "http_server.hpp"
#include "listen_socket.hpp"
#include "live_page.hpp"
#include "server_metrics.hpp"
#include "tls_context.hpp"

namespace glassbox::exporters {

namespace {

constexpr const char* kExpositionType = "text/plain; version=0.0.4; charset=utf-8";

// Whether an Accept-Encoding value takes gzip ("gzip", "gzip;q=0.5", not "gzip;q=0").
bool accepts_gzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    std::size_t comma = accept_encoding.find(',');
    std::string_view coding = accept_encoding.substr(0, comma);
    accept_encoding.remove_prefix(comma == std::string_view::npos ? accept_encoding.size() : comma + 1);
    std::size_t semicolon = coding.find(';');
    std::string_view name = coding.substr(0, semicolon);
    name.remove_prefix(std::min(name.find_first_not_of(' '), name.size()));
    name = name.substr(0, name.find(' '));
    if (!detail::equals_ignoring_case(name, "gzip")) continue;
    std::size_t q = coding.find("q=", semicolon == std::string_view::npos ? coding.size() : semicolon);
    return q == std::string_view::npos || std::strtod(std::string(coding.substr(q + 2)).c_str(), nullptr) > 0;
  }
  return false;
}

// Prometheus asks for gzip, which makes a scrape several times smaller on the
// wire, and for OpenMetrics, the format with exemplars.
detail::HttpResponse metrics_page(const metrics::Registry& registry, const detail::HttpRequest& request) {
  detail::HttpResponse r;
  if (detail::accepts_openmetrics(request.header("Accept"))) {
    r.content_type = detail::kOpenMetricsContentType;
    r.body = detail::openmetrics_text(registry);
  } else {
    r.content_type = kExpositionType;
    r.body = detail::exposition_text(registry);
  }
  if (accepts_gzip(request.header("Accept-Encoding"))) {
    r.body = detail::gzip(r.body);
    r.headers.emplace_back("Content-Encoding", "gzip");
  }
  r.headers.emplace_back("Vary", "Accept, Accept-Encoding");
  return r;
}

// Serving metrics to the network with nobody asked to log in is refused, not
// warned about: a warning in a service's log is easy to miss. A client
// certificate (mutual TLS) is a login too.
void check_exposure(const PrometheusOptions& o, const detail::ListenAddress& address) {
  const bool mutual_tls = o.tls && !o.tls->client_ca_file.empty();
  if (address.is_loopback() || o.basic_auth || mutual_tls || o.allow_unauthenticated) return;
  throw ConfigError("glassbox /metrics: refusing to serve " + o.address +
                    " (beyond loopback) without authentication; set GLASSBOX_METRICS_BASIC_AUTH=USER:PASSWORD or "
                    "GLASSBOX_METRICS_BASIC_AUTH_FILE=PATH (or PrometheusOptions::basic_auth), best with "
                    "GLASSBOX_METRICS_TLS_CERT_FILE and GLASSBOX_METRICS_TLS_KEY_FILE so the password is not sent "
                    "in the clear; or GLASSBOX_METRICS_TLS_CLIENT_CA_FILE to require client certificates; or "
                    "GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED=true where a firewall or network policy guards the port");
}

detail::HttpRouter make_router(const PrometheusOptions& o) {
  detail::HttpRouter router(o.basic_auth);
  const metrics::Registry& registry = *o.registry;
  router.add("/metrics", [&registry](const detail::HttpRequest& r) { return metrics_page(registry, r); });
  if (o.live_page) router.add("/", [](const detail::HttpRequest&) { return detail::live_page(); });
  return router;
}

}  // namespace

void validate_listen_address(const std::string& address, const std::string& source) {
  static const std::regex form(R"(^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-]+):([0-9]{1,5})$)");
  std::smatch m;
  if (!std::regex_match(address, m, form) || std::stoul(m[2].str()) > 65535) {
    throw ConfigError(source + "='" + address +
                      "' is not accepted; expected HOST:PORT or [IPV6]:PORT with PORT 0..65535, "
                      "e.g. 127.0.0.1:9464 (0.0.0.0:9464 listens on every interface)");
  }
}

PrometheusOptions PrometheusOptions::from_env() {
  PrometheusOptions o;
  if (const char* v = std::getenv("GLASSBOX_METRICS_ADDR"); v && *v) {
    validate_listen_address(v, "GLASSBOX_METRICS_ADDR");
    o.address = v;
  }
  o.basic_auth = BasicAuth::from_env();
  o.tls = TlsConfig::from_env();
  o.limits = HttpLimits::from_env();
  if (auto v = detail::env("GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED")) {
    o.allow_unauthenticated = detail::parse_bool(*v, "GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED");
  }
  if (auto v = detail::env("GLASSBOX_METRICS_UI")) o.live_page = detail::parse_bool(*v, "GLASSBOX_METRICS_UI");
  return o;
}

PrometheusExporter::PrometheusExporter(PrometheusOptions options) : options_(std::move(options)) {
  validate_listen_address(options_.address, "metrics address");
  options_.limits.validate();
  const auto address = detail::ListenAddress::parse(options_.address);
  check_exposure(options_, address);
  detail::ServerMetrics metrics(*options_.registry);
  // Certificates first: a bad file fails before the port is taken.
  auto tls = options_.tls
                 ? std::make_unique<detail::TlsContext>(*options_.tls, metrics.tls_reloaded, metrics.tls_reload_failed)
                 : nullptr;
  auto listener = std::make_unique<detail::ListenSocket>(address);
  port_ = listener->port();
  server_ = std::make_unique<detail::HttpServer>(
      std::move(listener), options_.limits, std::move(tls),
      [router = make_router(options_)](const detail::HttpRequest& r) { return router.route(r); }, std::move(metrics));
}

PrometheusExporter::~PrometheusExporter() = default;

std::string PrometheusExporter::url() const { return origin() + "/metrics"; }

std::string PrometheusExporter::page_url() const { return options_.live_page ? origin() + "/" : ""; }

std::string PrometheusExporter::origin() const {
  std::string host = options_.address.substr(0, options_.address.rfind(':'));
  return (options_.tls ? "https://" : "http://") + host + ":" + std::to_string(port_);
}

}  // namespace glassbox::exporters
