#pragma once
// The TCP socket /metrics listens on: non-blocking, for the server's event
// loop, with the kernel's largest accept queue so that a burst of
// connections waits there instead of being refused.
#include <cstdint>
#include <string>

#include "unique_fd.hpp"

namespace glassbox::exporters::detail {

/// "[::1]:9464" -> {"::1", 9464}. The address must have passed validate_listen_address().
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;

  static ListenAddress parse(const std::string& address);
  /// 127.0.0.0/8, ::1 or localhost.
  bool is_loopback() const;
};

class ListenSocket {
 public:
  /// Binds and listens; throws glassbox::Error naming `address` when it cannot.
  explicit ListenSocket(const ListenAddress& address);

  int fd() const noexcept { return fd_.get(); }
  /// The port bound (the one picked, for port 0).
  std::uint16_t port() const noexcept { return port_; }

 private:
  UniqueFd fd_;
  std::uint16_t port_ = 0;
};

}  // namespace glassbox::exporters::detail
