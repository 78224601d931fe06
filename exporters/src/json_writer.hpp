#pragma once
// Writes JSON text straight into a string, for the exporters' hot loops: the
// OTLP body and the trace file's events. Building a DOM first (nlohmann::json)
// cost 4-5x the time, all of it allocation. Strings are escaped as RFC 8259
// asks; bytes that are not valid UTF-8 become U+FFFD, one per bad byte.
#include <cstdint>
#include <string>
#include <string_view>

namespace glassbox::exporters::detail {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) noexcept : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  /// An object member's key; its value comes next.
  JsonWriter& key(std::string_view k);
  JsonWriter& string(std::string_view s);
  JsonWriter& number(std::int64_t v);
  JsonWriter& number(std::uint64_t v);
  /// Shortest text that reads back as `v`; null for NaN and infinities, which JSON lacks.
  JsonWriter& number(double v);
  JsonWriter& boolean(bool v);

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void before_value();
  void escaped(std::string_view s);

  std::string& out_;
  bool first_ = true;       // nothing written yet in the innermost container
  bool after_key_ = false;  // the next value belongs to a key just written
};

}  // namespace glassbox::exporters::detail
