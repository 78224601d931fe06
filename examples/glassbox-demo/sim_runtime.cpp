#include "sim_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <new>

#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/handle_pool/workspace_table.hpp"
#include "glassbox/sim/fake_handle.hpp"

namespace glassbox::demo {

namespace {

using FakePool = handle_pool::DeviceThreadHandlePool<sim::FakeHandleFactory>;
using SimWrapper = cudnn::CudnnWrapper<cudnn::SimCudnnBackend>;
constexpr int kSimDevice = 0;

constexpr std::size_t kSimWorkspaceBytes = std::size_t{1} << 20;  // host memory: no cuBLAS to want 32 MiB

std::shared_ptr<FakePool> fake_pool(const std::string& library) {
  auto state = std::make_shared<sim::FakeHandleState>();
  state->create_latency = std::chrono::milliseconds(2);  // about what cublasCreate costs
  return FakePool::create(sim::FakeHandleFactory(library, state));
}

HandleSource fake_source(const std::string& library) {
  return {library, [pool = fake_pool(library)](int device) { pool->reserve(device); }};
}

// As current_cublas_handle(): the handle, and its workspace for the thread's
// stream (the default one here), counted in glassbox_handle_workspace_bytes.
HandleSource fake_cublas_source() {
  auto workspaces = std::make_shared<handle_pool::WorkspaceTable>(
      "cublas", kSimWorkspaceBytes,
      handle_pool::WorkspaceTable::Memory{[](int, std::size_t bytes) { return ::operator new(bytes); },
                                          [](int, void* p) { ::operator delete(p); }});
  return {"cublas", [pool = fake_pool("cublas"), workspaces](int device) {
            const auto handle = pool->reserve(device);
            workspaces->bind(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(handle)), nullptr, device);
          }};
}

}  // namespace

SimRuntime::SimRuntime() {
  SimWrapper cudnn(cudnn_, kSimDevice, &compute_stream_);
  sources_ = {fake_cublas_source(), fake_source("cublaslt"), {"cudnn", [cudnn](int) { cudnn.inline_handle(); }}};
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
