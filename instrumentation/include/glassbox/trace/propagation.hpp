#pragma once
// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent`
// and `tracestate` headers that carry a trace from one process to the next.
// A service continues an incoming request's trace, into backward() and into
// the work that thread hands to engine workers, like this:
//
//   auto incoming = glassbox::trace::extract([&](std::string_view name) { return req.header(name); });
//   glassbox::trace::ContextScope scope(incoming.context);
//   glassbox::trace::Span server("POST /train_step", glassbox::trace::SpanKind::server);
//   engine.backward(...);  // spans opened here and on workers join the caller's trace
//
// and passes it on to the next service:
//
//   glassbox::trace::inject(glassbox::trace::current_context(), incoming.tracestate,
//                           [&](std::string_view name, const std::string& value) { out.set(name, value); });
//
// Header names are lowercase; HTTP header names are case-insensitive, so a
// getter should look them up that way. Everything here is thread-safe.
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "glassbox/trace/span_context.hpp"

namespace glassbox::trace {

inline constexpr std::string_view kTraceparentHeader = "traceparent";
inline constexpr std::string_view kTracestateHeader = "tracestate";

/// "00-<32 hex trace id>-<16 hex span id>-<01 sampled | 00>", or "" for an invalid context.
std::string format_traceparent(const SpanContext& context);

/// The context a `traceparent` value names, marked remote; nullopt when the
/// value breaks the specification's rules (lowercase hex only, version ff and
/// all-zero ids invalid, version 00 exactly 55 characters, later versions
/// parsed as 00 when their first 55 characters allow it).
std::optional<SpanContext> parse_traceparent(std::string_view value);

/// `value` with blanks around members and empty members removed, when every
/// member is a valid key=value and there are at most 32 of them with distinct
/// keys; "" otherwise (the specification lets a vendor drop a bad tracestate).
std::string normalize_tracestate(std::string_view value);

/// What extract() found: an invalid context when there was no usable traceparent.
struct PropagatedContext {
  SpanContext context;
  std::string tracestate;  ///< to pass on unchanged with inject()
};

/// `get(name)` returns the header's value, empty when absent.
template <class Getter>
requires std::convertible_to<std::invoke_result_t<Getter&, std::string_view>, std::string_view> PropagatedContext
extract(Getter&& get) {
  PropagatedContext out;
  auto parent = parse_traceparent(get(kTraceparentHeader));
  if (!parent) return out;  // tracestate means nothing without its traceparent
  out.context = *parent;
  out.tracestate = normalize_tracestate(get(kTracestateHeader));
  return out;
}

/// Calls `set(name, value)` for traceparent, and for tracestate when it is not
/// empty; does nothing for an invalid context.
template <class Setter>
requires std::invocable<Setter&, std::string_view, const std::string&>
void inject(const SpanContext& context, std::string_view tracestate, Setter&& set) {
  std::string parent = format_traceparent(context);
  if (parent.empty()) return;
  set(kTraceparentHeader, parent);
  std::string state = normalize_tracestate(tracestate);
  if (!state.empty()) set(kTracestateHeader, state);
}

}  // namespace glassbox::trace
