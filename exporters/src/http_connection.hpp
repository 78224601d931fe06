#pragma once
// One client connection of /metrics's server, as a state machine that the
// event loop (http_server.hpp) drives and that never blocks:
//
//   reading --head complete--> answering --answer()--> writing --kept alive--> reading
//      |                                                  |
//      +--malformed or oversized head: 400/431/505------->+--closing--> lingering --> closed
//
// Each state has one deadline (header, idle, answer, write, linger); the loop calls
// on_deadline() when it passes. Only the head of a request is read: a
// request with a body is answered and the connection closed, so a body is
// never parsed. Before closing after an answer the connection lingers
// (RFC 9112 section 9.6): it stops sending and discards what still arrives
// for a moment, because closing with unread bytes would reset the connection
// and could destroy the answer before the client read it (a 431 to a client
// still sending its 1 MiB header line, say).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "glassbox/exporters/detail/http_request_head.hpp"
#include "glassbox/exporters/http_limits.hpp"
#include "http_message.hpp"
#include "transport.hpp"
#include "unique_fd.hpp"

namespace glassbox::exporters::detail {

/// Why the server dropped a connection; the label `reason` of
/// glassbox_metrics_http_connections_rejected_total.
enum class Rejection {
  header_timeout,
  write_timeout,
  answer_timeout,  ///< the handler took longer than HttpLimits::answer_timeout: answered 503
  header_too_large,
  bad_request,
  tls_error,  ///< a failed handshake (a client without an accepted certificate, say) or a broken record
  max_connections,
  max_connections_per_client,
};
inline constexpr Rejection kAllRejections[] = {Rejection::header_timeout,  Rejection::write_timeout,
                                               Rejection::answer_timeout,  Rejection::header_too_large,
                                               Rejection::bad_request,     Rejection::tls_error,
                                               Rejection::max_connections, Rejection::max_connections_per_client};
std::string_view to_string(Rejection r) noexcept;

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { reading, answering, writing, lingering, closed };

  /// Takes `fd` with its transport.
  HttpConnection(UniqueFd fd, std::unique_ptr<Transport> transport, const HttpLimits& limits, Clock::time_point now);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// The socket is ready as interest() asked, or failed (`hangup`).
  void on_ready(bool hangup, Clock::time_point now);
  /// deadline() has passed.
  void on_deadline(Clock::time_point now);
  /// The answer to the request take_request() gave.
  void answer(const HttpResponse& response, Clock::time_point now);
  /// Closes at once, for a connection cap.
  void evict(Rejection why) { close(why); }

  int fd() const noexcept { return fd_.get(); }
  State state() const noexcept { return state_; }
  /// In state answering, once: the request to answer.
  std::optional<HttpRequest> take_request() { return std::exchange(request_, std::nullopt); }
  /// When closed: why, if the server dropped it (a client that left is no rejection).
  std::optional<Rejection> rejection() const noexcept { return rejection_; }
  /// EPOLLIN, EPOLLOUT or nothing (answering, closed).
  std::uint32_t interest() const noexcept;
  Clock::time_point deadline() const noexcept { return deadline_; }
  /// When a byte last moved either way: the longest idle goes first at a cap.
  Clock::time_point last_active() const noexcept { return last_active_; }
  /// What closing it would cost its client, for the caps, cheapest first:
  /// nothing (no answer yet, as with a client that hangs, or lingering after
  /// the last one), a kept-alive connection that was answered before, or an
  /// answer being made or written.
  enum class Worth { nothing, kept_alive, answer };
  Worth worth() const noexcept;

 private:
  void read_requests(Clock::time_point now);
  bool take_head(Clock::time_point now);
  void write_answer(Clock::time_point now);
  void await_next_request(Clock::time_point now);
  void reply_and_close(int status, Rejection why, Clock::time_point now);
  void linger(Clock::time_point now);
  void discard_input();
  void close(std::optional<Rejection> why = std::nullopt);

  UniqueFd fd_;
  std::unique_ptr<Transport> io_;  // uses fd_: reset first
  const HttpLimits& limits_;
  State state_ = State::reading;
  IoStatus waiting_for_ = IoStatus::want_read;  // what the transport blocked on last
  Clock::time_point deadline_;
  Clock::time_point last_active_;
  bool idle_ = false;      // kept alive, no byte of the next request yet: the idle timeout applies
  bool answered_ = false;  // an answer was written and the connection kept alive

  std::string in_;
  HeadScanner scanner_;
  std::optional<HttpRequest> request_;
  bool head_only_ = false;
  bool keep_alive_ = false;
  int minor_version_ = 1;

  std::string out_;
  std::size_t written_ = 0;
  std::optional<Rejection> rejection_;
};

}  // namespace glassbox::exporters::detail
