#include "glassbox/exporters/otlp_json.hpp"

#include <cmath>
#include <variant>

#include "json_writer.hpp"

namespace glassbox::exporters {

namespace {

using detail::JsonWriter;

void any_value(JsonWriter& w, const trace::AttributeValue& v) {
  struct Visit {
    JsonWriter& w;
    void operator()(bool b) const { w.key("boolValue").boolean(b); }
    void operator()(std::int64_t i) const { w.key("intValue").string(std::to_string(i)); }
    void operator()(double d) const {
      w.key("doubleValue");
      if (std::isnan(d))
        w.string("NaN");
      else if (std::isinf(d))
        w.string(d > 0 ? "Infinity" : "-Infinity");
      else
        w.number(d);
    }
    void operator()(const std::string& s) const { w.key("stringValue").string(s); }
  };
  w.begin_object();
  std::visit(Visit{w}, v);
  w.end_object();
}

void key_values(JsonWriter& w, const std::vector<trace::Attribute>& attributes) {
  w.key("attributes").begin_array();
  for (const auto& a : attributes) {
    w.begin_object().key("key").string(a.key).key("value");
    any_value(w, a.value);
    w.end_object();
  }
  w.end_array();
}

void events(JsonWriter& w, const std::vector<trace::SpanEvent>& list) {
  w.key("events").begin_array();
  for (const auto& e : list) {
    w.begin_object().key("timeUnixNano").string(std::to_string(e.time_unix_ns)).key("name").string(e.name);
    if (!e.attributes.empty()) key_values(w, e.attributes);
    w.end_object();
  }
  w.end_array();
}

void span(JsonWriter& w, const trace::SpanData& s) {
  w.begin_object();
  w.key("traceId").string(s.context.trace_id.hex());
  w.key("spanId").string(s.context.span_id.hex());
  if (s.parent_span_id.valid()) w.key("parentSpanId").string(s.parent_span_id.hex());
  w.key("name").string(s.name);
  w.key("kind").number(std::int64_t{static_cast<int>(s.kind)});
  w.key("startTimeUnixNano").string(std::to_string(s.start_unix_ns));
  w.key("endTimeUnixNano").string(std::to_string(s.end_unix_ns));
  if (!s.attributes.empty()) key_values(w, s.attributes);
  if (!s.events.empty()) events(w, s.events);
  if (s.status != trace::StatusCode::unset) {
    w.key("status").begin_object().key("code").number(std::int64_t{static_cast<int>(s.status)});
    if (!s.status_message.empty()) w.key("message").string(s.status_message);
    w.end_object();
  }
  w.end_object();
}

}  // namespace

std::string otlp_json(std::span<const trace::SpanData> spans, const Resource& resource) {
  std::string out;
  out.reserve(512 + 512 * spans.size());
  JsonWriter w(out);
  w.begin_object().key("resourceSpans").begin_array().begin_object();
  w.key("resource").begin_object();
  key_values(w, resource.attributes);
  w.end_object();
  w.key("scopeSpans").begin_array().begin_object();
  w.key("scope").begin_object().key("name").string(kScopeName).key("version").string(glassbox_version()).end_object();
  w.key("spans").begin_array();
  for (const auto& s : spans) span(w, s);
  w.end_array();
  w.end_object().end_array();
  w.end_object().end_array().end_object();
  return out;
}

}  // namespace glassbox::exporters
