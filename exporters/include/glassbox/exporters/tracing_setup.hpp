#pragma once
// Span export for a process (the demo, glassbox_torch), from the environment: OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, a Perfetto
// trace file when GLASSBOX_TRACE_FILE is set, both at once through a fan-out.
#include <chrono>
#include <memory>
#include <string>

#include "glassbox/trace/span_processor.hpp"

namespace glassbox::exporters {

class TracingSetup {
 public:
  /// Installs the processors the environment asks for (none: tracing stays
  /// off). Throws ConfigError for a malformed variable, glassbox::Error when
  /// the trace file cannot be created.
  static TracingSetup from_env();
  /// shutdown(), so the trace file is valid JSON however run() ends.
  ~TracingSetup();
  TracingSetup(TracingSetup&&) = default;
  TracingSetup& operator=(TracingSetup&&) = delete;

  /// Uninstalls, exports what is queued and closes the file, within `timeout`.
  /// Safe on the way out after SIGINT/SIGTERM; idempotent.
  void shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// "traces: otlp -> URL, file PATH", or "traces: off".
  const std::string& description() const noexcept { return description_; }

 private:
  TracingSetup(std::shared_ptr<trace::SpanProcessor> processor, std::string description);

  std::shared_ptr<trace::SpanProcessor> processor_;
  std::string description_;
};

}  // namespace glassbox::exporters
