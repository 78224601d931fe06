#include "json_writer.hpp"

#include <charconv>
#include <cmath>

namespace glassbox::exporters::detail {

namespace {

bool in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// Length of the well-formed UTF-8 sequence at s[i] (Unicode table 3-7), 0 if none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  unsigned char c = at(0);
  auto tail = [&](std::size_t k) { return in(at(k), 0x80, 0xbf); };
  if (in(c, 0xc2, 0xdf)) return tail(1) ? 2 : 0;
  if (c == 0xe0) return in(at(1), 0xa0, 0xbf) && tail(2) ? 3 : 0;
  if (in(c, 0xe1, 0xec) || in(c, 0xee, 0xef)) return tail(1) && tail(2) ? 3 : 0;
  if (c == 0xed) return in(at(1), 0x80, 0x9f) && tail(2) ? 3 : 0;  // no surrogates
  if (c == 0xf0) return in(at(1), 0x90, 0xbf) && tail(2) && tail(3) ? 4 : 0;
  if (in(c, 0xf1, 0xf3)) return tail(1) && tail(2) && tail(3) ? 4 : 0;
  if (c == 0xf4) return in(at(1), 0x80, 0x8f) && tail(2) && tail(3) ? 4 : 0;
  return 0;
}

template <class T>
void append_number(std::string& out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

JsonWriter& JsonWriter::key(std::string_view k) {
  if (!first_) out_ += ',';
  first_ = false;
  escaped(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  before_value();
  escaped(s);
  return *this;
}

JsonWriter& JsonWriter::number(std::int64_t v) {
  before_value();
  append_number(out_, v);
  return *this;
}

JsonWriter& JsonWriter::number(std::uint64_t v) {
  before_value();
  append_number(out_, v);
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  before_value();
  if (std::isfinite(v))
    append_number(out_, v);
  else
    out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::open(char c) {
  before_value();
  out_ += c;
  first_ = true;
  return *this;
}

// The container just closed is a value of its parent, so the parent is no longer empty.
JsonWriter& JsonWriter::close(char c) {
  out_ += c;
  first_ = false;
  return *this;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_) out_ += ',';
  first_ = false;
}

void JsonWriter::escaped(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  auto plain = [](unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; };
  out_ += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t run = i;
    while (run < s.size() && plain(static_cast<unsigned char>(s[run]))) ++run;
    out_.append(s, i, run - i);
    if (run == s.size()) break;
    auto c = static_cast<unsigned char>(s[run]);
    i = run + 1;
    if (c >= 0x80) {
      std::size_t n = utf8_length(s, run);
      if (n == 0)
        out_ += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      else
        out_.append(s, run, n);
      i = run + (n == 0 ? 1 : n);
    } else if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
    } else {  // a control character
      out_ += "\\u00";
      out_ += hex[c >> 4];
      out_ += hex[c & 0xf];
    }
  }
  out_ += '"';
}

}  // namespace glassbox::exporters::detail
