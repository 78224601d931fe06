#include "glassbox/exporters/http_limits.hpp"

#include <string>

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

namespace {

constexpr std::uint64_t kMaxConnections = 1'000'000;
constexpr std::uint64_t kMinHeaderBytes = 1024;  // a scrape's head with an Authorization header is ~300 bytes
constexpr std::uint64_t kMaxHeaderBytes = 1024 * 1024;

void check(bool ok, const std::string& what) {
  if (!ok) throw ConfigError("glassbox /metrics: HttpLimits::" + what);
}

std::uint64_t count_from_env(const char* variable, std::uint64_t min, std::uint64_t max, std::uint64_t fallback) {
  auto v = detail::env(variable);
  return v ? detail::parse_count(*v, variable, min, max) : fallback;
}

}  // namespace

HttpLimits HttpLimits::from_env() {
  HttpLimits l;
  if (auto v = detail::env("GLASSBOX_METRICS_HEADER_TIMEOUT")) {
    l.header_timeout = detail::parse_seconds(*v, "GLASSBOX_METRICS_HEADER_TIMEOUT", 1, 3600);
  }
  if (auto v = detail::env("GLASSBOX_METRICS_ANSWER_TIMEOUT")) {
    l.answer_timeout = detail::parse_seconds(*v, "GLASSBOX_METRICS_ANSWER_TIMEOUT", 1, 3600);
  }
  l.max_header_bytes =
      count_from_env("GLASSBOX_METRICS_MAX_HEADER_BYTES", kMinHeaderBytes, kMaxHeaderBytes, l.max_header_bytes);
  l.max_connections = count_from_env("GLASSBOX_METRICS_MAX_CONNECTIONS", 1, kMaxConnections, l.max_connections);
  l.max_connections_per_client =
      count_from_env("GLASSBOX_METRICS_MAX_CONNECTIONS_PER_CLIENT", 1, kMaxConnections, l.max_connections_per_client);
  return l;
}

void HttpLimits::validate() const {
  using std::chrono::milliseconds;
  check(header_timeout >= milliseconds(1) && idle_timeout >= milliseconds(1) && write_timeout >= milliseconds(1) &&
            answer_timeout >= milliseconds(1),
        "header_timeout, idle_timeout, write_timeout and answer_timeout must be at least 1 ms");
  check(max_header_bytes >= kMinHeaderBytes && max_header_bytes <= kMaxHeaderBytes,
        "max_header_bytes must be from 1024 to 1048576, not " + std::to_string(max_header_bytes));
  check(max_connections >= 1 && max_connections <= kMaxConnections && max_connections_per_client >= 1 &&
            max_connections_per_client <= kMaxConnections,
        "max_connections and max_connections_per_client must be from 1 to 1000000");
}

}  // namespace glassbox::exporters
