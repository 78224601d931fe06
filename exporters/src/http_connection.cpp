#include "http_connection.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

namespace glassbox::exporters::detail {

namespace {

// Long enough for a client to read an answer before the close, short enough
// that lingering connections do not pile up.
constexpr auto kLinger = std::chrono::seconds(2);
// At most this much discarded per readiness event, so that a client which
// streams without end cannot hold the event loop.
constexpr int kDiscardReadsPerEvent = 64;
constexpr std::size_t kReadChunk = 16 * 1024;

std::string explain(int status, const HttpLimits& limits) {
  switch (status) {
    case 431:
      return "the request line and headers are longer than the " + std::to_string(limits.max_header_bytes) +
             " bytes allowed (GLASSBOX_METRICS_MAX_HEADER_BYTES)";
    case 503:
      return "the page was not ready within " + std::to_string(limits.answer_timeout.count()) +
             " ms (GLASSBOX_METRICS_ANSWER_TIMEOUT)";
    case 505:
      return "only HTTP/1.0 and HTTP/1.1 are served";
    default:
      return "malformed request";
  }
}

bool blocked(IoStatus s) { return s == IoStatus::want_read || s == IoStatus::want_write; }

}  // namespace

std::string_view to_string(Rejection r) noexcept {
  switch (r) {
    case Rejection::header_timeout:
      return "header_timeout";
    case Rejection::write_timeout:
      return "write_timeout";
    case Rejection::answer_timeout:
      return "answer_timeout";
    case Rejection::header_too_large:
      return "header_too_large";
    case Rejection::bad_request:
      return "bad_request";
    case Rejection::tls_error:
      return "tls_error";
    case Rejection::max_connections:
      return "max_connections";
    case Rejection::max_connections_per_client:
      return "max_connections_per_client";
  }
  return "unknown";
}

HttpConnection::HttpConnection(UniqueFd fd, std::unique_ptr<Transport> transport, const HttpLimits& limits,
                               Clock::time_point now)
    : fd_(std::move(fd)),
      io_(std::move(transport)),
      limits_(limits),
      deadline_(now + limits.header_timeout),
      last_active_(now) {}

std::uint32_t HttpConnection::interest() const noexcept {
  switch (state_) {
    case State::reading:
      return waiting_for_ == IoStatus::want_write ? EPOLLOUT : EPOLLIN;
    case State::writing:
      return waiting_for_ == IoStatus::want_read ? EPOLLIN : EPOLLOUT;
    case State::lingering:
      return EPOLLIN;
    default:
      return 0;
  }
}

HttpConnection::Worth HttpConnection::worth() const noexcept {
  if (state_ == State::answering || state_ == State::writing) return Worth::answer;
  return state_ == State::reading && answered_ ? Worth::kept_alive : Worth::nothing;
}

void HttpConnection::on_ready(bool hangup, Clock::time_point now) {
  switch (state_) {
    case State::reading:
      return read_requests(now);
    case State::writing:
      return write_answer(now);
    case State::lingering:
      return discard_input();
    case State::answering:
      if (hangup) close();  // the client left; its answer will find nobody
      return;
    case State::closed:
      return;
  }
}

void HttpConnection::on_deadline(Clock::time_point now) {
  if (now < deadline_) return;
  switch (state_) {
    case State::reading:
      return close(idle_ ? std::nullopt : std::optional(Rejection::header_timeout));
    case State::answering:
      return reply_and_close(503, Rejection::answer_timeout, now);
    case State::writing:
      return close(Rejection::write_timeout);
    case State::lingering:
      return close();
    case State::closed:
      return;
  }
}

void HttpConnection::answer(const HttpResponse& response, Clock::time_point now) {
  if (state_ != State::answering) return;
  out_ = to_bytes(response, head_only_, keep_alive_, minor_version_);
  written_ = 0;
  state_ = State::writing;
  deadline_ = now + limits_.write_timeout;
  write_answer(now);
}

void HttpConnection::read_requests(Clock::time_point now) {
  char chunk[kReadChunk];
  while (state_ == State::reading && !take_head(now)) {
    IoResult r = io_->read(chunk, sizeof chunk);
    if (blocked(r.status)) {
      waiting_for_ = r.status;
      return;
    }
    if (r.status != IoStatus::done)
      return close(r.status == IoStatus::failed ? std::optional(Rejection::tls_error) : std::nullopt);
    in_.append(chunk, r.bytes);
    last_active_ = now;
    if (idle_) {  // the next request has begun: from now on its headers are on the clock
      idle_ = false;
      deadline_ = now + limits_.header_timeout;
    }
  }
}

// Whether the buffer holds a whole head (or too much of one): then the
// connection leaves the reading state.
bool HttpConnection::take_head(Clock::time_point now) {
  std::size_t end = scanner_.scan(in_);
  if (end == 0 ? in_.size() > limits_.max_header_bytes : end > limits_.max_header_bytes) {
    reply_and_close(431, Rejection::header_too_large, now);
    return true;
  }
  if (end == 0) return false;
  ParsedHead parsed = parse_request_head(std::string_view(in_).substr(0, end));
  if (parsed.error_status != 0) {
    reply_and_close(parsed.error_status, Rejection::bad_request, now);
    return true;
  }
  request_ = HttpRequest::from(parsed.head);
  head_only_ = parsed.head.method == "HEAD";
  // A body is never read, so the connection cannot tell where the next request starts.
  keep_alive_ = parsed.head.keep_alive() && !parsed.head.has_body();
  minor_version_ = parsed.head.minor_version;
  in_.erase(0, end);  // what is left: a pipelined request
  scanner_.reset();
  state_ = State::answering;
  deadline_ = now + limits_.answer_timeout;
  return true;
}

void HttpConnection::write_answer(Clock::time_point now) {
  while (written_ < out_.size()) {
    IoResult r = io_->write(out_.data() + written_, out_.size() - written_);
    if (blocked(r.status)) {
      waiting_for_ = r.status;
      return;
    }
    if (r.status != IoStatus::done)
      return close(r.status == IoStatus::failed ? std::optional(Rejection::tls_error) : std::nullopt);
    written_ += r.bytes;
    last_active_ = now;
  }
  out_.clear();
  keep_alive_ ? await_next_request(now) : linger(now);
}

void HttpConnection::await_next_request(Clock::time_point now) {
  answered_ = true;
  state_ = State::reading;
  waiting_for_ = IoStatus::want_read;
  idle_ = in_.empty();
  deadline_ = now + (idle_ ? limits_.idle_timeout : limits_.header_timeout);
  read_requests(now);  // the next request may be buffered already, here or inside TLS
}

void HttpConnection::reply_and_close(int status, Rejection why, Clock::time_point now) {
  rejection_ = why;
  in_.clear();
  head_only_ = false;
  keep_alive_ = false;
  state_ = State::answering;
  answer(HttpResponse::text(status, explain(status, limits_)), now);
}

void HttpConnection::linger(Clock::time_point now) {
  io_->say_goodbye();
  ::shutdown(fd_.get(), SHUT_WR);
  state_ = State::lingering;
  deadline_ = now + kLinger;
  discard_input();
}

// Reads past the transport: after the goodbye nothing that arrives is used.
void HttpConnection::discard_input() {
  char chunk[kReadChunk];
  for (int i = 0; i < kDiscardReadsPerEvent; ++i) {
    ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    return close();
  }
}

void HttpConnection::close(std::optional<Rejection> why) {
  if (!rejection_) rejection_ = why;
  if (state_ == State::closed) return;
  state_ = State::closed;
  deadline_ = Clock::time_point::max();
  io_.reset();
  fd_.reset();  // leaves the epoll set with it
}

}  // namespace glassbox::exporters::detail
