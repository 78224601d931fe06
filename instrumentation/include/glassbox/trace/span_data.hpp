#pragma once
// A finished (or starting) span as processors and exporters receive it.
#include <cstdint>
#include <string>
#include <vector>

#include "glassbox/trace/attribute.hpp"
#include "glassbox/trace/span_context.hpp"

namespace glassbox::trace {

/// Values as OTLP numbers them (Status.StatusCode).
enum class StatusCode : int { unset = 0, ok = 1, error = 2 };
/// Values as OTLP numbers them (Span.SpanKind).
enum class SpanKind : int { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };

/// Something that happened at one moment during a span (OTLP Span.Event).
struct SpanEvent {
  std::string name;
  std::uint64_t time_unix_ns = 0;
  std::vector<Attribute> attributes;
};

struct SpanData {
  std::string name;
  SpanContext context;
  SpanId parent_span_id;  ///< all zero for a root span
  SpanKind kind = SpanKind::internal;
  std::uint64_t start_unix_ns = 0;
  std::uint64_t end_unix_ns = 0;
  std::uint64_t thread_id = 0;  ///< OS thread id of the thread that opened it
  std::vector<Attribute> attributes;
  StatusCode status = StatusCode::unset;
  std::string status_message;
  std::vector<SpanEvent> events;
};

}  // namespace glassbox::trace
