#pragma once
// Fans ended spans out to several processors, e.g. OTLP and a trace file at
// once. Each gets its own copy except the last, which gets the original.
// Thread-safe when the processors are; the list is fixed at construction.
#include <chrono>
#include <memory>
#include <vector>

#include "glassbox/trace/span_processor.hpp"

namespace glassbox::trace {

class MultiSpanProcessor final : public SpanProcessor {
 public:
  explicit MultiSpanProcessor(std::vector<std::shared_ptr<SpanProcessor>> processors);

  void on_end(SpanData&& span) noexcept override;
  /// Flushes each in turn within one shared deadline; true when all made it.
  bool force_flush(std::chrono::milliseconds timeout) override;
  /// Shuts each down in turn within one shared deadline.
  void shutdown(std::chrono::milliseconds timeout) override;

 private:
  std::vector<std::shared_ptr<SpanProcessor>> processors_;
};

}  // namespace glassbox::trace
