#include "glassbox/exporters/batch_span_processor.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

using Clock = SpanExporter::Clock;

std::string_view to_string(DropReason reason) noexcept {
  switch (reason) {
    case DropReason::queue_full:
      return "queue_full";
    case DropReason::rejected:
      return "rejected";
    case DropReason::export_failed:
      return "export_failed";
    case DropReason::shutdown:
      return "shutdown";
  }
  return "unknown";
}

namespace {

// now + timeout, saturated: callers may pass milliseconds::max() for "no limit".
Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  auto now = Clock::now();
  if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + timeout;
}

}  // namespace

struct BatchSpanProcessor::Counters {
  metrics::Counter exported;
  std::array<metrics::Counter, 4> dropped;  // indexed by DropReason

  Counters(metrics::Registry& r, std::string_view exporter)
      : exported(
            r.counter("glassbox_spans_exported_total", "Spans the exporter delivered to its receiver", {"exporter"})
                .with({exporter})),
        dropped{drop(r, exporter, DropReason::queue_full), drop(r, exporter, DropReason::rejected),
                drop(r, exporter, DropReason::export_failed), drop(r, exporter, DropReason::shutdown)} {}

  static metrics::Counter drop(metrics::Registry& r, std::string_view exporter, DropReason reason) {
    return r
        .counter("glassbox_spans_dropped_total", "Ended spans that never reached the exporter's receiver",
                 {"exporter", "reason"})
        .with({exporter, to_string(reason)});
  }
  void inc(DropReason reason, std::size_t n) const noexcept { dropped[static_cast<std::size_t>(reason)].inc(n); }
};

BatchOptions BatchOptions::from_env() {
  BatchOptions o;
  constexpr std::uint64_t max_size = std::numeric_limits<std::int32_t>::max();
  if (auto v = detail::env("OTEL_BSP_MAX_QUEUE_SIZE"))
    o.max_queue_size = detail::parse_count(*v, "OTEL_BSP_MAX_QUEUE_SIZE", 1, max_size);
  if (auto v = detail::env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) {
    o.max_export_batch_size = detail::parse_count(*v, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, max_size);
  }
  if (auto v = detail::env("OTEL_BSP_SCHEDULE_DELAY"))
    o.schedule_delay = detail::parse_millis(*v, "OTEL_BSP_SCHEDULE_DELAY");
  if (auto v = detail::env("OTEL_BSP_EXPORT_TIMEOUT"))
    o.export_timeout = detail::parse_millis(*v, "OTEL_BSP_EXPORT_TIMEOUT");
  if (o.max_export_batch_size > o.max_queue_size) {
    throw ConfigError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=" + std::to_string(o.max_export_batch_size) +
                      " is not accepted; it must not exceed OTEL_BSP_MAX_QUEUE_SIZE (" +
                      std::to_string(o.max_queue_size) + ")");
  }
  return o;
}

void BatchOptions::validate() const {
  if (max_queue_size == 0 || max_export_batch_size == 0 || max_export_batch_size > max_queue_size) {
    throw ConfigError("batch span processor: max_export_batch_size=" + std::to_string(max_export_batch_size) +
                      " and max_queue_size=" + std::to_string(max_queue_size) +
                      " are not accepted; both must be positive and the batch no larger than the queue");
  }
  if (schedule_delay.count() < 0 || export_timeout.count() < 0 || registry == nullptr) {
    throw ConfigError(
        "batch span processor: schedule_delay and export_timeout must not be negative, registry not null");
  }
}

BatchSpanProcessor::BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, BatchOptions options)
    : exporter_(std::move(exporter)), options_(options) {
  if (!exporter_) throw ConfigError("batch span processor: the exporter is null");
  options_.validate();
  counters_ = std::make_unique<Counters>(*options_.registry, exporter_->name());
  queue_.resize(options_.max_queue_size);
  thread_ = std::thread([this] { run(); });
}

BatchSpanProcessor::~BatchSpanProcessor() { shutdown(options_.export_timeout); }

