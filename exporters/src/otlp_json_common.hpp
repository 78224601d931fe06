#pragma once
// The parts every OTLP JSON request shares, traces and metrics alike: typed
// values (AnyValue), attribute lists, doubles as proto3 JSON writes them, and
// the resource-and-scope envelope around a signal's records.
#include <string_view>
#include <vector>

#include "glassbox/exporters/resource.hpp"
#include "glassbox/trace/attribute.hpp"
#include "json_writer.hpp"

namespace glassbox::exporters::detail {

/// A double as proto3 JSON has it: a number, or "NaN", "Infinity", "-Infinity".
void otlp_double(JsonWriter& w, double d);
/// An AnyValue object: {"stringValue": ...}, {"intValue": "..."}, ...
void otlp_any_value(JsonWriter& w, const trace::AttributeValue& v);
/// "attributes": [{"key": ..., "value": {...}}, ...]
void otlp_attributes(JsonWriter& w, const std::vector<trace::Attribute>& attributes);

/// Opens {"resource<Signal>s": [{"resource": {...}, "scope<Signal>s": [{"scope":
/// {glassbox}, "<records>": [ and leaves the writer inside that array;
/// otlp_close_envelope() closes it. `signal` is "Spans" or "Metrics".
void otlp_open_envelope(JsonWriter& w, std::string_view signal, std::string_view records, const Resource& resource);
void otlp_close_envelope(JsonWriter& w);

}  // namespace glassbox::exporters::detail
