#include "glassbox/exporters/resource.hpp"

#include <cerrno>
#include <variant>

#include "env_values.hpp"

namespace glassbox::exporters {

namespace {

void set(std::vector<trace::Attribute>& attrs, std::string key, std::string value) {
  for (auto& a : attrs) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  attrs.push_back({std::move(key), std::move(value)});
}

}  // namespace

std::string_view glassbox_version() noexcept { return GLASSBOX_VERSION; }

std::string Resource::get(std::string_view key) const {
  for (const auto& a : attributes) {
    if (a.key == key) {
      const auto* s = std::get_if<std::string>(&a.value);
      return s ? *s : std::string();
    }
  }
  return {};
}

Resource Resource::make(std::string_view service_name, std::string_view resource_attributes) {
  Resource r;
  for (auto& [k, v] : detail::parse_key_values(std::string(resource_attributes), "OTEL_RESOURCE_ATTRIBUTES")) {
    set(r.attributes, k, v);
  }
  if (!service_name.empty()) {
    set(r.attributes, "service.name", std::string(service_name));
  } else if (r.service_name().empty()) {
    set(r.attributes, "service.name", std::string("unknown_service:") + program_invocation_short_name);
  }
  set(r.attributes, "telemetry.sdk.name", "glassbox");
  set(r.attributes, "telemetry.sdk.language", "cpp");
  set(r.attributes, "telemetry.sdk.version", std::string(glassbox_version()));
  return r;
}

Resource Resource::from_env() {
  return make(detail::env("OTEL_SERVICE_NAME").value_or(""), detail::env("OTEL_RESOURCE_ATTRIBUTES").value_or(""));
}

}  // namespace glassbox::exporters
