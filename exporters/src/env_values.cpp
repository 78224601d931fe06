#include "env_values.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>

#include "glassbox/error.hpp"

namespace glassbox::exporters::detail {

namespace {

[[noreturn]] void reject(const char* variable, const std::string& value, const std::string& accepted) {
  throw ConfigError(std::string(variable) + "='" + value + "' is not accepted; expected " + accepted);
}

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%20" -> " "; false on a '%' not followed by two hex digits.
bool percent_decode(const std::string& in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || hex_value(in[i + 1]) < 0 || hex_value(in[i + 2]) < 0) return false;
    out += static_cast<char>(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
    i += 2;
  }
  return true;
}

std::uint64_t parse_whole(const std::string& value, const char* variable, std::uint64_t min, std::uint64_t max,
                          const std::string& what) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < min || n > max) {
    reject(variable, value, what + " from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return n;
}

}  // namespace

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::optional<std::pair<const char*, std::string>> first_env(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto v = env(n)) return std::pair{n, *v};
  }
  return std::nullopt;
}

std::uint64_t parse_count(const std::string& value, const char* variable, std::uint64_t min, std::uint64_t max) {
  return parse_whole(value, variable, min, max, "a whole number");
}

bool parse_bool(const std::string& value, const char* variable) {
  if (value != "true" && value != "false") reject(variable, value, "true or false");
  return value == "true";
}

std::chrono::milliseconds parse_millis(const std::string& value, const char* variable, std::uint64_t min) {
  auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
  return std::chrono::milliseconds(parse_whole(value, variable, min, max, "a whole number of milliseconds"));
}

std::chrono::seconds parse_seconds(const std::string& value, const char* variable, std::uint64_t min,
                                   std::uint64_t max) {
  return std::chrono::seconds(parse_whole(value, variable, min, max, "a whole number of seconds"));
}

KeyValues parse_key_values(const std::string& value, const char* variable) {
  KeyValues out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    std::string member = trim(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? value.size() + 1 : comma + 1;
    if (member.empty()) continue;
    std::size_t eq = member.find('=');
    std::string key = eq == std::string::npos ? "" : trim(member.substr(0, eq));
    std::string decoded;
    if (key.empty() || !percent_decode(trim(member.substr(eq + 1)), decoded)) {
      reject(variable, value,
             "comma-separated key=value pairs with percent-encoded values, e.g. key1=value1,key2=a%20b");
    }
    out.emplace_back(std::move(key), std::move(decoded));
  }
  return out;
}

}  // namespace glassbox::exporters::detail
