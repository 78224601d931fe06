#pragma once
// The HTTP half every OTLP/HTTP exporter shares (traces and metrics): POSTs
// one encoded request to the signal's URL on libcurl, over one keep-alive
// connection, optionally gzipped, with the configured headers and timeout.
//
// Retries follow the OTLP specification: 429, 502, 503 and 504 answers and
// connection failures (refused, reset, timed out) are retried with exponential
// backoff and random jitter, waiting as long as a Retry-After header asks
// instead when there is one; every other answer is final. Retries stop at the
// deadline the caller gives, or after max_attempts. Each repeat counts in
// glassbox_otlp_export_retries_total{signal}.
//
// send() is called from one thread at a time (the exporter's own); cancel()
// may come from any thread and interrupts a request or a backoff wait at once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "glassbox/exporters/otlp_http_options.hpp"

namespace glassbox::exporters::detail {

enum class SendOutcome {
  delivered,  ///< a 2xx answer; `body` may hold a partial success
  rejected,   ///< a non-retryable answer
  failed,     ///< retries ran out, the deadline passed, or curl cannot make the request
  cancelled,  ///< cancel() came first
};

struct SendResult {
  SendOutcome outcome = SendOutcome::failed;
  std::string body;  ///< the receiver's answer to the last request
};

class OtlpHttpSender {
 public:
  using Clock = std::chrono::steady_clock;

  /// Throws ConfigError for a URL that is not http(s)://host...
  OtlpHttpSender(const OtlpHttpOptions& options, OtlpSignal signal);
  ~OtlpHttpSender();
  OtlpHttpSender(const OtlpHttpSender&) = delete;
  OtlpHttpSender& operator=(const OtlpHttpSender&) = delete;

  /// POSTs `json` (gzipped here when configured), retrying until `deadline`.
  SendResult send(std::string json, Clock::time_point deadline);
  /// Makes a running send() and every later one return `cancelled` at once.
  void cancel() noexcept;

 private:
  class Http;
  std::chrono::milliseconds backoff(int attempt);
  bool sleep_unless_cancelled(std::chrono::milliseconds wait);

  std::chrono::milliseconds timeout_;
  bool gzip_;
  RetryPolicy retry_;
  std::unique_ptr<Http> http_;
  metrics::Counter retries_;
  std::mt19937_64 rng_;

  std::atomic<bool> cancelled_{false};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

/// The count a partial success names under `field` (rejectedSpans,
/// rejectedDataPoints) in an OTLP answer body; 0 when it names none.
std::size_t rejected_in_partial_success(const std::string& body, const char* field);

}  // namespace glassbox::exporters::detail
