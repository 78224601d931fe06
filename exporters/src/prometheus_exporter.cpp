#include "glassbox/exporters/prometheus_exporter.hpp"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <cstdlib>
#include <limits>
#include <regex>

#include "glassbox/error.hpp"

namespace glassbox::exporters {

namespace {

prometheus::MetricType to_prometheus(metrics::MetricType t) {
  switch (t) {
    case metrics::MetricType::counter: return prometheus::MetricType::Counter;
    case metrics::MetricType::gauge: return prometheus::MetricType::Gauge;
    case metrics::MetricType::histogram: return prometheus::MetricType::Histogram;
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
    case metrics::MetricType::counter: m.counter.value = s.value; break;
    case metrics::MetricType::gauge: m.gauge.value = s.value; break;
    case metrics::MetricType::histogram: m.histogram = to_prometheus(s.histogram); break;
  }
  return m;
}

}  // namespace

class PrometheusExporter::Collector final : public prometheus::Collectable {
 public:
  explicit Collector(metrics::Registry& r) : registry_(r) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    for (const auto& f : registry_.snapshot()) {
      if (f.series.empty()) continue;  // declared, nothing recorded yet
      prometheus::MetricFamily pf{f.name, f.help, to_prometheus(f.type), {}};
      for (const auto& s : f.series) pf.metric.push_back(to_prometheus(s, f.type));
      out.push_back(std::move(pf));
    }
    return out;
  }

 private:
  metrics::Registry& registry_;
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
  return o;
}

PrometheusExporter::PrometheusExporter(PrometheusOptions options)
    : options_(std::move(options)), collector_(std::make_shared<Collector>(*options_.registry)) {
  validate_listen_address(options_.address, "metrics address");
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(options_.address, 2);
  } catch (const std::exception& e) {
    throw Error("glassbox /metrics: cannot listen on " + options_.address + ": " + e.what() +
                " (is the port in use? set GLASSBOX_METRICS_ADDR or --metrics-addr)");
  }
  exposer_->RegisterCollectable(collector_);
  auto ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

PrometheusExporter::~PrometheusExporter() = default;

std::string PrometheusExporter::url() const {
  std::string host = options_.address.substr(0, options_.address.rfind(':'));
  return "http://" + host + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace glassbox::exporters
