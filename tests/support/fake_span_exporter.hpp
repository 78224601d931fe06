#pragma once
// A SpanExporter for tests: records what it was given, can be made to hang
// until released or cancelled, and answers with a chosen ExportResult.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "glassbox/exporters/span_exporter.hpp"

namespace glassbox::testing {

struct FakeExportLog {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::size_t> batches;
  std::vector<std::string> names;
  bool hang = false;  // export_spans waits until released or cancelled
  bool in_export = false;
  bool cancelled = false;
  bool shut_down = false;
  bool throw_next = false;
  exporters::ExportResult answer;

  std::size_t span_count() {
    std::lock_guard lock(mu);
    return names.size();
  }
  /// True when `n` spans arrived within `timeout`.
  bool wait_for_spans(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, timeout, [&] { return names.size() >= n; });
  }
  bool wait_until_exporting(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, timeout, [&] { return in_export; });
  }
  void release() {
    std::lock_guard lock(mu);
    hang = false;
    changed.notify_all();
  }
};

class FakeSpanExporter final : public exporters::SpanExporter {
 public:
  explicit FakeSpanExporter(std::shared_ptr<FakeExportLog> log) : log_(std::move(log)) {}

  std::string_view name() const noexcept override { return "fake"; }

  exporters::ExportResult export_spans(std::span<const trace::SpanData> spans, Clock::time_point) override {
    std::unique_lock lock(log_->mu);
    if (log_->throw_next) {
      log_->throw_next = false;
      throw std::runtime_error("fake exporter failure");
    }
    log_->in_export = true;
    log_->changed.notify_all();
    log_->changed.wait(lock, [&] { return !log_->hang || log_->cancelled; });
    log_->in_export = false;
    if (log_->cancelled) return {spans.size(), exporters::DropReason::shutdown};
    log_->batches.push_back(spans.size());
    for (const auto& s : spans) log_->names.push_back(s.name);
    log_->changed.notify_all();
    return log_->answer;
  }
  void cancel() noexcept override {
    std::lock_guard lock(log_->mu);
    log_->cancelled = true;
    log_->changed.notify_all();
  }
  void shutdown() override {
    std::lock_guard lock(log_->mu);
    log_->shut_down = true;
  }

 private:
  std::shared_ptr<FakeExportLog> log_;
};

}  // namespace glassbox::testing
