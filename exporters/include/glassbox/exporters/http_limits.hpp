#pragma once
// What /metrics's server allows its clients, so that clients which connect
// and never finish a request (a slowloris, a scanner, a broken proxy), idle
// ones, or a flood of them cannot starve real scrapes. Whatever the server
// drops for these limits it counts in
// glassbox_metrics_http_connections_rejected_total{reason}.
#include <chrono>
#include <cstddef>

namespace glassbox::exporters {

struct HttpLimits {
  /// From accepting a connection (for a kept-alive one: from the first byte of
  /// its next request) to the end of the request's headers, the TLS handshake
  /// included. A slower client is disconnected (reason `header_timeout`).
  std::chrono::milliseconds header_timeout{10'000};
  /// A kept-alive connection that sends no next request is closed after this
  /// (not counted: nothing was lost). Prometheus reuses its connection at
  /// every scrape, so this is longer than any usual scrape interval.
  std::chrono::milliseconds idle_timeout{300'000};
  /// Writing one answer; a client that does not read it in time is
  /// disconnected (reason `write_timeout`).
  std::chrono::milliseconds write_timeout{30'000};
  /// From the end of a request's headers to its answer being ready. A
  /// handler that hangs (a metrics collector blocked on a lock, say) would
  /// otherwise hold every scraping connection; past this the client gets 503
  /// and the connection closes (reason `answer_timeout`), and the answer, when
  /// it comes, is dropped.
  std::chrono::milliseconds answer_timeout{30'000};
  /// The request line and headers together; a longer head gets 431 (reason
  /// `header_too_large`).
  std::size_t max_header_bytes = 16 * 1024;
  /// Open connections, in all and from one client IP address. A connection
  /// beyond either cap closes one of that set: first those that have had no
  /// answer yet (hanging clients), then those kept alive after an answer,
  /// then those being answered; among them the one idle longest (no byte
  /// either way). So a hanging client loses its own oldest connections, not
  /// a scraper's (reason `max_connections` or `max_connections_per_client`).
  std::size_t max_connections = 512;
  std::size_t max_connections_per_client = 64;

  /// From GLASSBOX_METRICS_HEADER_TIMEOUT and
  /// GLASSBOX_METRICS_ANSWER_TIMEOUT (whole seconds, 1 to 3600),
  /// GLASSBOX_METRICS_MAX_HEADER_BYTES (1024 to 1048576),
  /// GLASSBOX_METRICS_MAX_CONNECTIONS and
  /// GLASSBOX_METRICS_MAX_CONNECTIONS_PER_CLIENT (1 to 1000000), else the
  /// defaults above. A malformed value throws ConfigError naming the variable
  /// and what is accepted.
  static HttpLimits from_env();
  /// Throws ConfigError when a value is out of the ranges above (timeouts: at
  /// least 1 ms).
  void validate() const;
};

}  // namespace glassbox::exporters
