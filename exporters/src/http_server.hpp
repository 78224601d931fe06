#pragma once
// /metrics's HTTP/1.1 server. One event-loop thread (epoll) accepts and
// drives every connection (http_connection.hpp) without blocking; one worker
// thread (http_worker.hpp) runs the handler. A connection costs a buffer and
// a slot in a table, not a thread, so thousands of idle or hanging clients
// cannot starve a scrape (cpp-httplib's thread per connection could: 200
// hanging connections made every scrape time out).
//
// Connections are capped in total and per client IP address
// (HttpLimits::max_connections, max_connections_per_client). A connection
// beyond a cap closes one of that set, so the newcomer, which is about to
// send its request, always gets in: a connection that has had no answer (a
// hanging client's) before one kept alive after answers (a scraper's) before
// one being answered, and among those the one idle longest. A hanging client
// thus loses its own oldest connections first, even from the address of a
// scraper, as on loopback.
// When the process runs out of file descriptors, the longest idle
// connection goes the same way.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "glassbox/exporters/http_limits.hpp"
#include "http_connection.hpp"
#include "http_worker.hpp"
#include "listen_socket.hpp"
#include "server_metrics.hpp"
#include "tls_context.hpp"
#include "unique_fd.hpp"

namespace glassbox::exporters::detail {

class HttpServer {
 public:
  using Clock = std::chrono::steady_clock;

  /// Serves `listener` until destroyed; TLS when `tls` is given.
  HttpServer(std::unique_ptr<ListenSocket> listener, HttpLimits limits, std::unique_ptr<TlsContext> tls,
             HttpWorker::Handler handler, ServerMetrics metrics);
  /// Stops the loop, closes every connection, joins both threads.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

 private:
  struct Entry {
    std::unique_ptr<HttpConnection> connection;
    std::string client;          // the peer's IP address, as bytes
    std::uint32_t interest;      // as registered with epoll
    Clock::time_point deadline;  // as registered in deadlines_
  };
  using Entries = std::unordered_map<std::uint64_t, Entry>;

  void run();
  int wait_ms(Clock::time_point now) const;
  void accept_all(Clock::time_point now);
  void admit(UniqueFd fd, std::string client, Clock::time_point now);
  void make_room(const std::string& client);
  bool evict_one(const std::string* client, Rejection why);
  void pause_accepting(Clock::time_point now);
  void watch_listener(bool on);
  void take_answers(Clock::time_point now);
  void expire(Clock::time_point now);
  void sync(Entries::iterator it);
  void remove(Entries::iterator it);

  HttpLimits limits_;
  std::unique_ptr<ListenSocket> listener_;
  std::unique_ptr<TlsContext> tls_;
  UniqueFd epoll_;
  UniqueFd wake_;  // an eventfd: answers ready, or stop
  ServerMetrics metrics_;
  HttpWorker worker_;  // after wake_, which it writes to until joined

  // The loop thread's alone.
  Entries connections_;
  std::unordered_map<std::string, std::size_t> per_client_;
  std::set<std::pair<Clock::time_point, std::uint64_t>> deadlines_;
  std::uint64_t next_id_;
  std::optional<Clock::time_point> accept_paused_until_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace glassbox::exporters::detail
