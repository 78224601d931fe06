#pragma once
// The OpenTelemetry SDK's batch span processor: on_end() puts the span in a
// bounded queue and returns; one background thread takes what is queued and
// hands it to a SpanExporter in batches, when a batch is full, when the
// schedule delay passes, on force_flush() and on shutdown().
//
// Ending a span never waits for the exporter: on_end() holds a mutex only to
// swap the span into a slot (the export thread takes the whole queue by
// swapping it with the slots it exported last, O(1)), and
// when the queue is full the span is dropped and counted in
// glassbox_spans_dropped_total{exporter,reason="queue_full"}. Spans that reach
// the receiver are counted in glassbox_spans_exported_total{exporter}.
//
// Thread-safety: every member function may be called from any thread.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "glassbox/exporters/span_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace glassbox::exporters {

/// Defaults are the OpenTelemetry SDK's.
struct BatchOptions {
  std::size_t max_queue_size = 2048;
  std::size_t max_export_batch_size = 512;  ///< at most max_queue_size
  std::chrono::milliseconds schedule_delay{5000};
  std::chrono::milliseconds export_timeout{30000};  ///< one batch, retries included
  metrics::Registry* registry = &metrics::Registry::global();

  /// From OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  /// OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_EXPORT_TIMEOUT (milliseconds); a
  /// malformed value throws ConfigError naming the variable.
  static BatchOptions from_env();
  /// Throws ConfigError when a value is out of range.
  void validate() const;
};

class BatchSpanProcessor final : public trace::SpanProcessor {
 public:
  /// Starts the export thread. Throws ConfigError for bad options.
  BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, BatchOptions options);
  /// shutdown(export_timeout) unless already shut down.
  ~BatchSpanProcessor() override;
  BatchSpanProcessor(const BatchSpanProcessor&) = delete;
  BatchSpanProcessor& operator=(const BatchSpanProcessor&) = delete;

  void on_end(trace::SpanData&& span) noexcept override;
  /// Exports every span queued before the call; false when `timeout` ran out first.
  bool force_flush(std::chrono::milliseconds timeout) override;
  /// Exports what is queued and stops the thread, all within `timeout`: when
  /// the deadline passes, the exporter is cancelled and the rest is dropped
  /// (reason `shutdown`). Later spans are dropped too. Idempotent.
  void shutdown(std::chrono::milliseconds timeout) override;

  /// Spans waiting in the queue now (for tests and benchmarks).
  std::size_t queued() const;

 private:
  struct Counters;
  void run();
  // Moves the spans to export now into `taken` (all of them when the delay is
  // over, on a flush or at shutdown; whole batches otherwise); mu_ held.
  std::size_t take(std::vector<trace::SpanData>& taken, bool delay_over);
  void export_all(std::span<const trace::SpanData> spans, SpanExporter::Clock::time_point stop_deadline);
  void count(const ExportResult& r, std::size_t sent) noexcept;

  std::unique_ptr<SpanExporter> exporter_;
  BatchOptions options_;
  std::unique_ptr<Counters> counters_;

  mutable std::mutex mu_;
  std::condition_variable wake_;  // the export thread waits here
  std::condition_variable done_;  // force_flush() and shutdown() wait here
  // max_queue_size slots, the first queued_ of them waiting. Slots keep the
  // buffers of spans already exported until on_end swaps a new span in.
  std::vector<trace::SpanData> queue_;
  std::size_t queued_ = 0;
  std::uint64_t flush_requested_ = 0;
  std::uint64_t flush_done_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
  SpanExporter::Clock::time_point stop_deadline_{};

  std::mutex shutdown_mu_;  // one shutdown at a time; joins once
  std::thread thread_;
};

}  // namespace glassbox::exporters
