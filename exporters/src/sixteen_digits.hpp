#pragma once
// A finite double in 16 significant digits, as prometheus-cpp writes the 0.0.4
// text, shared by both /metrics serializers so a series reads the same in
// either format.
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace glassbox::exporters::detail {

/// The most characters sixteen_digits() writes: a sign, 16 digits, the point
/// and `e-308`.
inline constexpr std::size_t kSixteenDigitsMax = 23;

/// Writes finite `v` at `first` (room for 32 characters) and returns the end.
/// Most values are whole (counts, bytes): those take the integer path, which
/// writes the same digits several times faster than the general format.
inline char* sixteen_digits(char* first, double v) {
  constexpr double kExact = 9007199254740992.0;  // 2^53: every whole double below is exact, 16 digits
  if (v == std::trunc(v) && std::fabs(v) < kExact && !(v == 0 && std::signbit(v))) {
    return std::to_chars(first, first + 32, static_cast<std::int64_t>(v)).ptr;
  }
  return std::to_chars(first, first + 32, v, std::chars_format::general, 16).ptr;
}

}  // namespace glassbox::exporters::detail
