#pragma once
// The OpenTelemetry resource: attributes that describe the process every span
// and metric came from (service.name, service.instance.id, telemetry.sdk.*).
// Exporters attach it to what they send; the trace file names its process
// after service.name. Behind an OpenTelemetry Collector's Prometheus
// exporter, service.name becomes the `job` label and service.instance.id the
// `instance` label, so processes of one service must differ in the second.
#include <string>
#include <string_view>
#include <vector>

#include "glassbox/trace/attribute.hpp"

namespace glassbox::exporters {

/// glassbox's version, as the instrumentation scope and telemetry.sdk.version carry it.
std::string_view glassbox_version() noexcept;

struct Resource {
  std::vector<trace::Attribute> attributes;

  /// The string value of `key`, or "" when absent or not a string.
  std::string get(std::string_view key) const;
  std::string service_name() const { return get("service.name"); }

  /// From OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; a malformed
  /// OTEL_RESOURCE_ATTRIBUTES throws ConfigError naming it.
  static Resource from_env();
  /// Same, from given values (empty means unset). service.name comes from
  /// `service_name`, else from `resource_attributes`, else is
  /// "unknown_service:<executable name>"; service.instance.id comes from
  /// `resource_attributes`, else is a random UUID made once per process (so
  /// traces and metrics agree); telemetry.sdk.{name,language,version}
  /// are glassbox's and cannot be overridden.
  static Resource make(std::string_view service_name, std::string_view resource_attributes);
};

}  // namespace glassbox::exporters
