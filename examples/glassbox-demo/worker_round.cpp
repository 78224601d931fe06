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
      t_worker = t;
      trace::ContextScope scope(parent);
      trace::Span span("glassbox.demo.worker");
      bool ready = true;
      try {
        for (const auto& s : sources) s.reserve(t % devices);
      } catch (...) {
        ready = false;
        error.keep(std::current_exception());
      }
      together.arrive_and_wait();  // all hold their handles at once; a failed reserve still arrives
      if (!ready) return;
      try {
        work(t);
      } catch (...) {
        error.keep(std::current_exception());
      }
    });
  }
  for (auto& w : workers) w.join();
  error.rethrow();
}

}  // namespace glassbox::demo
