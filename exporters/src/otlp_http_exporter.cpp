#include "glassbox/exporters/otlp_http_exporter.hpp"

#include <algorithm>

#include "env_values.hpp"
#include "glassbox/exporters/otlp_json.hpp"
#include "otlp_http_sender.hpp"

namespace glassbox::exporters {

bool otlp_configured_in_env() {
  return detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}).has_value();
}

OtlpHttpExporter::OtlpHttpExporter(OtlpHttpOptions options)
    : resource_(std::move(options.resource)),
      sender_(std::make_unique<detail::OtlpHttpSender>(options, OtlpSignal::traces)) {}

OtlpHttpExporter::~OtlpHttpExporter() = default;

ExportResult OtlpHttpExporter::export_spans(std::span<const trace::SpanData> spans, Clock::time_point deadline) {
  if (spans.empty()) return {};
  detail::SendResult r = sender_->send(otlp_json(spans, resource_), deadline);
  switch (r.outcome) {
    case detail::SendOutcome::delivered:
      return {std::min(detail::rejected_in_partial_success(r.body, "rejectedSpans"), spans.size()),
              DropReason::rejected};
    case detail::SendOutcome::rejected:
      return {spans.size(), DropReason::rejected};
    case detail::SendOutcome::cancelled:
      return {spans.size(), DropReason::shutdown};
    case detail::SendOutcome::failed:
      break;
  }
  return {spans.size(), DropReason::export_failed};
}

void OtlpHttpExporter::cancel() noexcept { sender_->cancel(); }

std::shared_ptr<BatchSpanProcessor> make_otlp_processor(OtlpHttpOptions options, BatchOptions batch) {
  return std::make_shared<BatchSpanProcessor>(std::make_unique<OtlpHttpExporter>(std::move(options)), batch);
}

}  // namespace glassbox::exporters