void BatchSpanProcessor::on_end(trace::SpanData&& span) noexcept {
  std::unique_lock lock(mu_);
  if (stopping_ || queued_ >= options_.max_queue_size) {
    DropReason why = stopping_ ? DropReason::shutdown : DropReason::queue_full;
    lock.unlock();
    counters_->inc(why, 1);
    return;
  }
  // A swap, not a move: the slot's old strings and vectors go back to the
  // caller, which frees them after the lock, on the thread that most likely
  // allocated them. Freed on the export thread instead, they made the two
  // threads fight over malloc's arena lock: 3x the cost of a recorded span.
  std::swap(queue_[queued_++], span);
  // Only a full batch wakes the thread early: a wake-up per span would cost a syscall each.
  bool full_batch = queued_ == options_.max_export_batch_size;
  lock.unlock();
  if (full_batch) wake_.notify_one();
}

bool BatchSpanProcessor::force_flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  std::uint64_t ticket = ++flush_requested_;
  wake_.notify_one();
  return done_.wait_until(lock, deadline_after(timeout), [&] { return flush_done_ >= ticket || finished_; });
}

void BatchSpanProcessor::shutdown(std::chrono::milliseconds timeout) {
  std::lock_guard once(shutdown_mu_);
  if (!thread_.joinable()) return;
  auto deadline = deadline_after(timeout);
  std::unique_lock lock(mu_);
  stopping_ = true;
  stop_deadline_ = deadline;
  wake_.notify_one();
  bool finished = done_.wait_until(lock, deadline, [&] { return finished_; });
  lock.unlock();
  if (!finished) exporter_->cancel();  // the export in flight returns at once; the rest is dropped
  thread_.join();
  exporter_->shutdown();
}

std::size_t BatchSpanProcessor::queued() const {
  std::lock_guard lock(mu_);
  return queued_;
}

void BatchSpanProcessor::run() {
  std::vector<trace::SpanData> taken(options_.max_queue_size);
  auto next_export = Clock::now() + options_.schedule_delay;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_until(lock, next_export, [&] {
      return stopping_ || flush_requested_ != flush_done_ || queued_ >= options_.max_export_batch_size;
    });
    std::size_t count = take(taken, Clock::now() >= next_export);
    std::uint64_t flush_target = flush_requested_;
    bool stopping = stopping_;
    auto stop_deadline = stopping ? stop_deadline_ : Clock::time_point::max();
    lock.unlock();
    export_all(std::span<const trace::SpanData>(taken).first(count), stop_deadline);
    next_export = Clock::now() + options_.schedule_delay;
    lock.lock();
    flush_done_ = flush_target;
    finished_ = stopping && queued_ == 0;
    done_.notify_all();
    if (finished_) return;
  }
}

std::size_t BatchSpanProcessor::take(std::vector<trace::SpanData>& taken, bool delay_over) {
  bool everything = delay_over || stopping_ || flush_requested_ != flush_done_;
  std::size_t count = everything ? queued_ : queued_ - queued_ % options_.max_export_batch_size;
  queue_.swap(taken);  // the slots exported last time become the queue
  // A wake-up for full batches leaves the spans over queued: they wait for
  // their own batch to fill or the delay. Sent now, the spans after them would
  // be stranded below the batch size, and no one wakes the thread for those.
  for (std::size_t i = count; i < queued_; ++i) std::swap(queue_[i - count], taken[i]);
  queued_ -= count;
  return count;
}

void BatchSpanProcessor::export_all(std::span<const trace::SpanData> all, Clock::time_point stop_deadline) {
  for (std::size_t i = 0; i < all.size(); i += options_.max_export_batch_size) {
    auto batch = all.subspan(i, std::min(options_.max_export_batch_size, all.size() - i));
    auto now = Clock::now();
    if (now >= stop_deadline) {
      count({batch.size(), DropReason::shutdown}, batch.size());
      continue;
    }
    auto deadline = std::min(deadline_after(options_.export_timeout), stop_deadline);
    ExportResult result;
    try {
      result = exporter_->export_spans(batch, deadline);
    } catch (...) {
      result = {batch.size(), DropReason::export_failed};  // e.g. out of memory encoding the batch
    }
    count(result, batch.size());
  }
}

void BatchSpanProcessor::count(const ExportResult& r, std::size_t sent) noexcept {
  std::size_t dropped = std::min(r.dropped, sent);
  if (sent > dropped) counters_->exported.inc(sent - dropped);
  if (dropped > 0) counters_->inc(r.reason, dropped);
}

}  // namespace glassbox::exporters
