#pragma once
// The writer both /metrics serializers write a scrape with. A thousand series
// are a few thousand lines of a few pieces each; std::string::append checks and
// moves more than it copies for pieces that short, so this writes through a
// pointer into the string's own buffer, growing it only when a line would not
// fit, and cuts the string to what was written when done.
//
// A sample line is written through a local pointer (line(), the put_* below,
// end_line()): room is made once per line, and the pointer stays in a
// register. Written piece by piece through the writer's members, every store
// of a byte could alias the writer's own fields, so each piece reloaded them
// and stored the end back: a chain through memory per piece.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace glassbox::exporters::detail {

// The first and the last K bytes of n (K <= n <= 2K), both read before either is written.
template <std::size_t K>
[[gnu::always_inline]] inline void move_ends(char* d, const char* s, std::size_t n) {
  char head[K], tail[K];
  std::memcpy(head, s, K);
  std::memcpy(tail, s + n - K, K);
  std::memcpy(d, head, K);
  std::memcpy(d + n - K, tail, K);
}

// Most pieces are a name, a label block, a bucket line's start or ending, 64
// bytes or fewer: those are copied here by two overlapping moves of a fixed size
// (plain loads and stores), not by a call to memcpy, which was a tenth of
// a scrape. Longer ones go to memcpy. `n` may be 0 (`s` then may be null).
[[gnu::always_inline]] inline void copy_piece(char* d, const char* s, std::size_t n) {
  if (n > 64) {
    std::memcpy(d, s, n);
  } else if (n >= 32) {
    move_ends<32>(d, s, n);
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

/// Writes `s` at `d`; returns the end.
[[gnu::always_inline]] inline char* put_piece(char* d, std::string_view s) {
  copy_piece(d, s.data(), s.size());
  return d + s.size();
}

/// The most bytes put_count() writes (2^64 - 1 has 20 digits).
inline constexpr std::size_t kCountRoom = 20;
/// The most bytes a format's number writer may write (sixteen_digits.hpp, or NaN and infinities).
inline constexpr std::size_t kNumberRoom = 32;

/// Writes `v` in decimal at `d` (room for kCountRoom); returns the end.
inline char* put_count(char* d, std::uint64_t v) { return std::to_chars(d, d + kCountRoom, v).ptr; }

class LineWriter {
 public:
  /// Appends to `out`, with room for `expected` more bytes made up front.
  LineWriter(std::string& out, std::size_t expected) : out_(out), at_(out.size()) { out_.resize(at_ + expected); }
  ~LineWriter() { out_.resize(at_); }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  /// Makes room for `n` more bytes at once, so the writes after it do not grow the buffer piece by piece.
  void reserve(std::size_t n) { room(n); }

  /// Where a line of at most `n` bytes is written; end_line() takes its end.
  [[gnu::always_inline]] char* line(std::size_t n) { return room(n); }
  /// Ends what line() began: `end` is one past its last byte.
  [[gnu::always_inline]] void end_line(const char* end) { at_ = static_cast<std::size_t>(end - out_.data()); }

  /// Pieces one at a time, for the few lines that are not samples.
  [[gnu::always_inline]] void put(std::string_view s) { end_line(put_piece(room(s.size()), s)); }
  [[gnu::always_inline]] void put(char c) {
    *room(1) = c;
    ++at_;
  }

 private:
  [[gnu::always_inline]] char* room(std::size_t n) {
    if (out_.size() - at_ < n) [[unlikely]]
      grow(n);
    return out_.data() + at_;
  }
  [[gnu::noinline]] void grow(std::size_t n) { out_.resize(std::max(out_.size() * 2, at_ + n)); }

  std::string& out_;
  std::size_t at_;  // the end of what was written; out_ past it is room
};

/// The most bytes sample_start() writes besides its pieces.
inline constexpr std::size_t kSampleStartRoom = 2;

/// A sample line up to its value, at `d`: name, suffix, then `labels`
/// (`{k="v",...` left open, or empty) closed, and the space before the
/// value. Returns the end.
[[gnu::always_inline]] inline char* sample_start(char* d, std::string_view name, std::string_view suffix,
                                                 std::string_view labels) {
  d = put_piece(d, name);
  d = put_piece(d, suffix);
  d = put_piece(d, labels);
  return put_piece(d, labels.empty() ? std::string_view(" ") : std::string_view("} "));
}

/// Room a sample line of these pieces needs, value and newline included.
inline std::size_t sample_room(std::string_view name, std::string_view suffix, std::string_view labels) {
  return name.size() + suffix.size() + labels.size() + kSampleStartRoom + kNumberRoom + 1;
}

}  // namespace glassbox::exporters::detail
