#include "glassbox/exporters/resource.hpp"

#include <array>
#include <cerrno>
#include <random>
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

// A random UUID (version 4), made once: traces and metrics of one process
// must name the same instance, and two processes must not.
const std::string& process_instance_id() {
  static const std::string id = [] {
    std::random_device rd;
    std::array<unsigned char, 16> b{};
    for (auto& byte : b) byte = static_cast<unsigned char>(rd());
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
    std::string out;
    for (std::size_t i = 0; i < b.size(); ++i) {
      static constexpr char kHex[] = "0123456789abcdef";
      if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
      out += kHex[b[i] >> 4];
      out += kHex[b[i] & 0xf];
    }
    return out;
  }();
  return id;
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
  if (r.get("service.instance.id").empty()) set(r.attributes, "service.instance.id", process_instance_id());
  set(r.attributes, "telemetry.sdk.name", "glassbox");
  set(r.attributes, "telemetry.sdk.language", "cpp");
  set(r.attributes, "telemetry.sdk.version", std::string(glassbox_version()));
  return r;
}

Resource Resource::from_env() {
  return make(detail::env("OTEL_SERVICE_NAME").value_or(""), detail::env("OTEL_RESOURCE_ATTRIBUTES").value_or(""));
}

}  // namespace glassbox::exporters
