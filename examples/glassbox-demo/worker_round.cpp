#include "worker_round.hpp"

#include <pthread.h>

#include <barrier>
#include <exception>
#include <mutex>
#include <thread>

#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"

namespace glassbox::demo {

namespace {

thread_local int t_worker = -1;

// The first exception any worker threw.
class FirstError {
 public:
  void keep(std::exception_ptr e) {
    std::lock_guard lock(mu_);
    if (!first_) first_ = std::move(e);
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr first_;
};

}  // namespace

int current_worker() noexcept { return t_worker; }

namespace {

// Worker t's part of a round: take every source's handle, wait at `together`
// (if any) until all workers hold theirs, then run work(t).
void run_worker(const std::vector<HandleSource>& sources, int t, int devices, std::barrier<>* together,
                FirstError& error, const std::function<void(int worker)>& work) {
  t_worker = t;
  trace::Span span("glassbox.demo.worker");
  bool ready = true;
  try {
    for (const auto& s : sources) s.reserve(t % devices);
  } catch (...) {
    ready = false;
    error.keep(std::current_exception());
  }
  if (together != nullptr) together->arrive_and_wait();  // a failed reserve still arrives
  if (ready) {
    try {
      work(t);
    } catch (...) {
      error.keep(std::current_exception());
    }
  }
  t_worker = -1;
}

}  // namespace

void run_worker_round(const std::vector<HandleSource>& sources, int threads, int devices,
                      const std::function<void(int worker)>& work) {
  trace::Span round("glassbox.demo.round");
  round.set_attribute("glassbox.threads", threads);
  trace::SpanContext parent = trace::current_context();
  std::barrier together(threads);
  FirstError error;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t, parent] {
      // Named, so the trace file's thread tracks read "worker-3", not the process name.
      ::pthread_setname_np(::pthread_self(), ("worker-" + std::to_string(t)).c_str());
      trace::ContextScope scope(parent);
      run_worker(sources, t, devices, &together, error, work);
    });
  }
  for (auto& w : workers) w.join();
  error.rethrow();
}

void run_on_caller(const std::vector<HandleSource>& sources, const std::function<void(int worker)>& work) {
  trace::Span round("glassbox.demo.round");
  round.set_attribute("glassbox.threads", 1);
  FirstError error;
  run_worker(sources, 0, 1, nullptr, error, work);
  error.rethrow();
}

}  // namespace glassbox::demo
