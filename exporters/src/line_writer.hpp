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
    if (s.empty()) return;  // data() may be null, which memcpy does not take
    std::memcpy(room(s.size()), s.data(), s.size());
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
