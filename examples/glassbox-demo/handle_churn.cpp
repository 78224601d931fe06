#include "handle_churn.hpp"

#include <pthread.h>

#include <barrier>
#include <chrono>
#include <memory>
#include <thread>

#include "glassbox/backend/fake_handle.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#if GLASSBOX_HAVE_CUDA
#include "glassbox/handle_pool/current_handles.hpp"
#endif

namespace glassbox::demo {

namespace {

using FakePool = handle_pool::DeviceThreadHandlePool<backend::FakeHandleFactory>;

HandleSource fake_source(const std::string& library) {
  auto state = std::make_shared<backend::FakeHandleState>();
  state->create_latency = std::chrono::milliseconds(2);  // about what cublasCreate costs
  std::shared_ptr<FakePool> pool = FakePool::create(backend::FakeHandleFactory(library, state));
  return {library, [pool](int device) { pool->reserve(device); }};
}

}  // namespace

std::vector<HandleSource> make_sources(const std::string& device_kind, int& device_count) {
  if (device_kind == "cpu") {
    device_count = 1;
    return {fake_source("cublas"), fake_source("cublaslt"), fake_source("cudnn")};
  }
#if GLASSBOX_HAVE_CUDA
  device_count = backend::cuda_device_count();
  return {
      {"cublas", [](int d) { handle_pool::current_cublas_handle(d, nullptr); }},
      {"cublaslt", [](int d) { handle_pool::current_cublaslt_handle(d); }},
      {"cudnn", [](int d) { handle_pool::current_cudnn_handle(d, nullptr); }},
  };
#else
  throw std::runtime_error("--device cuda: this build has no CUDA backend (configure with GLASSBOX_CUDA=ON)");
#endif
}

void run_round(const std::vector<HandleSource>& sources, int threads, int devices) {
  trace::Span round("glassbox.demo.round");
  round.set_attribute("glassbox.threads", threads);
  trace::SpanContext parent = trace::current_context();
  std::barrier together(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t, parent] {
      // Named, so the trace file's thread tracks read "churn-3", not the process name.
      ::pthread_setname_np(::pthread_self(), ("churn-" + std::to_string(t)).c_str());
      trace::ContextScope scope(parent);
      trace::Span work("glassbox.demo.worker");
      for (const auto& s : sources) s.reserve(t % devices);
      together.arrive_and_wait();  // all threads hold their handles at once
    });
  }
  for (auto& w : workers) w.join();
}

}  // namespace glassbox::demo
