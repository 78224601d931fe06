#pragma once
// The thread-local "current span". A span becomes current while it is open;
// to carry a parent into another thread, capture current_context() on the
// sending thread and open a ContextScope with it on the receiving one:
//
//   auto parent = glassbox::trace::current_context();
//   pool.submit([parent] {
//     glassbox::trace::ContextScope scope(parent);
//     glassbox::trace::Span child("work");  // child of `parent`
//   });
#include "glassbox/trace/span_context.hpp"

namespace glassbox::trace {

namespace detail {
/// The calling thread's current context (current_context() reads it). In the
/// header so that ending a span that records nothing is inline (one 32-byte
/// copy back) and a histogram asks whether it is sampled for one load.
extern constinit thread_local SpanContext current;
}  // namespace detail

/// The calling thread's current span context (invalid when none).
SpanContext current_context() noexcept;

/// Makes `context` current for its lifetime, then restores what was current.
class ContextScope {
 public:
  explicit ContextScope(const SpanContext& context) noexcept;
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  SpanContext previous_;
};

}  // namespace glassbox::trace
