// The OTEL_* variables' parsing, through the entry points a service calls
// (OtlpHttpOptions::from_env, OtlpMetricOptions::from_env,
// otlp_metrics_enabled_in_env, BatchOptions::from_env, Resource::from_env).
// Input: one line per variable, in kVariables' order; a missing line leaves
// the variable unset. Every input either yields options or throws a
// ConfigError whose message names an OTEL_ variable; nothing else escapes.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "glassbox/error.hpp"
#include "glassbox/exporters/batch_span_processor.hpp"
#include "glassbox/exporters/otlp_http_exporter.hpp"
#include "glassbox/exporters/otlp_metric_exporter.hpp"
#include "glassbox/exporters/resource.hpp"

namespace {

constexpr const char* kVariables[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_EXPORT_TIMEOUT",
    // Added after the corpus was made, so its inputs keep their meaning.
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    "OTEL_METRICS_EXPORTER",
    "OTEL_METRIC_EXPORT_INTERVAL",
};

// setenv() stops at a NUL, as a real environment would.
void set_variables(std::string_view input) {
  for (const char* name : kVariables) {
    if (input.empty()) {
      ::unsetenv(name);
      continue;
    }
    std::size_t newline = input.find('\n');
    ::setenv(name, std::string(input.substr(0, newline)).c_str(), 1);
    input = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);
  }
}

template <class F>
void parse_or_name_the_variable(F&& parse) {
  try {
    parse();
  } catch (const glassbox::ConfigError& e) {
    fuzz_check(std::string_view(e.what()).find("OTEL_") != std::string_view::npos,
               "a ConfigError names the OTEL_ variable", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  set_variables(std::string_view(reinterpret_cast<const char*>(data), size));
  parse_or_name_the_variable([] {
    auto o = glassbox::exporters::OtlpHttpOptions::from_env();
    std::string scheme = o.url.substr(0, o.url.find("://"));  // schemes are case-insensitive (RFC 3986)
    std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
    fuzz_check(scheme == "http" || scheme == "https", "the traces URL is http(s)", o.url);
  });
  parse_or_name_the_variable([] {
    auto b = glassbox::exporters::BatchOptions::from_env();
    fuzz_check(b.max_export_batch_size <= b.max_queue_size, "a batch fits in the queue");
  });
  parse_or_name_the_variable([] {
    auto m = glassbox::exporters::OtlpMetricOptions::from_env();
    fuzz_check(m.interval.count() >= 1, "the metric export interval is at least 1 ms");
  });
  parse_or_name_the_variable([] { (void)glassbox::exporters::otlp_metrics_enabled_in_env(); });
  parse_or_name_the_variable([] { (void)glassbox::exporters::Resource::from_env(); });
  return 0;
}
