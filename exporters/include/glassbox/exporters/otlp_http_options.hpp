#pragma once
// Where and how an OTLP/HTTP exporter sends one signal (traces or metrics):
// the URL, headers, timeout, compression and retry policy its HTTP sender
// uses, and the resource it attaches. Traces and metrics read the same
// OpenTelemetry SDK variables, each with its signal-specific names first.
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glassbox/exporters/resource.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::exporters {

/// What an OTLP request carries; picks the path (/v1/traces, /v1/metrics)
/// and the signal-specific variables (OTEL_EXPORTER_OTLP_TRACES_*, ..._METRICS_*).
enum class OtlpSignal { traces, metrics };
/// "traces" or "metrics": the URL path's last part and the label `signal`.
std::string_view to_string(OtlpSignal signal) noexcept;

struct RetryPolicy {
  int max_attempts = 5;  ///< requests per export, the first included
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{5000};
  double multiplier = 1.5;
  double jitter = 0.2;  ///< each wait is scaled by a random factor in [1 - jitter, 1 + jitter]
};

struct OtlpHttpOptions {
  std::string url = "http://localhost:4318/v1/traces";  ///< the full URL, path included
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10000};  ///< one HTTP request
  bool gzip = false;
  RetryPolicy retry;
  Resource resource = Resource::make("", "");
  /// Where the exporter counts its retries, deliveries and drops (and, for
  /// metrics, what it exports).
  metrics::Registry* registry = &metrics::Registry::global();

  /// From the OpenTelemetry SDK's variables, the signal-specific one first
  /// (shown for traces; metrics read ..._METRICS_... and append v1/metrics):
  /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
  /// OTEL_EXPORTER_OTLP_ENDPOINT (v1/traces appended), ..._HEADERS
  /// (key=value,... percent-encoded), ..._TIMEOUT (ms), ..._COMPRESSION
  /// (gzip|none), ..._PROTOCOL (only http/json), and the resource from
  /// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. A malformed value throws
  /// ConfigError naming the variable, the value and what is accepted.
  static OtlpHttpOptions from_env(OtlpSignal signal = OtlpSignal::traces);
};

/// Throws ConfigError naming `source` unless `url` is http(s)://host...
void check_otlp_url(const std::string& url, const std::string& source);

}  // namespace glassbox::exporters
