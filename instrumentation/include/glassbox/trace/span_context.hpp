#pragma once
// Identity of a span as W3C Trace Context and OTLP define it: a 16-byte trace
// id, an 8-byte span id (neither all zero when valid) and the sampled flag.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace glassbox::trace {

namespace detail {
// Inline and word-wise: every span asks whether its parent is valid, often twice.
template <std::size_t N>
bool any_nonzero(const std::array<std::uint8_t, N>& bytes) noexcept {
  std::uint64_t words[N / 8];
  std::memcpy(words, bytes.data(), N);
  std::uint64_t any = 0;
  for (auto w : words) any |= w;
  return any != 0;
}
}  // namespace detail

struct TraceId {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const noexcept { return detail::any_nonzero(bytes); }
  std::string hex() const;  ///< 32 lowercase hex digits
  static TraceId random();  ///< never all zero
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

struct SpanId {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const noexcept { return detail::any_nonzero(bytes); }
  std::string hex() const;  ///< 16 lowercase hex digits
  static SpanId random();   ///< never all zero
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

// 16-byte aligned, 32 bytes: every span copies one to and from a thread-local,
// and two aligned 16-byte moves are the cheapest such copy.
struct alignas(16) SpanContext {
  TraceId trace_id;
  SpanId span_id;
  bool sampled = false;
  bool remote = false;  ///< extracted from another process
  bool valid() const noexcept { return trace_id.valid() && span_id.valid(); }
  friend bool operator==(const SpanContext&, const SpanContext&) = default;
};

}  // namespace glassbox::trace
