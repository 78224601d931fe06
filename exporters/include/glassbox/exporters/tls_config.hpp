#pragma once
// TLS for /metrics, served by the exporter itself through the system's
// OpenSSL: no proxy needed. The files are PEM; they are read again when they
// change, so a renewed certificate is served without a restart.
#include <optional>
#include <string>

namespace glassbox::exporters {

struct TlsConfig {
  std::string cert_file;  ///< the server's certificate chain, its own certificate first
  std::string key_file;   ///< the private key of that certificate
  /// When set, mutual TLS: a client must present a certificate signed by one
  /// of these CAs, or the handshake fails.
  std::string client_ca_file;

  /// From GLASSBOX_METRICS_TLS_CERT_FILE and GLASSBOX_METRICS_TLS_KEY_FILE
  /// (both or neither) and GLASSBOX_METRICS_TLS_CLIENT_CA_FILE (only with the
  /// other two); nullopt when none is set. Other combinations throw
  /// ConfigError naming the variables.
  static std::optional<TlsConfig> from_env();
};

}  // namespace glassbox::exporters
