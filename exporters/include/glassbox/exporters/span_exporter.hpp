#pragma once
// Where a BatchSpanProcessor sends its batches: OTLP/HTTP, a trace file, or a
// test double. The processor calls export_spans() and shutdown() from its one
// background thread, never concurrently; cancel() may come from any thread.
#include <chrono>
#include <cstddef>
#include <span>
#include <string_view>

#include "glassbox/trace/span_data.hpp"

namespace glassbox::exporters {

/// Why spans were lost; the label `reason` of glassbox_spans_dropped_total.
enum class DropReason {
  queue_full,     ///< the processor's queue was full when the span ended
  rejected,       ///< the receiver refused them with a non-retryable answer
  export_failed,  ///< retries ran out, or the export deadline passed
  shutdown,       ///< shutdown's deadline passed first, or the span ended after shutdown
};
std::string_view to_string(DropReason reason) noexcept;

struct ExportResult {
  std::size_t dropped = 0;  ///< of the spans given; the others reached the receiver
  DropReason reason = DropReason::export_failed;
};

class SpanExporter {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~SpanExporter() = default;

  /// The label `exporter` of glassbox's span metrics, e.g. "otlp".
  virtual std::string_view name() const noexcept = 0;
  /// Sends `spans`, retrying as the exporter sees fit, and returns by `deadline`.
  virtual ExportResult export_spans(std::span<const trace::SpanData> spans, Clock::time_point deadline) = 0;
  /// Makes a running export_spans() and every later one return at once,
  /// dropping their spans (reason `shutdown`). Thread-safe.
  virtual void cancel() noexcept {}
  /// After the last export: release connections, close files.
  virtual void shutdown() {}
};

}  // namespace glassbox::exporters
