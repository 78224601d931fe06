#pragma once
// A trace file in the Chrome Trace Event format, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each span is a complete event
// (ph "X", ts and dur in microseconds from the moment the file was opened,
// with nanosecond decimals) on its process and OS thread, its attributes and
// ids as args; threads and the process carry their names (M events); a span
// whose parent ran on another thread gets a flow arrow (ph "s" -> "f") from
// the parent to it.
//
// Memory stays bounded: events are written as batches arrive, and a child
// waits for its parent to end (parents end after the work they wait for)
// in a table of at most max_pending_flows entries; past that, the oldest
// waiting children lose their arrow. A child that outlives its parent gets
// no arrow. Counter samples wait in a queue of at most max_pending_samples
// until the next batch of spans or shutdown; past that they are dropped and
// counted (counter_samples_dropped(), and an instant event at the end of the
// file).
//
// The file is valid JSON once shutdown() has run, which the batch processor
// does on shutdown (call it from the path that handles SIGINT/SIGTERM) and in
// its destructor. A process killed without it leaves the closing "]}" out.
#include <cstdint>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "glassbox/exporters/batch_span_processor.hpp"
#include "glassbox/exporters/resource.hpp"
#include "glassbox/exporters/span_exporter.hpp"
#include "glassbox/trace/counter_track.hpp"

namespace glassbox::exporters {

struct TraceFileOptions {
  std::string path;
  std::size_t max_pending_flows = 16384;
  std::size_t max_pending_samples = 65536;     ///< counter samples waiting to be written
  Resource resource = Resource::make("", "");  ///< the process is named after service.name

  /// Path from GLASSBOX_TRACE_FILE (empty when unset), the resource from
  /// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
  static TraceFileOptions from_env();
};

class TraceFileExporter final : public SpanExporter {
 public:
  /// Creates (truncates) the file and writes its header; throws glassbox::Error
  /// naming the path when it cannot.
  explicit TraceFileExporter(TraceFileOptions options);
  /// Closes the file (shutdown()) if that has not happened.
  ~TraceFileExporter() override;

  std::string_view name() const noexcept override { return "trace_file"; }
  /// Writes the spans' events and flushes them to the OS. When writing fails
  /// (disk full, file size limit), the batch is dropped (export_failed) and
  /// the failure is reported once on stderr and kept in write_error().
  ExportResult export_spans(std::span<const trace::SpanData> spans, Clock::time_point deadline) override;
  /// Writes the closing "]}" and closes the file. Idempotent.
  void shutdown() override;

  /// Names OS thread `tid` in the file, before its next events. Thread-safe.
  void name_thread(std::uint64_t tid, std::string name);
  /// Queues a counter sample for the next write. Thread-safe, never blocks on I/O.
  void add_counter_sample(const trace::CounterSample& sample) noexcept;
  /// Samples dropped because the queue was full or the file closed. Thread-safe.
  std::uint64_t counter_samples_dropped() const;
  const std::string& path() const noexcept { return options_.path; }
  /// The first write failure, "" while there has been none. Read it on the
  /// thread that exports, or after shutdown.
  const std::string& write_error() const noexcept { return write_error_; }

 private:
  struct Child {
    std::uint64_t tid;
    std::uint64_t start_ns;
    std::uint64_t end_ns;
    trace::SpanId id;
  };
  struct Waiting {
    std::vector<Child> children;
    std::list<std::uint64_t>::iterator age;
  };

  void write(const std::string& event);
  void report_write_failure(int err);
  void write_thread_names();
  void write_counter_samples();
  void write_instant(const trace::SpanEvent& e, std::uint64_t tid);
  void write_span(const trace::SpanData& span);
  void write_flow_point(std::string_view ph, const std::string& id, std::uint64_t tid, std::uint64_t unix_ns);
  void write_flows_to_children(const trace::SpanData& parent);
  void wait_for_parent(const trace::SpanData& child);
  double micros(std::uint64_t unix_ns) const;

  TraceFileOptions options_;
  std::FILE* out_ = nullptr;
  std::vector<char> buffer_;
  std::string event_;  // the event being written, reused
  std::string write_error_;
  bool first_event_ = true;
  std::uint64_t origin_ns_;
  std::uint64_t pid_;

  std::mutex names_mu_;
  std::vector<std::pair<std::uint64_t, std::string>> new_names_;

  struct QueuedSample {
    std::string track;
    std::int64_t value;
    std::uint64_t unix_ns;
  };
  mutable std::mutex samples_mu_;
  std::vector<QueuedSample> samples_;
  std::uint64_t samples_dropped_ = 0;
  bool closed_ = false;  // guarded by samples_mu_: shutdown() has run

  // Children waiting for their parent, by the parent's span id; `ages_` is
  // oldest first, for eviction.
  std::unordered_map<std::uint64_t, Waiting> waiting_;
  std::list<std::uint64_t> ages_;
  std::size_t waiting_children_ = 0;
};

/// A TraceFileExporter behind a BatchSpanProcessor. on_end() also notes the
/// name of each thread the first time it ends a span (spans end on the thread
/// that opened them), so threads that have exited are still named. It is also
/// a counter sink: install it with trace::set_counter_sink() as well to put
/// the counter tracks in the file; force_flush() and shutdown() first send
/// every track's coalesced value (trace::flush_counter_tracks()).
class TraceFileProcessor final : public trace::SpanProcessor, public trace::CounterSink {
 public:
  TraceFileProcessor(TraceFileOptions options, BatchOptions batch);

  void on_end(trace::SpanData&& span) noexcept override;
  void on_sample(const trace::CounterSample& sample) noexcept override { file_->add_counter_sample(sample); }
  bool force_flush(std::chrono::milliseconds timeout) override;
  /// Exports what is queued and closes the file: valid JSON from then on.
  void shutdown(std::chrono::milliseconds timeout) override;
  const std::string& path() const noexcept { return file_->path(); }
  std::uint64_t counter_samples_dropped() const { return file_->counter_samples_dropped(); }

 private:
  TraceFileProcessor(std::unique_ptr<TraceFileExporter> file, BatchOptions batch);

  TraceFileExporter* file_;  // owned by batch_
  BatchSpanProcessor batch_;
  std::uint64_t id_;  // tells this processor's per-thread "named" marks from another's
};

}  // namespace glassbox::exporters
