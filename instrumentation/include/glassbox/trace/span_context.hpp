#pragma once
// Identity of a span as W3C Trace Context and OTLP define it: a 16-byte trace
// id, an 8-byte span id (neither all zero when valid) and the sampled flag.
#include <array>
#include <cstdint>
#include <string>

namespace glassbox::trace {

struct TraceId {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const noexcept;
  std::string hex() const;  ///< 32 lowercase hex digits
  static TraceId random();  ///< never all zero
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

struct SpanId {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const noexcept;
  std::string hex() const;  ///< 16 lowercase hex digits
  static SpanId random();   ///< never all zero
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

struct SpanContext {
  TraceId trace_id;
  SpanId span_id;
  bool sampled = false;
  bool remote = false;  ///< extracted from another process
  bool valid() const noexcept { return trace_id.valid() && span_id.valid(); }
  friend bool operator==(const SpanContext&, const SpanContext&) = default;
};

}  // namespace glassbox::trace
