#pragma once
// Bytes in and out of one non-blocking client socket, in the clear or through
// TLS (tls_context.hpp), so that the connection's state machine is the same
// for both. A call never blocks: it moves what it can, or says what the
// socket must become (readable or writable) before the next call can.
#include <cstddef>
#include <memory>

namespace glassbox::exporters::detail {

enum class IoStatus {
  done,        ///< `bytes` moved (more than 0)
  want_read,   ///< wait until the socket is readable (TLS may want this while writing too)
  want_write,  ///< wait until the socket is writable (TLS may want this while reading too)
  closed,      ///< the peer closed the connection (or reset it)
  failed,      ///< a protocol error: a TLS handshake the client failed, say
};

struct IoResult {
  std::size_t bytes = 0;
  IoStatus status = IoStatus::done;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual IoResult read(char* into, std::size_t size) = 0;
  virtual IoResult write(const char* from, std::size_t size) = 0;
  /// Before the server closes: TLS sends its close_notify (best effort).
  virtual void say_goodbye() {}
};

/// recv() and send() on `fd`, which the caller keeps and closes.
std::unique_ptr<Transport> plain_transport(int fd);

}  // namespace glassbox::exporters::detail
