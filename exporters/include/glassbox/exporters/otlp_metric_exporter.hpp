#pragma once
// Pushes every glassbox metric over OTLP/HTTP JSON (otlp_metrics_json.hpp),
// as the OpenTelemetry SDK's periodic metric reader with an OTLP exporter
// does: one background thread takes a registry snapshot every interval and
// POSTs it to {endpoint}/v1/metrics through the HTTP sender the span
// exporter uses (same retries, headers, timeout, gzip and resource).
//
// The process never waits for the collector: updates and /metrics do not
// touch this thread, and a collector that is down costs one failed request
// per interval. Points delivered count in
// glassbox_metric_points_exported_total{exporter="otlp"}; points lost, by
// reason (`rejected`, `export_failed`, `shutdown`), in
// glassbox_metric_points_dropped_total. Since every point is cumulative, the
// next delivered export carries what a lost one held.
//
// Thread-safety: every member may be called from any thread.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "glassbox/exporters/otlp_http_options.hpp"

namespace glassbox::exporters {

namespace detail {
class OtlpHttpSender;
}

struct OtlpMetricOptions {
  /// Where to send and how; `http.registry` is both what is exported and
  /// where the exporter counts its own deliveries and drops.
  OtlpHttpOptions http = [] {
    OtlpHttpOptions o;
    o.url = "http://localhost:4318/v1/metrics";
    return o;
  }();
  std::chrono::milliseconds interval{60000};        ///< between the starts of two exports
  std::chrono::milliseconds export_timeout{30000};  ///< one export, retries included

  /// OtlpHttpOptions::from_env(OtlpSignal::metrics), OTEL_METRIC_EXPORT_INTERVAL
  /// and OTEL_METRIC_EXPORT_TIMEOUT (milliseconds, at least 1); a malformed
  /// value throws ConfigError naming the variable.
  static OtlpMetricOptions from_env();
};

/// True when OTEL_METRICS_EXPORTER is `otlp`; false when unset or `none`.
/// Anything else throws ConfigError naming the variable and what is accepted.
bool otlp_metrics_enabled_in_env();

class OtlpMetricExporter {
 public:
  /// Starts the export thread; the first export is one interval from now.
  /// Throws ConfigError for a bad URL or interval.
  explicit OtlpMetricExporter(OtlpMetricOptions options);
  /// shutdown(export_timeout) unless already shut down.
  ~OtlpMetricExporter();
  OtlpMetricExporter(const OtlpMetricExporter&) = delete;
  OtlpMetricExporter& operator=(const OtlpMetricExporter&) = delete;

  /// Exports now, on the export thread; false when `timeout` ran out first.
  bool force_flush(std::chrono::milliseconds timeout);
  /// Exports once more and stops the thread, all within `timeout`: when the
  /// deadline passes, the request is cancelled and its points counted as
  /// dropped (reason `shutdown`). Idempotent.
  void shutdown(std::chrono::milliseconds timeout);

  const std::string& url() const noexcept { return options_.http.url; }

 private:
  struct Counters;
  using Clock = std::chrono::steady_clock;
  void run();
  void export_once(Clock::time_point deadline);

  OtlpMetricOptions options_;
  std::uint64_t start_unix_ns_;
  std::unique_ptr<detail::OtlpHttpSender> sender_;
  std::unique_ptr<Counters> counters_;

  std::mutex mu_;
  std::condition_variable wake_;  // the export thread waits here
  std::condition_variable done_;  // force_flush() waits here
  std::uint64_t flush_requested_ = 0;
  std::uint64_t flush_done_ = 0;
  bool stopping_ = false;
  bool finished_ = false;  // the thread made its last export
  Clock::time_point stop_deadline_{};

  std::mutex shutdown_mu_;  // one shutdown at a time; joins once
  std::thread thread_;
};

}  // namespace glassbox::exporters
