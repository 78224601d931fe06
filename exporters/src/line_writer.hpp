#pragma once
// The writer both /metrics serializers write a scrape with. A thousand series
// are a few thousand lines of a few pieces each; std::string::append checks and
// moves more than it copies for pieces that short, so this writes through a
// pointer into the string's own buffer, growing it only when a piece would not
// fit, and cuts the string to what was written when done.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

class LineWriter {
 public:
  /// Appends to `out`, with room for `expected` more bytes made up front.
  LineWriter(std::string& out, std::size_t expected) : out_(out), at_(out.size()) { out_.resize(at_ + expected); }
  ~LineWriter() { out_.resize(at_); }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  /// Makes room for `n` more bytes at once, so the writes after it do not grow the buffer piece by piece.
  void reserve(std::size_t n) { room(n); }

  [[gnu::always_inline]] void put(std::string_view s) {
    copy(room(s.size()), s.data(), s.size());
    at_ += s.size();
  }
  [[gnu::always_inline]] void put(char c) {
    *room(1) = c;
    ++at_;
  }
  void put(std::uint64_t v) {
    char* first = room(20);  // before the bound is taken: room() may move the buffer
    at_ = end_offset(std::to_chars(first, first + 20, v).ptr);
  }
  /// A finite double as sixteen_digits writes it; the caller spells NaN and infinities.
  void put_finite(double v) { at_ = end_offset(sixteen_digits(room(32), v)); }

 private:
  // Most pieces are a name, a label block or a bucket's ending, 32 bytes or
  // fewer: those are copied here by two overlapping moves of a fixed size
  // (plain loads and stores), not by a call to memcpy, which was a tenth of
  // a scrape. Longer ones go to memcpy. `n` may be 0 (`s` then may be null).
  [[gnu::always_inline]] static void copy(char* d, const char* s, std::size_t n) {
    if (n > 32) {
      std::memcpy(d, s, n);
    } else if (n >= 16) {
      move_ends<16>(d, s, n);
    } else if (n >= 8) {
      move_ends<8>(d, s, n);
    } else if (n >= 4) {
      move_ends<4>(d, s, n);
    } else if (n > 0) {
      d[0] = s[0];
      d[n / 2] = s[n / 2];
      d[n - 1] = s[n - 1];
    }
  }
  // The first and the last K bytes of n (K <= n <= 2K), both read before either is written.
  template <std::size_t K>
  [[gnu::always_inline]] static void move_ends(char* d, const char* s, std::size_t n) {
    char head[K], tail[K];
    std::memcpy(head, s, K);
    std::memcpy(tail, s + n - K, K);
    std::memcpy(d, head, K);
    std::memcpy(d + n - K, tail, K);
  }
  [[gnu::always_inline]] char* room(std::size_t n) {
    if (out_.size() - at_ < n) [[unlikely]]
      grow(n);
    return out_.data() + at_;
  }
  [[gnu::noinline]] void grow(std::size_t n) { out_.resize(std::max(out_.size() * 2, at_ + n)); }
  std::size_t end_offset(const char* end) const { return static_cast<std::size_t>(end - out_.data()); }

  std::string& out_;
  std::size_t at_;  // the end of what was written; out_ past it is room
};

/// A sample line up to its value: name, suffix, then `labels` (`{k="v",...`
/// left open, or empty) closed, and the space before the value.
inline void sample_start(LineWriter& w, std::string_view name, std::string_view suffix, std::string_view labels) {
  w.put(name);
  w.put(suffix);
  w.put(labels);
  w.put(labels.empty() ? std::string_view(" ") : std::string_view("} "));
}

}  // namespace glassbox::exporters::detail
