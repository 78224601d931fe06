#include "listen_socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>

#include "glassbox/error.hpp"

namespace glassbox::exporters::detail {

namespace {

// A bound, listening socket for one of getaddrinfo's answers, or -1 with errno set.
int listen_on(const addrinfo& a) {
  int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return -1;
  // Not SO_REUSEPORT: it would let a second process share the port and
  // silently take half the scrapes.
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(fd, a.ai_addr, a.ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) return fd;
  int e = errno;
  ::close(fd);
  errno = e;
  return -1;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage s{};
  socklen_t len = sizeof s;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len);
  return ntohs(s.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(s).sin6_port
                                       : reinterpret_cast<sockaddr_in&>(s).sin_port);
}

}  // namespace

ListenAddress ListenAddress::parse(const std::string& address) {
  std::size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)))};
}

bool ListenAddress::is_loopback() const {
  static const std::regex ipv4_loopback(R"(^127(\.[0-9]{1,3}){3}$)");
  return host == "localhost" || host == "::1" || std::regex_match(host, ipv4_loopback);
}

ListenSocket::ListenSocket(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  std::string why = rc == 0 ? "" : ::gai_strerror(rc);
  for (addrinfo* a = found; a && fd_.get() < 0; a = a->ai_next) {
    fd_ = UniqueFd(listen_on(*a));
    if (fd_.get() < 0) why = std::strerror(errno);
  }
  if (found) ::freeaddrinfo(found);
  if (fd_.get() < 0) {
    const bool v6 = address.host.find(':') != std::string::npos;
    const std::string shown = (v6 ? "[" + address.host + "]" : address.host) + ":" + port;
    throw Error("glassbox /metrics: cannot listen on " + shown + ": " + why +
                " (is the port in use? set GLASSBOX_METRICS_ADDR or --metrics-addr)");
  }
  port_ = bound_port(fd_.get());
}

}  // namespace glassbox::exporters::detail
