#include "glassbox/exporters/prometheus_exporter.hpp"

#include <httplib.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <regex>
#include <thread>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

namespace {

prometheus::MetricType to_prometheus(metrics::MetricType t) {
  switch (t) {
    case metrics::MetricType::counter:
      return prometheus::MetricType::Counter;
    case metrics::MetricType::gauge:
      return prometheus::MetricType::Gauge;
    case metrics::MetricType::histogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

prometheus::ClientMetric::Histogram to_prometheus(const metrics::HistogramValue& h) {
  prometheus::ClientMetric::Histogram out;
  out.sample_count = h.count;
  out.sample_sum = h.sum;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    double bound = i < h.upper_bounds.size() ? h.upper_bounds[i] : std::numeric_limits<double>::infinity();
    out.bucket.push_back({cumulative, bound});
  }
  return out;
}

prometheus::ClientMetric to_prometheus(const metrics::SeriesSnapshot& s, metrics::MetricType type) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : s.labels) m.label.push_back({k, v});
  switch (type) {
    case metrics::MetricType::counter:
      m.counter.value = s.value;
      break;
    case metrics::MetricType::gauge:
      m.gauge.value = s.value;
      break;
    case metrics::MetricType::histogram:
      m.histogram = to_prometheus(s.histogram);
      break;
  }
  return m;
}

std::string exposition_text(const metrics::Registry& registry) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& f : registry.snapshot()) {
    if (f.series.empty()) continue;  // declared, nothing recorded yet
    prometheus::MetricFamily pf{f.name, f.help, to_prometheus(f.type), {}};
    for (const auto& s : f.series) pf.metric.push_back(to_prometheus(s, f.type));
    families.push_back(std::move(pf));
  }
  return prometheus::TextSerializer().Serialize(families);
}

// "[::1]:9464" -> {"::1", 9464}; the address is validated first.
std::pair<std::string, int> split_address(const std::string& address) {
  std::size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, std::stoi(address.substr(colon + 1))};
}

bool is_loopback(const std::string& host) {
  static const std::regex ipv4_loopback(R"(^127(\.[0-9]{1,3}){3}$)");
  return host == "localhost" || host == "::1" || std::regex_match(host, ipv4_loopback);
}

// Serving metrics to the network with nobody asked to log in is refused, not
// warned about: a warning in a service's log is easy to miss.
void check_exposure(const PrometheusOptions& o, const std::string& host) {
  if (is_loopback(host) || o.basic_auth || o.allow_unauthenticated) return;
  throw ConfigError("glassbox /metrics: refusing to serve " + o.address +
                    " (beyond loopback) without authentication; set GLASSBOX_METRICS_BASIC_AUTH=USER:PASSWORD or "
                    "GLASSBOX_METRICS_BASIC_AUTH_FILE=PATH (or PrometheusOptions::basic_auth), or "
                    "GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED=true where a firewall or network policy guards the port");
}

// Answers 401 to every request that lacks the credentials, whatever its path.
void require_basic_auth(httplib::Server& http, const BasicAuth& auth) {
  http.set_pre_routing_handler([auth](const httplib::Request& req, httplib::Response& res) {
    if (auth.matches(req.get_header_value("Authorization"))) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", R"(Basic realm="glassbox metrics", charset="UTF-8")");
    res.set_content("401 Unauthorized: /metrics needs HTTP basic auth\n", "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
}

}  // namespace

struct PrometheusExporter::Server {
  httplib::Server http;
  std::thread thread;
};

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
  if (auto v = detail::env("GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED")) {
    o.allow_unauthenticated = detail::parse_bool(*v, "GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED");
  }
  return o;
}

PrometheusExporter::PrometheusExporter(PrometheusOptions options)
    : options_(std::move(options)), server_(std::make_unique<Server>()) {
  validate_listen_address(options_.address, "metrics address");
  auto [host, port] = split_address(options_.address);
  check_exposure(options_, host);
  // Two workers: scrapes are rare and short; more threads would only idle.
  server_->http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // Not SO_REUSEPORT, which httplib's default sets: it would let a second
  // process share the port and silently take half the scrapes.
  // TCP_NODELAY (inherited by accepted sockets): httplib writes headers and
  // body separately, and Nagle held the body until the client's delayed ACK,
  // so every kept-alive scrape took 40 ms (found by scripts/load-metrics).
  server_->http.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  });
  if (options_.basic_auth) require_basic_auth(server_->http, *options_.basic_auth);
  const metrics::Registry& registry = *options_.registry;
  server_->http.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(exposition_text(registry), "text/plain; version=0.0.4; charset=utf-8");
  });
  int bound = port == 0 ? server_->http.bind_to_any_port(host) : (server_->http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    throw Error("glassbox /metrics: cannot listen on " + options_.address + ": " + std::strerror(errno) +
                " (is the port in use? set GLASSBOX_METRICS_ADDR or --metrics-addr)");
  }
  port_ = static_cast<std::uint16_t>(bound);
  server_->thread = std::thread([s = server_.get()] { s->http.listen_after_bind(); });
  // stop() before the loop runs would be lost and the destructor would hang.
  while (!server_->http.is_running()) std::this_thread::yield();
}

PrometheusExporter::~PrometheusExporter() {
  server_->http.stop();
  server_->thread.join();
}

std::string PrometheusExporter::url() const {
  std::string host = options_.address.substr(0, options_.address.rfind(':'));
  return "http://" + host + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace glassbox::exporters
