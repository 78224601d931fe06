#include "glassbox/trace/multi_span_processor.hpp"

#include <algorithm>

namespace glassbox::trace {

namespace {

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

}  // namespace

MultiSpanProcessor::MultiSpanProcessor(std::vector<std::shared_ptr<SpanProcessor>> processors)
    : processors_(std::move(processors)) {
  std::erase(processors_, nullptr);
}

void MultiSpanProcessor::on_end(SpanData&& span) noexcept {
  if (processors_.empty()) return;
  for (std::size_t i = 0; i + 1 < processors_.size(); ++i) {
    try {
      processors_[i]->on_end(SpanData(span));
    } catch (...) {
      // Out of memory for the copy: the other processors still get the span.
    }
  }
  processors_.back()->on_end(std::move(span));
}

bool MultiSpanProcessor::force_flush(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool all = true;
  for (auto& p : processors_) all = p->force_flush(left_until(deadline)) && all;
  return all;
}

void MultiSpanProcessor::shutdown(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& p : processors_) p->shutdown(left_until(deadline));
}

}  // namespace glassbox::trace
