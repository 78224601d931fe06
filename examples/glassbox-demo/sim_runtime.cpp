#include "sim_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/sim/fake_handle.hpp"

namespace glassbox::demo {

namespace {

using FakePool = handle_pool::DeviceThreadHandlePool<sim::FakeHandleFactory>;
using SimWrapper = cudnn::CudnnWrapper<cudnn::SimCudnnBackend>;
constexpr int kSimDevice = 0;

HandleSource fake_source(const std::string& library) {
  auto state = std::make_shared<sim::FakeHandleState>();
  state->create_latency = std::chrono::milliseconds(2);  // about what cublasCreate costs
  std::shared_ptr<FakePool> pool = FakePool::create(sim::FakeHandleFactory(library, state));
  return {library, [pool](int device) { pool->reserve(device); }};
}

}  // namespace

SimRuntime::SimRuntime() {
  SimWrapper cudnn(cudnn_, kSimDevice, &compute_stream_);
  sources_ = {fake_source("cublas"), fake_source("cublaslt"), {"cudnn", [cudnn](int) { cudnn.inline_handle(); }}};
  previous_runner_ =
      autograd::set_conv2d_runner([this](int, const std::function<void()>& kernel) { run_in_cudnn_state(kernel); });
}

SimRuntime::~SimRuntime() { autograd::set_conv2d_runner(std::move(previous_runner_)); }

void SimRuntime::run_in_cudnn_state(const std::function<void()>& kernel) {
  const int index = std::max(0, current_worker()) % cudnn_.states_per_device();
  SimWrapper(cudnn_, kSimDevice, &compute_stream_).with_cudnn_state(index, [&](auto& state) {
    // Queued on the state's stream, as a cuDNN call through the state's
    // handle is; the host waits because the next op reads the result.
    std::exception_ptr error;
    state.stream()->enqueue([&] {
      try {
        kernel();
      } catch (...) {
        error = std::current_exception();
      }
    });
    state.stream()->record().synchronize();
    if (error) std::rethrow_exception(error);
  });
}

}  // namespace glassbox::demo
