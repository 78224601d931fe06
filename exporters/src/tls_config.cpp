#include "glassbox/exporters/tls_config.hpp"

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

std::optional<TlsConfig> TlsConfig::from_env() {
  auto cert = detail::env("GLASSBOX_METRICS_TLS_CERT_FILE");
  auto key = detail::env("GLASSBOX_METRICS_TLS_KEY_FILE");
  auto client_ca = detail::env("GLASSBOX_METRICS_TLS_CLIENT_CA_FILE");
  if (!cert && !key && !client_ca) return std::nullopt;
  if (!cert || !key) {
    throw ConfigError(
        "glassbox /metrics TLS: set both GLASSBOX_METRICS_TLS_CERT_FILE and GLASSBOX_METRICS_TLS_KEY_FILE (PEM "
        "files: the server's certificate chain and its private key); GLASSBOX_METRICS_TLS_CLIENT_CA_FILE only adds "
        "mutual TLS to them");
  }
  return TlsConfig{*cert, *key, client_ca.value_or("")};
}

}  // namespace glassbox::exporters
