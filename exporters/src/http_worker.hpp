#pragma once
// The thread that runs /metrics's handlers, so that a slow one (a big
// registry's serialisation) never holds up the event loop's accepting,
// reading and timeouts. Requests are answered in order; the loop learns of
// answers through an eventfd. At most one request per connection is queued
// (a connection reads no further while it waits), so the queue is bounded by
// the connection cap.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "http_message.hpp"

namespace glassbox::exporters::detail {

class HttpWorker {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  using Answer = std::pair<std::uint64_t, HttpResponse>;

  /// Starts the thread; it writes to eventfd `wake_fd` when answers are ready.
  HttpWorker(Handler handler, int wake_fd);
  /// Stops after the request in progress, drops the rest, joins.
  ~HttpWorker();
  HttpWorker(const HttpWorker&) = delete;
  HttpWorker& operator=(const HttpWorker&) = delete;

  /// Queues `request` of connection `id`.
  void submit(std::uint64_t id, HttpRequest request);
  /// Drops connection `id`'s request if it is still queued: the connection
  /// closed (its client left, or it timed out behind a handler that hangs),
  /// and making a page nobody reads would only delay the next ones.
  void forget(std::uint64_t id);
  /// The answers ready so far, in order, each with its connection's id.
  std::vector<Answer> take_answers();

 private:
  void run();
  HttpResponse answer(const HttpRequest& request) const;

  Handler handler_;
  int wake_fd_;
  std::mutex mu_;
  std::condition_variable work_;
  std::deque<std::pair<std::uint64_t, HttpRequest>> requests_;
  std::vector<Answer> answers_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace glassbox::exporters::detail
