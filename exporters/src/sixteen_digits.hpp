#pragma once
// A finite double in 16 significant digits, as prometheus-cpp writes the 0.0.4
// text, shared by both /metrics serializers so a series reads the same in
// either format.
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace glassbox::exporters::detail {

/// The most characters sixteen_digits() writes: a sign, 16 digits, the point
/// and `e-308`.
inline constexpr std::size_t kSixteenDigitsMax = 23;

namespace sixteen {

// 10^0 .. 10^19, each below 2^64.
inline constexpr auto kPow10 = [] {
  std::array<std::uint64_t, 20> powers{};
  powers[0] = 1;
  for (std::size_t i = 1; i < powers.size(); ++i) powers[i] = powers[i - 1] * 10;
  return powers;
}();

// v (positive, 1e-5 <= v < 1e15, not whole) rounded to 16 significant
// digits: the digits as an integer in [1e15, 1e16) and the decimal exponent
// of the first. Exact integer arithmetic: v is m * 2^-s (m below 2^53), so
// v * 10^k is m * 10^k (below 2^120 for k <= 20) shifted right by s, and the
// bits shifted out say how to round. False on an exact tie (printf rounds
// those to even; std::to_chars decides them).
inline bool round_to_sixteen(double v, std::uint64_t& digits, int& exponent) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  const int binary = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // 2^binary <= v < 2^(binary + 1)
  const std::uint64_t mantissa = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  const int shift = 52 - binary;   // v = mantissa * 2^-shift; above 0, as v < 2^52
  int e = (binary * 78913) >> 18;  // floor(binary * log10(2)): floor(log10 v) or one less
  for (int attempt = 0; attempt < 2; ++attempt, ++e) {
    const int k = 15 - e;               // v * 10^k in [1e15, 1e16) when e is right
    if (k < 1 || k > 20) return false;  // just below 1.5e-5 (k = 21) or rounded up to 1e15 (k = 0)
    __extension__ using u128 = unsigned __int128;
    const u128 scaled = k <= 19 ? u128{mantissa} * kPow10[k] : u128{mantissa} * kPow10[19] * 10;
    std::uint64_t n = static_cast<std::uint64_t>(scaled >> shift);
    const u128 rest = scaled & ((u128{1} << shift) - 1);
    const u128 half = u128{1} << (shift - 1);
    if (rest == half) return false;
    n += rest > half;
    if (n >= 10000000000000000ULL) continue;  // e was one short
    if (n < 1000000000000000ULL) return false;
    digits = n;
    exponent = e;
    return true;
  }
  return false;
}

// The 16 decimal digits of `n` (below 1e16) at `out`, two at a time.
inline void sixteen_decimal_digits(char* out, std::uint64_t n) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  auto eight = [](char* at, std::uint32_t v) {
    for (int i = 6; i >= 0; i -= 2, v /= 100) std::memcpy(at + i, kPairs + 2 * (v % 100), 2);
  };
  eight(out, static_cast<std::uint32_t>(n / 100000000));
  eight(out + 8, static_cast<std::uint32_t>(n % 100000000));
}

// What printf's %.16g writes for `digits` (16 of them, the first of decimal
// exponent `exponent`, -5 <= exponent <= 15) at `first`, where 24 bytes are
// room; returns the end. Built in a local buffer by copies of fixed sizes,
// which compile to a few moves where copies of a computed length were calls
// to memcpy.
inline char* write_general(char* first, std::uint64_t digits, int exponent) {
  char text[32] = {};
  sixteen_decimal_digits(text, digits);
  int kept = 16;
  while (kept > 1 && text[kept - 1] == '0') --kept;  // %g drops trailing zeros
  char out[48];
  char* p = out;
  if (exponent < -4) {  // d.ddde-05 (exponent is -5 here)
    out[0] = text[0];
    out[1] = '.';
    std::memcpy(out + 2, text + 1, 16);
    p = kept > 1 ? out + 1 + kept : out + 1;
    std::memcpy(p, "e-05", 4);
    p += 4;
  } else if (exponent < 0) {  // 0.000ddd
    std::memcpy(out, "0.000000", 8);
    p = out + 2 + (-exponent - 1);
    std::memcpy(p, text, 16);
    p += kept;
  } else {  // the whole part, then what digits are left
    std::memcpy(out, text, 16);
    p = out + exponent + 1;
    if (kept > exponent + 1) {
      *p = '.';
      std::memcpy(p + 1, text + exponent + 1, 16);
      p += 1 + (kept - exponent - 1);
    }
  }
  std::memcpy(first, out, 24);  // at most 22 of them are the number's
  return first + (p - out);
}

}  // namespace sixteen

/// Writes finite `v` at `first` (room for 32 characters) and returns the end.
/// Most values are whole (counts, bytes): those take the integer path, which
/// writes the same digits several times faster than the general format. Most
/// others (seconds, ratios) lie between 1e-5 and 1e15, where exact integer
/// arithmetic rounds them to 16 digits in about a third of the time of
/// std::to_chars' general format with a precision (18 against 52 ns here; a
/// histogram's sum took a fifth of a scrape); the rest, and exact ties, go to
/// std::to_chars.
inline char* sixteen_digits(char* first, double v) {
  constexpr double kExact = 9007199254740992.0;  // 2^53: every whole double below is exact, 16 digits
  if (v == std::trunc(v) && std::fabs(v) < kExact && !(v == 0 && std::signbit(v))) {
    return std::to_chars(first, first + 32, static_cast<std::int64_t>(v)).ptr;
  }
  const double magnitude = std::fabs(v);
  std::uint64_t digits = 0;
  int exponent = 0;
  if (magnitude >= 1e-5 && magnitude < 1e15 && sixteen::round_to_sixteen(magnitude, digits, exponent)) {
    char* p = first;
    if (v < 0) *p++ = '-';
    return sixteen::write_general(p, digits, exponent);
  }
  return std::to_chars(first, first + 32, v, std::chars_format::general, 16).ptr;
}

}  // namespace glassbox::exporters::detail
