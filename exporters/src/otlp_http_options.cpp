#include "glassbox/exporters/otlp_http_options.hpp"

#include <optional>
#include <regex>

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

namespace {

// The signal-specific variable (OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) and the
// general one (OTEL_EXPORTER_OTLP_TIMEOUT), in the order the SDK reads them.
struct VariablePair {
  std::string specific;
  std::string general;

  VariablePair(OtlpSignal signal, const char* suffix)
      : specific(std::string("OTEL_EXPORTER_OTLP_") + (signal == OtlpSignal::traces ? "TRACES_" : "METRICS_") + suffix),
        general(std::string("OTEL_EXPORTER_OTLP_") + suffix) {}

  // The name and value of the first one set: the specific one replaces the general one.
  std::optional<std::pair<std::string, std::string>> value() const {
    auto v = detail::first_env({specific.c_str(), general.c_str()});
    if (!v) return std::nullopt;
    return std::pair{std::string(v->first), std::move(v->second)};
  }
};

std::string signal_url(const std::string& base, OtlpSignal signal) {
  return base + (base.ends_with('/') ? "v1/" : "/v1/") + std::string(to_string(signal));
}

}  // namespace

std::string_view to_string(OtlpSignal signal) noexcept { return signal == OtlpSignal::traces ? "traces" : "metrics"; }

void check_otlp_url(const std::string& url, const std::string& source) {
  static const std::regex form(R"(^https?://[^/?#\s]+[^\s]*$)", std::regex::icase);
  if (!std::regex_match(url, form)) {
    throw ConfigError(source + "='" + url + "' is not accepted; expected an http:// or https:// URL with a host, " +
                      "e.g. http://localhost:4318");
  }
}

OtlpHttpOptions OtlpHttpOptions::from_env(OtlpSignal signal) {
  OtlpHttpOptions o;
  o.url = signal_url("http://localhost:4318", signal);
  const VariablePair endpoint(signal, "ENDPOINT");
  if (auto v = detail::env(endpoint.specific.c_str())) {
    check_otlp_url(*v, endpoint.specific);
    o.url = *v;
  } else if (auto b = detail::env(endpoint.general.c_str())) {
    check_otlp_url(*b, endpoint.general);
    o.url = signal_url(*b, signal);
  }
  if (auto h = VariablePair(signal, "HEADERS").value()) {
    o.headers = detail::parse_key_values(h->second, h->first.c_str());
  }
  if (auto t = VariablePair(signal, "TIMEOUT").value()) {
    o.timeout = detail::parse_millis(t->second, t->first.c_str(), 1);
  }
  if (auto c = VariablePair(signal, "COMPRESSION").value()) {
    if (c->second != "gzip" && c->second != "none") {
      throw ConfigError(c->first + "='" + c->second + "' is not accepted; expected gzip or none");
    }
    o.gzip = c->second == "gzip";
  }
  if (auto p = VariablePair(signal, "PROTOCOL").value(); p && p->second != "http/json") {
    throw ConfigError(p->first + "='" + p->second +
                      "' is not accepted; glassbox's exporter speaks http/json only (set http/json or unset it; "
                      "an OpenTelemetry Collector takes JSON on its OTLP/HTTP port 4318)");
  }
  o.resource = Resource::from_env();
  return o;
}

}  // namespace glassbox::exporters
