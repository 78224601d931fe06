#pragma once
// Where ended spans go. With none installed (the default) tracing is off:
// a Span costs one relaxed load and creates nothing.
#include <chrono>
#include <memory>

#include "glassbox/trace/sampler.hpp"
#include "glassbox/trace/span_data.hpp"

namespace glassbox::trace {

class SpanProcessor {
 public:
  virtual ~SpanProcessor() = default;
  /// Called on the thread that ended the span; must not block on I/O.
  virtual void on_end(SpanData&& span) noexcept = 0;
  /// Exports what is queued; false when `timeout` ran out first.
  virtual bool force_flush(std::chrono::milliseconds timeout) {
    (void)timeout;
    return true;
  }
  virtual void shutdown(std::chrono::milliseconds timeout) { (void)timeout; }
};

/// Installs the process-wide processor (nullptr turns tracing off) and, unless
/// a sampler was set, the one OTEL_TRACES_SAMPLER names (ConfigError if bad).
/// Thread-safe; spans already open end into the processor current at their end.
void set_span_processor(std::shared_ptr<SpanProcessor> processor);
std::shared_ptr<SpanProcessor> span_processor();
void set_sampler(std::shared_ptr<Sampler> sampler);
std::shared_ptr<Sampler> sampler();

/// True when a processor is installed.
bool tracing_enabled() noexcept;

}  // namespace glassbox::trace
