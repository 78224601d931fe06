#pragma once
// Spans as an OTLP ExportTraceServiceRequest in the OTLP/HTTP JSON encoding
// (opentelemetry-proto docs/specification.md, "JSON Protobuf Encoding"): the
// proto3 JSON mapping with lowerCamelCase keys, except that trace and span ids
// are lowercase hex rather than base64 and enums are integers only. 64-bit
// integers (timeUnixNano, intValue) are decimal strings, as proto3 JSON writes
// them; doubles that JSON numbers cannot hold are "NaN", "Infinity",
// "-Infinity". Fields at their default value are left out, as proto3 allows.
// Invalid UTF-8 in names or values is replaced with U+FFFD.
#include <span>
#include <string>

#include "glassbox/exporters/resource.hpp"
#include "glassbox/trace/span_data.hpp"

namespace glassbox::exporters {

/// Instrumentation scope name every glassbox span is reported under.
inline constexpr const char* kScopeName = "glassbox";

/// One resourceSpans with one scopeSpans holding `spans`, as a JSON text.
std::string otlp_json(std::span<const trace::SpanData> spans, const Resource& resource);

}  // namespace glassbox::exporters
