#include "glassbox/exporters/otlp_metric_exporter.hpp"

#include <algorithm>
#include <array>

#include "env_values.hpp"
#include "glassbox/error.hpp"
#include "glassbox/exporters/otlp_metrics_json.hpp"
#include "glassbox/exporters/span_exporter.hpp"
#include "otlp_http_sender.hpp"

namespace glassbox::exporters {

namespace {

std::uint64_t now_unix_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Cumulative points count from here: the library is loaded before any of
// its metrics can be updated, so no count predates it.
const std::uint64_t kLoadedUnixNs = now_unix_ns();

}  // namespace

// The same reasons as spans' (span_exporter.hpp), less queue_full: a
// snapshot is never queued.
struct OtlpMetricExporter::Counters {
  metrics::Counter exported;
  std::array<metrics::Counter, 3> dropped;  // rejected, export_failed, shutdown

  explicit Counters(metrics::Registry& r)
      : exported(r.counter("glassbox_metric_points_exported_total",
                           "Metric data points the exporter delivered to its receiver", {"exporter"})
                     .with({"otlp"})),
        dropped{drop(r, DropReason::rejected), drop(r, DropReason::export_failed), drop(r, DropReason::shutdown)} {}

  static metrics::Counter drop(metrics::Registry& r, DropReason reason) {
    return r
        .counter("glassbox_metric_points_dropped_total",
                 "Metric data points an export did not deliver (the next delivered export carries them, cumulative)",
                 {"exporter", "reason"})
        .with({"otlp", to_string(reason)});
  }
  void count(detail::SendOutcome outcome, std::size_t points, std::size_t rejected) const noexcept {
    switch (outcome) {
      case detail::SendOutcome::delivered:
        exported.inc(static_cast<double>(points - rejected));
        dropped[0].inc(static_cast<double>(rejected));
        break;
      case detail::SendOutcome::rejected:
        dropped[0].inc(static_cast<double>(points));
        break;
      case detail::SendOutcome::failed:
        dropped[1].inc(static_cast<double>(points));
        break;
      case detail::SendOutcome::cancelled:
        dropped[2].inc(static_cast<double>(points));
        break;
    }
  }
};

bool otlp_metrics_enabled_in_env() {
  auto v = detail::env("OTEL_METRICS_EXPORTER");
  if (!v || *v == "none") return false;
  if (*v != "otlp") {
    throw ConfigError("OTEL_METRICS_EXPORTER='" + *v +
                      "' is not accepted; expected otlp (push over OTLP/HTTP JSON) or none (the default: /metrics "
                      "only, which serves whatever this is)");
  }
  return true;
}

OtlpMetricOptions OtlpMetricOptions::from_env() {
  OtlpMetricOptions o;
  o.http = OtlpHttpOptions::from_env(OtlpSignal::metrics);
  if (auto v = detail::env("OTEL_METRIC_EXPORT_INTERVAL")) {
    o.interval = detail::parse_millis(*v, "OTEL_METRIC_EXPORT_INTERVAL", 1);
  }
  if (auto v = detail::env("OTEL_METRIC_EXPORT_TIMEOUT")) {
    o.export_timeout = detail::parse_millis(*v, "OTEL_METRIC_EXPORT_TIMEOUT", 1);
  }
  return o;
}

OtlpMetricExporter::OtlpMetricExporter(OtlpMetricOptions options)
    : options_(std::move(options)), start_unix_ns_(kLoadedUnixNs) {
  if (options_.interval.count() <= 0 || options_.export_timeout.count() <= 0) {
    throw ConfigError("OTLP metric exporter: interval (" + std::to_string(options_.interval.count()) +
                      " ms) and export_timeout (" + std::to_string(options_.export_timeout.count()) +
                      " ms) must be at least 1 ms");
  }
  sender_ = std::make_unique<detail::OtlpHttpSender>(options_.http, OtlpSignal::metrics);
  counters_ = std::make_unique<Counters>(*options_.http.registry);
  thread_ = std::thread([this] { run(); });
}

OtlpMetricExporter::~OtlpMetricExporter() { shutdown(options_.export_timeout); }

void OtlpMetricExporter::run() {
  std::unique_lock lock(mu_);
  for (auto next = Clock::now() + options_.interval;;) {
    const bool asked = wake_.wait_until(lock, next, [&] { return stopping_ || flush_requested_ != flush_done_; });
    if (stopping_) break;
    const std::uint64_t flush_target = flush_requested_;
    const auto began = Clock::now();
    lock.unlock();
    export_once(began + options_.export_timeout);
    lock.lock();
    if (asked) flush_done_ = flush_target;
    done_.notify_all();
    next = began + options_.interval;  // a steady cadence, as the SDK's periodic reader keeps
  }
  const auto deadline = std::min(stop_deadline_, Clock::now() + options_.export_timeout);
  lock.unlock();
  export_once(deadline);  // what changed since the last export
  lock.lock();
  finished_ = true;
  done_.notify_all();
}

void OtlpMetricExporter::export_once(Clock::time_point deadline) {
  const metrics::Snapshot snapshot = options_.http.registry->snapshot();
  const std::size_t points = otlp_data_points(snapshot);
  if (points == 0) return;
  std::string body = otlp_metrics_json(snapshot, options_.http.resource, {start_unix_ns_, now_unix_ns()});
  detail::SendResult r = sender_->send(std::move(body), deadline);
  const std::size_t rejected = r.outcome == detail::SendOutcome::delivered
                                   ? std::min(detail::rejected_in_partial_success(r.body, "rejectedDataPoints"), points)
                                   : 0;
  counters_->count(r.outcome, points, rejected);
}

bool OtlpMetricExporter::force_flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (stopping_) return false;
  const std::uint64_t ticket = ++flush_requested_;
  wake_.notify_all();
  return done_.wait_for(lock, timeout, [&] { return flush_done_ >= ticket || stopping_; }) && flush_done_ >= ticket;
}

void OtlpMetricExporter::shutdown(std::chrono::milliseconds timeout) {
  std::lock_guard one(shutdown_mu_);
  if (!thread_.joinable()) return;
  const auto deadline = Clock::now() + timeout;
  std::unique_lock lock(mu_);
  stopping_ = true;
  stop_deadline_ = deadline;
  wake_.notify_all();
  done_.notify_all();
  // An export already under way keeps its own, longer deadline: cut it off at ours.
  const bool finished = done_.wait_until(lock, deadline, [&] { return finished_; });
  lock.unlock();
  if (!finished) sender_->cancel();
  thread_.join();
}

}  // namespace glassbox::exporters
