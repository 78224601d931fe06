#include "glassbox/exporters/otlp_json.hpp"

#include "json_writer.hpp"
#include "otlp_json_common.hpp"

namespace glassbox::exporters {

namespace {

using detail::JsonWriter;

void events(JsonWriter& w, const std::vector<trace::SpanEvent>& list) {
  w.key("events").begin_array();
  for (const auto& e : list) {
    w.begin_object().key("timeUnixNano").string(std::to_string(e.time_unix_ns)).key("name").string(e.name);
    if (!e.attributes.empty()) detail::otlp_attributes(w, e.attributes);
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
  if (!s.attributes.empty()) detail::otlp_attributes(w, s.attributes);
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
  detail::otlp_open_envelope(w, "Spans", "spans", resource);
  for (const auto& s : spans) span(w, s);
  detail::otlp_close_envelope(w);
  return out;
}

}  // namespace glassbox::exporters
