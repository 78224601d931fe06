#include "glassbox/cuda/handle_pool/current_handles.hpp"

#include <cuda.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "glassbox/cuda/current_stream.hpp"

namespace glassbox::handle_pool {

namespace {

// Leaked: threads may return handles after static destruction began.
template <class Pool>
Pool& leaked_pool() {
  static auto* p = new std::shared_ptr<Pool>(Pool::create());
  return **p;
}

// Which stream each of a thread's handles (one per device) is bound to.
template <class Handle>
struct Binding {
  Handle handle = nullptr;
  cudaStream_t stream = nullptr;
  bool bound = false;
};

// The thread's last (device, stream) -> handle answer. Valid for the thread's
// whole life: the process-wide pools never take a lent handle back, and the
// handle stays bound to that stream until this thread asks for another.
template <class Handle>
struct LastAnswer {
  int device = -1;
  cudaStream_t stream = nullptr;
  Handle handle = nullptr;
};

std::size_t parse_workspace_config(const std::string& v) {
  // ":SIZE_KiB:COUNT" repeated, e.g. ":4096:8" or ":4096:2:16:8".
  std::size_t total = 0, pos = 0;
  auto fail = [&]() -> std::size_t {
    throw ConfigError("CUBLAS_WORKSPACE_CONFIG='" + v +
                      "' is not accepted; expected ':SIZE_KiB:COUNT' pairs such as ':4096:8' or ':4096:2:16:8'");
  };
  if (v.empty()) return fail();
  while (pos < v.size()) {
    std::size_t nums[2];
    for (auto& n : nums) {
      if (v[pos] != ':') return fail();
      std::size_t end = v.find(':', pos + 1);
      std::string digits = v.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return fail();
      n = std::stoull(digits);
      pos = end == std::string::npos ? v.size() : end;
      if (pos == v.size() && &n == &nums[0]) return fail();
    }
    total += nums[0] * 1024 * nums[1];
  }
  return total;
}

// Leaked, as the pools: handles may be bound after static destruction began.
WorkspaceTable& cublas_workspaces() {
  static auto* table = new WorkspaceTable("cublas", cublas_workspace_bytes(),
                                          {[](int device, std::size_t bytes) {
                                             cuda::DeviceGuard guard(device);
                                             void* p = nullptr;
                                             cuda::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc (cuBLAS workspace)");
                                             return p;
                                           },
                                           // cudaFree waits for the device, so work queued on the workspace ends first.
                                           [](int device, void* p) {
                                             cuda::DeviceGuard guard(device);
                                             cudaFree(p);
                                           }});
  return *table;
}

}  // namespace

CublasPool& cublas_pool() { return leaked_pool<CublasPool>(); }
CublasLtPool& cublaslt_pool() { return leaked_pool<CublasLtPool>(); }
CudnnPool& cudnn_pool() { return leaked_pool<CudnnPool>(); }

std::size_t cublas_workspace_bytes() {
  static const std::size_t bytes = [] {
    const char* v = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    return v ? parse_workspace_config(v) : std::size_t{32} << 20;
  }();
  return bytes;
}

namespace {

thread_local constinit LastAnswer<cublasHandle_t> tl_last_cublas;
thread_local constinit LastAnswer<cudnnHandle_t> tl_last_cudnn;

void bind_cublas(cublasHandle_t h, cudaStream_t stream, int device) {
  cuda::DeviceGuard guard(device);
  cuda::check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  // cublasSetStream drops any user workspace, so set ours after it.
  cuda::check_cublas(cublasSetWorkspace(h, cublas_workspaces().bind(h, stream, device), cublas_workspace_bytes()),
                     "cublasSetWorkspace");
}

void bind_cudnn(cudnnHandle_t h, cudaStream_t stream, int) {
  cuda::check_cudnn(cudnnSetStream(h, stream), "cudnnSetStream");
}

// The driver's cuCtxGetCurrent through the runtime, so that glassbox::cuda
// needs no link to libcuda; null where the driver does not offer it.
using CtxGetCurrent = CUresult (*)(CUcontext*);
CtxGetCurrent ctx_get_current() {
  static const CtxGetCurrent fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    return cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f, 12000, cudaEnableDefault, &found) == cudaSuccess &&
                   found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<CtxGetCurrent>(f)
               : nullptr;
  }();
  return fn;
}

// A thread that takes a pooled handle another thread created may never have
// had a context current: cuBLAS and cuDNN calls want one, and every later
// cudaGetDevice on such a thread takes the runtime's slow path (the argument-
// free accessors call it each time). As PyTorch's handle getters do, make the
// current device's primary context current there, and only there: a context
// the caller made current (driver API) is left alone.
void ensure_current_context() {
  const CtxGetCurrent get = ctx_get_current();
  CUcontext ctx = nullptr;
  if (get == nullptr || (get(&ctx) == CUDA_SUCCESS && ctx != nullptr)) return;
  cuda::check_cuda(cudaSetDevice(cuda::current_device()), "cudaSetDevice (no current context)");
}

// Reserves the thread's handle for `device` and binds it to `stream` unless
// it already is; remembers the answer for the next call's fast path.
template <class Handle, class Pool, class Bind>
Handle reserve_bound(Pool& pool, int device, cudaStream_t stream, LastAnswer<Handle>& last, Bind bind) {
  thread_local std::vector<Binding<Handle>> bindings;
  ensure_current_context();
  Handle h = pool.reserve(device);
  auto d = static_cast<std::size_t>(device);
  if (bindings.size() <= d) bindings.resize(d + 1);
  Binding<Handle>& b = bindings[d];
  if (!b.bound || b.handle != h || b.stream != stream) {
    bind(h, stream, device);
    b = {h, stream, true};
  }
  last = {device, stream, h};
  return h;
}

// Out of line, so the fast paths below stay leaves with no register spills.
[[gnu::noinline]] cublasHandle_t cublas_slow(int device, cudaStream_t stream) {
  return reserve_bound(cublas_pool(), device, stream, tl_last_cublas, bind_cublas);
}

[[gnu::noinline]] cudnnHandle_t cudnn_slow(int device, cudaStream_t stream) {
  return reserve_bound(cudnn_pool(), device, stream, tl_last_cudnn, bind_cudnn);
}

}  // namespace

cublasHandle_t current_cublas_handle(int device, cudaStream_t stream) {
  const auto& last = tl_last_cublas;
  if (last.handle != nullptr && last.device == device && last.stream == stream) [[likely]]
    return last.handle;
  return cublas_slow(device, stream);
}

cublasHandle_t current_cublas_handle() { return current_cublas_handle(cuda::current_device(), cuda::current_stream()); }

cublasLtHandle_t current_cublaslt_handle(int device) { return cublaslt_pool().reserve(device); }

std::size_t cublas_workspaces_held(int device) { return cublas_workspaces().bytes(device); }

std::size_t release_idle_cublas_workspaces() {
  return cublas_workspaces().release_idle([](int device, WorkspaceTable::Handle h) {
    return cublas_pool().idle(device, static_cast<cublasHandle_t>(const_cast<void*>(h)));
  });
}

cudnnHandle_t current_cudnn_handle(int device, cudaStream_t stream) {
  const auto& last = tl_last_cudnn;
  if (last.handle != nullptr && last.device == device && last.stream == stream) [[likely]]
    return last.handle;
  return cudnn_slow(device, stream);
}

cudnnHandle_t current_cudnn_handle() { return current_cudnn_handle(cuda::current_device(), cuda::current_stream()); }

}  // namespace glassbox::handle_pool
