#pragma once
// OTLP/HTTP with the JSON encoding (otlp_json.hpp), on libcurl: POST
// {endpoint}/v1/traces with Content-Type: application/json, optionally gzip.
//
// Retries follow the OTLP specification: 429, 502, 503 and 504 answers and
// connection failures (refused, reset, timed out) are retried with exponential
// backoff and random jitter, waiting as long as a Retry-After header asks
// instead when there is one; every other answer drops the batch (reason
// `rejected`), as does a partial success for the spans it names. Retries stop
// at the export deadline the batch processor gives, or after max_attempts.
// Each repeat counts in glassbox_otlp_export_retries_total.
//
// Use it behind a BatchSpanProcessor (make_otlp_processor), which calls it
// from one thread; cancel() interrupts a request or a backoff wait at once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "glassbox/exporters/batch_span_processor.hpp"
#include "glassbox/exporters/resource.hpp"
#include "glassbox/exporters/span_exporter.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::exporters {

struct RetryPolicy {
  int max_attempts = 5;  ///< requests per batch, the first included
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{5000};
  double multiplier = 1.5;
  double jitter = 0.2;  ///< each wait is scaled by a random factor in [1 - jitter, 1 + jitter]
};

struct OtlpHttpOptions {
  std::string url = "http://localhost:4318/v1/traces";  ///< the full traces URL
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10000};  ///< one HTTP request
  bool gzip = false;
  RetryPolicy retry;
  Resource resource = Resource::make("", "");
  metrics::Registry* registry = &metrics::Registry::global();

  /// From the OpenTelemetry SDK's variables, the signal-specific one first:
  /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
  /// OTEL_EXPORTER_OTLP_ENDPOINT (v1/traces appended), ..._HEADERS
  /// (key=value,... percent-encoded), ..._TIMEOUT (ms), ..._COMPRESSION
  /// (gzip|none), ..._PROTOCOL (only http/json), and the resource from
  /// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. A malformed value throws
  /// ConfigError naming the variable, the value and what is accepted.
  static OtlpHttpOptions from_env();
};

/// True when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set.
bool otlp_configured_in_env();

class OtlpHttpExporter final : public SpanExporter {
 public:
  /// Throws ConfigError for a URL that is not http(s)://host...
  explicit OtlpHttpExporter(OtlpHttpOptions options);
  ~OtlpHttpExporter() override;

  std::string_view name() const noexcept override { return "otlp"; }
  ExportResult export_spans(std::span<const trace::SpanData> spans, Clock::time_point deadline) override;
  void cancel() noexcept override;

 private:
  class Http;
  std::chrono::milliseconds backoff(int attempt);
  bool sleep_unless_cancelled(std::chrono::milliseconds wait);

  OtlpHttpOptions options_;
  std::unique_ptr<Http> http_;
  metrics::Counter retries_;
  std::mt19937_64 rng_;

  std::atomic<bool> cancelled_{false};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

/// An OtlpHttpExporter behind a BatchSpanProcessor, ready for
/// trace::set_span_processor().
std::shared_ptr<BatchSpanProcessor> make_otlp_processor(OtlpHttpOptions options = OtlpHttpOptions::from_env(),
                                                        BatchOptions batch = BatchOptions::from_env());

}  // namespace glassbox::exporters
