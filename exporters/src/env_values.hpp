#pragma once
// Reading the OpenTelemetry SDK's environment variables. An empty value counts
// as unset (as the SDK specification says); a malformed one throws ConfigError
// naming the variable, the value and what is accepted.
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace glassbox::exporters::detail {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

/// The variable's value; nullopt when unset or empty.
std::optional<std::string> env(const char* name);
/// The first of `names` that is set.
std::optional<std::pair<const char*, std::string>> first_env(std::initializer_list<const char*> names);

/// A whole decimal number in [min, max].
std::uint64_t parse_count(const std::string& value, const char* variable, std::uint64_t min, std::uint64_t max);
/// "true" or "false".
bool parse_bool(const std::string& value, const char* variable);
/// A whole number of milliseconds, at least `min`.
std::chrono::milliseconds parse_millis(const std::string& value, const char* variable, std::uint64_t min = 0);
/// A whole number of seconds in [min, max].
std::chrono::seconds parse_seconds(const std::string& value, const char* variable, std::uint64_t min,
                                   std::uint64_t max);
/// "key1=value1,key2=value2" as W3C Baggage writes it: blanks around keys and
/// values dropped, values percent-decoded.
KeyValues parse_key_values(const std::string& value, const char* variable);

}  // namespace glassbox::exporters::detail
