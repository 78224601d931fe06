#pragma once
// Hostile clients for the /metrics server's tests: many loopback connections
// that are opened and then left hanging, as a slowloris, a scanner or a
// broken proxy leaves them.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "raw_http.hpp"

namespace glassbox::testing {

/// What each held connection sends before it falls silent.
inline constexpr const char* kHalfOpenRequest = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";

class HeldConnections {
 public:
  /// Opens `count` connections; connection i sends `prefixes[i % size]` ("" sends nothing).
  HeldConnections(std::uint16_t port, std::size_t count, const std::vector<std::string>& prefixes) {
    connections_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      connections_.emplace_back(port);
      connections_.back().send(prefixes[i % prefixes.size()]);
    }
  }

  /// How many the server has not closed (nothing to read and no EOF means open).
  std::size_t still_open() const {
    std::size_t open = 0;
    for (const auto& c : connections_) {
      pollfd p{c.fd(), POLLIN, 0};
      char byte;
      bool closed = ::poll(&p, 1, 0) == 1 && ::recv(c.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
      open += closed ? 0 : 1;
    }
    return open;
  }

 private:
  std::vector<RawConnection> connections_;
};

/// Raises the soft limit on open files to `wanted` where the hard limit
/// allows (the client and the server ends of every held connection are in
/// the test's process); returns the soft limit in force afterwards.
inline rlim_t raise_fd_limit(rlim_t wanted) {
  rlimit l{};
  ::getrlimit(RLIMIT_NOFILE, &l);
  if (l.rlim_cur < wanted) {
    l.rlim_cur = std::min(wanted, l.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &l);
  }
  ::getrlimit(RLIMIT_NOFILE, &l);
  return l.rlim_cur;
}

}  // namespace glassbox::testing
