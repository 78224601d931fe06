#include "otlp_json_common.hpp"

#include <cmath>
#include <string>
#include <variant>

#include "glassbox/exporters/otlp_json.hpp"

namespace glassbox::exporters::detail {

void otlp_double(JsonWriter& w, double d) {
  if (std::isnan(d))
    w.string("NaN");
  else if (std::isinf(d))
    w.string(d > 0 ? "Infinity" : "-Infinity");
  else
    w.number(d);
}

void otlp_any_value(JsonWriter& w, const trace::AttributeValue& v) {
  struct Visit {
    JsonWriter& w;
    void operator()(bool b) const { w.key("boolValue").boolean(b); }
    void operator()(std::int64_t i) const { w.key("intValue").string(std::to_string(i)); }
    void operator()(double d) const { otlp_double(w.key("doubleValue"), d); }
    void operator()(const std::string& s) const { w.key("stringValue").string(s); }
  };
  w.begin_object();
  std::visit(Visit{w}, v);
  w.end_object();
}

void otlp_attributes(JsonWriter& w, const std::vector<trace::Attribute>& attributes) {
  w.key("attributes").begin_array();
  for (const auto& a : attributes) {
    w.begin_object().key("key").string(a.key).key("value");
    otlp_any_value(w, a.value);
    w.end_object();
  }
  w.end_array();
}

void otlp_open_envelope(JsonWriter& w, std::string_view signal, std::string_view records, const Resource& resource) {
  const std::string name(signal);
  w.begin_object().key("resource" + name).begin_array().begin_object();
  w.key("resource").begin_object();
  otlp_attributes(w, resource.attributes);
  w.end_object();
  w.key("scope" + name).begin_array().begin_object();
  w.key("scope").begin_object().key("name").string(kScopeName).key("version").string(glassbox_version()).end_object();
  w.key(records).begin_array();
}

void otlp_close_envelope(JsonWriter& w) {
  w.end_array();
  w.end_object().end_array();
  w.end_object().end_array().end_object();
}

}  // namespace glassbox::exporters::detail
