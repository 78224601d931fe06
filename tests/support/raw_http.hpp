#pragma once
// HTTP/1.1 over a plain loopback socket, byte for byte, for tests that must
// send what no well-behaved client library would: half a request, a 1 MiB
// header line, a body on GET, pipelined requests. Every wait is bounded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace glassbox::testing {

/// A connected TCP socket to 127.0.0.1:port, from `source` (another loopback
/// address plays another client); closes on destruction.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port, const char* source = nullptr)
      : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (source) bind_to(source);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!connect_within(to, std::chrono::seconds(5))) {
      int e = errno;
      ::close(fd_);
      throw std::runtime_error(std::string("connect: ") + std::strerror(e));
    }
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(RawConnection&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  RawConnection& operator=(RawConnection&&) = delete;

  int fd() const { return fd_; }

  /// Sends all of `bytes`; false when the peer closed or reset first.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Reads until one whole response (status line, headers, Content-Length
  /// bytes of body; no body when `head_request`) is in, the peer closes, or
  /// `timeout` passes. Returns what arrived; bytes past the response stay
  /// for the next call.
  std::string read_response(std::chrono::milliseconds timeout, bool head_request = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!response_complete(head_request)) {
      if (!read_some(deadline)) break;
    }
    std::size_t end = std::min(response_length(head_request), pending_.size());
    std::string out = pending_.substr(0, end);
    pending_.erase(0, end);
    return out;
  }

  /// True when the peer closed the connection (EOF or reset) within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (read_some(deadline)) {}
    return eof_;
  }

 private:
  void bind_to(const char* source) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
      int e = errno;
      ::close(fd_);
      throw std::runtime_error(std::string("bind ") + source + ": " + std::strerror(e));
    }
  }

  // A server whose accept queue is full drops SYNs, and a blocking connect
  // would then retry for minutes.
  bool connect_within(const sockaddr_in& to, std::chrono::milliseconds timeout) {
    int flags = ::fcntl(fd_, F_GETFL);
    ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd_, POLLOUT, 0};
      int error = ETIMEDOUT;
      socklen_t len = sizeof error;
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
      errno = error;
      rc = error == 0 ? 0 : -1;
    }
    ::fcntl(fd_, F_SETFL, flags);
    return rc == 0;
  }

  // Appends what arrives before `deadline`; false at EOF, on error or timeout.
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  // Bytes of the first response in pending_, or npos while incomplete.
  std::size_t response_length(bool head_request) const {
    std::size_t head_end = pending_.find("\r\n\r\n");
    if (head_end == std::string::npos) return std::string::npos;
    head_end += 4;
    if (head_request) return head_end;
    std::size_t cl = lowercase(pending_.substr(0, head_end)).find("\r\ncontent-length:");
    if (cl == std::string::npos) return head_end;
    return head_end + std::stoul(pending_.substr(cl + 17));
  }
  bool response_complete(bool head_request) const {
    std::size_t length = response_length(head_request);
    return length != std::string::npos && pending_.size() >= length;
  }
  static std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  int fd_;
  std::string pending_;
  bool eof_ = false;
};

/// The status code of a response's status line; 0 when there is none.
inline int status_of(std::string_view response) {
  if (response.size() < 12 || !response.starts_with("HTTP/1.")) return 0;
  return std::stoi(std::string(response.substr(9, 3)));
}

/// The value of header `name` (any case) in a response's head; "" when absent.
inline std::string header_of(std::string_view response, std::string name) {
  std::string head(response.substr(0, response.find("\r\n\r\n")));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t at = head.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  std::size_t start = at + 3 + name.size(), end = std::min(head.find("\r\n", start), head.size());
  std::string value(response.substr(start, end - start));
  return value.substr(std::min(value.find_first_not_of(' '), value.size()));
}

/// What follows a response's head.
inline std::string_view body_of(std::string_view response) {
  std::size_t end = response.find("\r\n\r\n");
  return end == std::string_view::npos ? std::string_view{} : response.substr(end + 4);
}

}  // namespace glassbox::testing
