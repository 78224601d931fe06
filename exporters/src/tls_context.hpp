#pragma once
// TLS for /metrics through the system's OpenSSL: the server's certificate and
// key from PEM files and, for mutual TLS, the CAs whose certificates clients
// must present. TLS 1.2 and 1.3 only, no renegotiation.
//
// The files are read again when they change (checked when a connection
// arrives, at most once a second), so a renewed certificate is served without
// a restart. A set of files that does not load (say the certificate was
// written and the key not yet) leaves the last good one in use and is tried
// again at each check until it loads; each attempt counts in
// glassbox_metrics_tls_certificate_reloads_total{result}, and a failure also
// goes to stderr. Connections keep the certificate they started
// with: OpenSSL reference-counts the context each session came from.
#include <chrono>
#include <memory>
#include <vector>

#include "glassbox/exporters/tls_config.hpp"
#include "glassbox/metrics/counter.hpp"
#include "transport.hpp"

typedef struct ssl_ctx_st SSL_CTX;

namespace glassbox::exporters::detail {

class TlsContext {
 public:
  using Clock = std::chrono::steady_clock;

  /// Loads the files; throws ConfigError naming the file, its variable and
  /// OpenSSL's reason when they do not load. Later reloads count in the two
  /// counters.
  TlsContext(TlsConfig config, metrics::Counter reloaded, metrics::Counter reload_failed);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// A server-side TLS session on accepted socket `fd` (the caller keeps and
  /// closes it), with the files as of now; nullptr when OpenSSL is out of memory.
  std::unique_ptr<Transport> wrap(int fd, Clock::time_point now);

 private:
  struct FileStamp;
  std::vector<FileStamp> stamps() const;
  void reload_if_changed(Clock::time_point now);

  TlsConfig config_;
  std::shared_ptr<SSL_CTX> ctx_;
  std::vector<FileStamp> loaded_;  // the files as last loaded
  Clock::time_point next_check_;
  metrics::Counter reloaded_;
  metrics::Counter reload_failed_;
};

}  // namespace glassbox::exporters::detail
