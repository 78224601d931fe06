#include "transport.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace glassbox::exporters::detail {

namespace {

IoResult result_of(ssize_t n, IoStatus blocked) {
  if (n > 0) return {static_cast<std::size_t>(n), IoStatus::done};
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return {0, blocked};
  return {0, IoStatus::closed};  // 0 from recv is the peer's FIN; ECONNRESET, EPIPE and the like end it too
}

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  IoResult read(char* into, std::size_t size) override {
    return result_of(::recv(fd_, into, size, 0), IoStatus::want_read);
  }
  IoResult write(const char* from, std::size_t size) override {
    return result_of(::send(fd_, from, size, MSG_NOSIGNAL), IoStatus::want_write);
  }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<Transport> plain_transport(int fd) { return std::make_unique<PlainTransport>(fd); }

}  // namespace glassbox::exporters::detail
