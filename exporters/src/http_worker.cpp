#include "http_worker.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>

namespace glassbox::exporters::detail {

HttpWorker::HttpWorker(Handler handler, int wake_fd)
    : handler_(std::move(handler)), wake_fd_(wake_fd), thread_([this] { run(); }) {}

HttpWorker::~HttpWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void HttpWorker::submit(std::uint64_t id, HttpRequest request) {
  {
    std::lock_guard lock(mu_);
    requests_.emplace_back(id, std::move(request));
  }
  work_.notify_one();
}

void HttpWorker::forget(std::uint64_t id) {
  std::lock_guard lock(mu_);
  std::erase_if(requests_, [id](const auto& queued) { return queued.first == id; });
}

std::vector<HttpWorker::Answer> HttpWorker::take_answers() {
  std::lock_guard lock(mu_);
  return std::exchange(answers_, {});
}

void HttpWorker::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
    if (stopping_) return;
    auto [id, request] = std::move(requests_.front());
    requests_.pop_front();
    lock.unlock();
    HttpResponse response = answer(request);
    lock.lock();
    answers_.emplace_back(id, std::move(response));
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);  // an eventfd's counter cannot overflow here
  }
}

// A handler that throws gets its client a 500 and its reason on stderr, not
// the process terminated.
HttpResponse HttpWorker::answer(const HttpRequest& request) const {
  try {
    return handler_(request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "glassbox: /metrics handler for %s failed: %s\n", request.path.c_str(), e.what());
    return HttpResponse::text(500, "the page could not be made; the reason is in the server's log");
  } catch (...) {
    std::fprintf(stderr, "glassbox: /metrics handler for %s failed with a non-standard exception\n",
                 request.path.c_str());
    return HttpResponse::text(500, "the page could not be made; the reason is in the server's log");
  }
}

}  // namespace glassbox::exporters::detail
