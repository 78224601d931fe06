#include "http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "glassbox/error.hpp"

namespace glassbox::exporters::detail {

namespace {

// epoll's user data: these two, else a connection's id.
constexpr std::uint64_t kListenerId = 0;
constexpr std::uint64_t kWakeId = 1;
constexpr std::uint64_t kFirstConnectionId = 2;
// Accepts per readiness event, so that a flood of connections cannot keep
// the loop from reading and answering those it has.
constexpr int kAcceptsPerEvent = 64;
// Out of file descriptors with nothing to close: how long to stop accepting.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

UniqueFd checked(int fd, const char* what) {
  if (fd < 0) throw Error(std::string("glassbox /metrics: ") + what + " failed: " + std::strerror(errno));
  return UniqueFd(fd);
}

void watch(int epoll, int op, int fd, std::uint32_t events, std::uint64_t id) {
  epoll_event e{};
  e.events = events;
  e.data.u64 = id;
  ::epoll_ctl(epoll, op, fd, &e);
}

// The peer's IP address as bytes; an IPv4 client of a dual-stack socket
// (::ffff:a.b.c.d) counts as the IPv4 address it is.
std::string client_of(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(peer).sin_addr;
    return {reinterpret_cast<const char*>(&a), sizeof a};
  }
  const auto& a = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
  const char* bytes = reinterpret_cast<const char*>(&a);
  return IN6_IS_ADDR_V4MAPPED(&a) ? std::string(bytes + 12, 4) : std::string(bytes, sizeof a);
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<ListenSocket> listener, HttpLimits limits, std::unique_ptr<TlsContext> tls,
                       HttpWorker::Handler handler, ServerMetrics metrics)
    : limits_(limits),
      listener_(std::move(listener)),
      tls_(std::move(tls)),
      epoll_(checked(::epoll_create1(EPOLL_CLOEXEC), "epoll_create1")),
      wake_(checked(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd")),
      metrics_(std::move(metrics)),
      worker_(std::move(handler), wake_.get()),
      next_id_(kFirstConnectionId) {
  watch(epoll_.get(), EPOLL_CTL_ADD, listener_->fd(), EPOLLIN, kListenerId);
  watch(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), EPOLLIN, kWakeId);
  thread_ = std::thread([this] { run(); });
}

HttpServer::~HttpServer() {
  stopping_ = true;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
  thread_.join();
  metrics_.open.sub(static_cast<double>(connections_.size()));
}

void HttpServer::run() {
  // OpenSSL writes with write(), not send(MSG_NOSIGNAL): a client that left
  // would raise SIGPIPE, whose default action ends the whole process. Blocked
  // in this thread, it stays pending here, and the write fails with EPIPE.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::array<epoll_event, 256> events;
  while (!stopping_) {
    int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), wait_ms(Clock::now()));
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const std::uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        accept_all(now);
      } else if (id == kWakeId) {
        take_answers(now);
      } else if (auto it = connections_.find(id); it != connections_.end()) {
        it->second.connection->on_ready((events[i].events & (EPOLLHUP | EPOLLERR)) != 0, now);
        sync(it);
      }
    }
    expire(now);
  }
}

// Until the next deadline, rounded up so the loop does not wake just before it.
int HttpServer::wait_ms(Clock::time_point now) const {
  std::optional<Clock::time_point> next = accept_paused_until_;
  if (!deadlines_.empty() && (!next || deadlines_.begin()->first < *next)) next = deadlines_.begin()->first;
  if (!next) return -1;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 60'000));
}

void HttpServer::accept_all(Clock::time_point now) {
  for (int i = 0; i < kAcceptsPerEvent; ++i) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    int fd = ::accept4(listener_->fd(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      admit(UniqueFd(fd), client_of(peer), now);
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      if (!evict_one(nullptr, Rejection::max_connections)) return pause_accepting(now);
    } else if (errno != EINTR && errno != ECONNABORTED) {
      return;  // EAGAIN: every waiting connection is taken
    }
  }
}

