// W3C Trace Context header parsing and formatting (Level 1, sections 3.2 and 3.3).
#include "glassbox/trace/propagation.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace glassbox::trace {

namespace {

constexpr std::size_t kTraceparentSize = 55;  // "00-" + 32 + "-" + 16 + "-" + 2
constexpr std::size_t kMaxTracestateMembers = 32;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not HEXDIGLC
}

// Decodes exactly 2 * N lowercase hex digits.
template <std::size_t N>
bool parse_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}

// simple-key = lcalpha 0*255(keychar); tenant-id "@" system-id with
// tenant-id = (lcalpha / DIGIT) 0*240(keychar), system-id = lcalpha 0*13(keychar).
bool valid_key_part(std::string_view part, std::size_t max, bool digit_first) {
  if (part.empty() || part.size() > max) return false;
  char first = part.front();
  if (!((first >= 'a' && first <= 'z') || (digit_first && first >= '0' && first <= '9'))) return false;
  return std::all_of(part.begin(), part.end(), is_key_char);
}

bool valid_key(std::string_view key) {
  std::size_t at = key.find('@');
  if (at == std::string_view::npos) return valid_key_part(key, 256, false);
  return valid_key_part(key.substr(0, at), 241, true) && valid_key_part(key.substr(at + 1), 14, false);
}

// value = 0*255(chr) nblk-chr, chr = %x20 / nblk-chr, nblk-chr = %x21-7E except "," and "=".
bool valid_value(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') return false;
  return std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

std::string_view trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string format_traceparent(const SpanContext& context) {
  if (!context.valid()) return {};
  return "00-" + context.trace_id.hex() + "-" + context.span_id.hex() + (context.sampled ? "-01" : "-00");
}

std::optional<SpanContext> parse_traceparent(std::string_view value) {
  if (value.size() < kTraceparentSize) return std::nullopt;
  std::array<std::uint8_t, 1> version{}, flags{};
  if (!parse_hex(value.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 has exactly four fields; a later version may append more after a '-'.
  if (version[0] == 0 ? value.size() != kTraceparentSize
                      : value.size() > kTraceparentSize && value[kTraceparentSize] != '-') {
    return std::nullopt;
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  SpanContext context;
  if (!parse_hex(value.substr(3, 32), context.trace_id.bytes) ||
      !parse_hex(value.substr(36, 16), context.span_id.bytes) || !parse_hex(value.substr(53, 2), flags) ||
      !context.valid()) {
    return std::nullopt;
  }
  context.sampled = (flags[0] & 0x01) != 0;
  context.remote = true;
  return context;
}

std::string normalize_tracestate(std::string_view value) {
  std::vector<std::string_view> members;
  std::set<std::string_view> keys;
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    std::string_view member = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    if (member.empty()) continue;  // the list grammar allows empty members
    std::size_t eq = member.find('=');
    if (eq == std::string_view::npos) return {};
    std::string_view key = member.substr(0, eq);
    if (!valid_key(key) || !valid_value(member.substr(eq + 1)) || !keys.insert(key).second) return {};
    members.push_back(member);
  }
  if (members.size() > kMaxTracestateMembers) return {};
  std::string out;
  for (auto m : members) {
    if (!out.empty()) out += ',';
    out += m;
  }
  return out;
}

}  // namespace glassbox::trace
