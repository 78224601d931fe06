#pragma once
// A stand-in OTLP/HTTP collector: a real cpp-httplib server on an ephemeral
// loopback port that records every POST to /v1/traces and /v1/metrics and answers as the test
// scripts it: a status, headers, a body, or a hang until the test ends.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace glassbox::testing {

struct CollectorAnswer {
  int status = 200;
  httplib::Headers headers;
  std::string body = "{}";
  bool hang = false;  ///< hold the request until the collector is destroyed
};

inline CollectorAnswer answer(int status, std::string body = "{}") {
  CollectorAnswer a;
  a.status = status;
  a.body = std::move(body);
  return a;
}

inline CollectorAnswer hanging() {
  CollectorAnswer a;
  a.hang = true;
  return a;
}

struct ReceivedRequest {
  std::string path;
  httplib::Headers headers;
  std::string body;  ///< after httplib undid any Content-Encoding
  std::chrono::steady_clock::time_point at;
};

class OtlpCollector {
 public:
  /// `answer(n)` decides the reply to the n-th request (0-based).
  explicit OtlpCollector(std::function<CollectorAnswer(std::size_t)> answer =
                             [](std::size_t) { return CollectorAnswer{}; })
      : answer_(std::move(answer)) {
    for (const char* path : {"/v1/traces", "/v1/metrics"}) {
      server_.Post(path, [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~OtlpCollector() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
      changed_.notify_all();
    }
    server_.stop();
    thread_.join();
  }
  OtlpCollector(const OtlpCollector&) = delete;
  OtlpCollector& operator=(const OtlpCollector&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string traces_url() const { return base_url() + "/v1/traces"; }
  std::string metrics_url() const { return base_url() + "/v1/metrics"; }

  std::vector<ReceivedRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    requests_.push_back({req.path, req.headers, req.body, std::chrono::steady_clock::now()});
    CollectorAnswer a = answer_(requests_.size() - 1);
    changed_.notify_all();
    if (a.hang) changed_.wait(lock, [&] { return closing_; });
    res.status = a.status;
    for (const auto& [k, v] : a.headers) res.set_header(k, v);
    res.set_content(a.body, "application/json");
  }

  std::function<CollectorAnswer(std::size_t)> answer_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<ReceivedRequest> requests_;
  bool closing_ = false;
};

}  // namespace glassbox::testing
