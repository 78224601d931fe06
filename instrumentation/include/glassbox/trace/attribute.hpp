#pragma once
// Span attribute values: the scalar AnyValue kinds OTLP carries.
#include <cstdint>
#include <string>
#include <variant>

namespace glassbox::trace {

using AttributeValue = std::variant<bool, std::int64_t, double, std::string>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

}  // namespace glassbox::trace