void HttpServer::admit(UniqueFd fd, std::string client, Clock::time_point now) {
  // Nagle's algorithm would hold an answer's last segment until the client's
  // delayed ACK: 40 ms per kept-alive scrape.
  int yes = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  make_room(client);
  auto transport = tls_ ? tls_->wrap(fd.get(), now) : plain_transport(fd.get());
  if (!transport) return;
  const std::uint64_t id = next_id_++;
  watch(epoll_.get(), EPOLL_CTL_ADD, fd.get(), EPOLLIN, id);
  auto connection = std::make_unique<HttpConnection>(std::move(fd), std::move(transport), limits_, now);
  ++per_client_[client];
  metrics_.open.add(1);
  auto [it, inserted] =
      connections_.emplace(id, Entry{std::move(connection), std::move(client), EPOLLIN, Clock::time_point::max()});
  sync(it);
}

void HttpServer::make_room(const std::string& client) {
  auto same = per_client_.find(client);
  if (same != per_client_.end() && same->second >= limits_.max_connections_per_client) {
    evict_one(&client, Rejection::max_connections_per_client);
  }
  if (connections_.size() >= limits_.max_connections) evict_one(nullptr, Rejection::max_connections);
}

// A scan, not an index: it runs only at a cap, and an index would cost every
// byte moved on every connection an update.
bool HttpServer::evict_one(const std::string* client, Rejection why) {
  // The cheapest to close (see HttpConnection::worth: hanging clients before
  // kept-alive scrapers before answers in progress), then the one idle
  // longest; of those idle as long (events handled in one batch share a
  // time), the oldest connection.
  auto cost = [](const Entries::value_type& e) {
    const HttpConnection& c = *e.second.connection;
    return std::tuple(c.worth(), c.last_active(), e.first);
  };
  auto victim = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (client && it->second.client != *client) continue;
    if (victim == connections_.end() || cost(*it) < cost(*victim)) victim = it;
  }
  if (victim == connections_.end()) return false;
  victim->second.connection->evict(why);
  sync(victim);
  return true;
}

void HttpServer::pause_accepting(Clock::time_point now) {
  watch_listener(false);
  accept_paused_until_ = now + kAcceptPause;
}

void HttpServer::watch_listener(bool on) {
  watch(epoll_.get(), EPOLL_CTL_MOD, listener_->fd(), on ? std::uint32_t{EPOLLIN} : 0u, kListenerId);
}

void HttpServer::take_answers(Clock::time_point now) {
  std::uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(wake_.get(), &count, sizeof count);
  for (auto& [id, response] : worker_.take_answers()) {
    auto it = connections_.find(id);
    // Closed while the worker answered, or timed out (answered 503) and the
    // answer came late: HttpConnection::answer drops it unless it waits for one.
    if (it == connections_.end()) continue;
    it->second.connection->answer(response, now);
    sync(it);
  }
}

void HttpServer::expire(Clock::time_point now) {
  if (accept_paused_until_ && *accept_paused_until_ <= now) {
    accept_paused_until_.reset();
    watch_listener(true);
  }
  // Each expired connection closes or moves to a later deadline, so this ends.
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    auto it = connections_.find(deadlines_.begin()->second);
    it->second.connection->on_deadline(now);
    sync(it);
  }
}

// Brings the loop's view of a connection (epoll interest, deadline, the
// worker's queue) up to date after the connection handled an event.
void HttpServer::sync(Entries::iterator it) {
  auto& [id, e] = *it;
  HttpConnection& c = *e.connection;
  if (auto request = c.take_request()) worker_.submit(id, std::move(*request));
  if (c.state() == HttpConnection::State::closed) return remove(it);
  if (c.interest() != e.interest) {
    e.interest = c.interest();
    watch(epoll_.get(), EPOLL_CTL_MOD, c.fd(), e.interest, id);
  }
  if (c.deadline() != e.deadline) {
    deadlines_.erase({e.deadline, id});
    e.deadline = c.deadline();
    if (e.deadline != Clock::time_point::max()) deadlines_.emplace(e.deadline, id);
  }
}

void HttpServer::remove(Entries::iterator it) {
  auto& [id, e] = *it;
  if (auto why = e.connection->rejection()) metrics_.rejected[static_cast<std::size_t>(*why)].inc();
  deadlines_.erase({e.deadline, id});
  worker_.forget(id);
  if (auto c = per_client_.find(e.client); --c->second == 0) per_client_.erase(c);
  connections_.erase(it);
  metrics_.open.sub(1);
}

}  // namespace glassbox::exporters::detail
