#pragma once
// A scoped span: opened on construction as a child of the current context,
// current while it lives, ended and handed to the span processor on
// destruction (or end()). Open and end it on one thread; to parent work on
// another thread, see ContextScope.
#include <atomic>
#include <concepts>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "glassbox/trace/attribute.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span_context.hpp"
#include "glassbox/trace/span_data.hpp"

namespace glassbox::trace {

namespace detail {
extern std::atomic<bool> tracing_on;
}  // namespace detail

class Span {
 public:
  explicit Span(std::string_view name, SpanKind kind = SpanKind::internal) {
    if (detail::tracing_on.load(std::memory_order_relaxed)) [[unlikely]]
      start(name, kind);
  }
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  /// Whether attributes and status are kept (tracing on and sampled).
  bool recording() const noexcept { return data_.has_value(); }
  const SpanContext& context() const noexcept { return context_; }

  Span& set_attribute(std::string_view key, AttributeValue value);
  Span& set_attribute(std::string_view key, const char* value) {
    return set_attribute(key, AttributeValue(std::string(value)));
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) Span& set_attribute(std::string_view key, T value) {
    return set_attribute(key, AttributeValue(static_cast<std::int64_t>(value)));
  }
  void set_status(StatusCode code, std::string_view message = {});
  /// Records an event now, with its attributes (dropped when not recording).
  Span& add_event(std::string_view name, std::vector<Attribute> attributes = {});

  /// Ends the span now; later calls do nothing.
  void end() noexcept {
    if (!active_) return;
    active_ = false;
    std::memcpy(&detail::current, &previous_, sizeof previous_);  // whole: see trace.cpp's put()
    if (data_) finish();
  }

 private:
  void start(std::string_view name, SpanKind kind);
  void finish() noexcept;  // stamps the end time and hands the data to the processor

  std::optional<SpanData> data_;  // in place: a heap SpanData cost a recorded span ~40 ns
  SpanContext context_;
  SpanContext previous_;
  bool active_ = false;
};

}  // namespace glassbox::trace
