#pragma once
// Spans over OTLP/HTTP with the JSON encoding (otlp_json.hpp): POST
// {endpoint}/v1/traces with Content-Type: application/json, optionally gzip,
// through the HTTP sender the metric exporter shares (retries with backoff on
// 429, 502-504 and connection failures, honouring Retry-After; counted in
// glassbox_otlp_export_retries_total{signal="traces"}). Every other answer
// drops the batch (reason `rejected`), as does a partial success for the
// spans it names. Retries stop at the export deadline the batch processor
// gives, or after max_attempts.
//
// Use it behind a BatchSpanProcessor (make_otlp_processor), which calls it
// from one thread; cancel() interrupts a request or a backoff wait at once.
#include <memory>

#include "glassbox/exporters/batch_span_processor.hpp"
#include "glassbox/exporters/otlp_http_options.hpp"
#include "glassbox/exporters/span_exporter.hpp"

namespace glassbox::exporters {

namespace detail {
class OtlpHttpSender;
}

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
  Resource resource_;
  std::unique_ptr<detail::OtlpHttpSender> sender_;
};

/// An OtlpHttpExporter behind a BatchSpanProcessor, ready for
/// trace::set_span_processor().
std::shared_ptr<BatchSpanProcessor> make_otlp_processor(OtlpHttpOptions options = OtlpHttpOptions::from_env(),
                                                        BatchOptions batch = BatchOptions::from_env());

}  // namespace glassbox::exporters
