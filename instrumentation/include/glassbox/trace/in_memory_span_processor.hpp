#pragma once
// Keeps ended spans in memory: for tests, and for tools that inspect spans.
#include <mutex>
#include <vector>

#include "glassbox/trace/span_processor.hpp"

namespace glassbox::trace {

class InMemorySpanProcessor final : public SpanProcessor {
 public:
  void on_end(SpanData&& span) noexcept override {
    std::lock_guard lock(mu_);
    spans_.push_back(std::move(span));
  }
  std::vector<SpanData> take() {
    std::lock_guard lock(mu_);
    return std::exchange(spans_, {});
  }

 private:
  std::mutex mu_;
  std::vector<SpanData> spans_;
};

}  // namespace glassbox::trace
