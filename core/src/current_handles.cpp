#include "glassbox/handle_pool/current_handles.hpp"

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace glassbox::handle_pool {

namespace {

// Leaked: threads may return handles after static destruction began.
template <class Pool>
Pool& leaked_pool() {
  static auto* p = new std::shared_ptr<Pool>(Pool::create());
  return **p;
}

// The handle and stream a thread last bound on a device; when both match,
// the binding is already in place.
template <class Handle>
struct Binding {
  Handle handle = nullptr;
  cudaStream_t stream = nullptr;
  bool bound = false;
};

template <class Handle>
Binding<Handle>& binding(std::vector<Binding<Handle>>& per_device, int device) {
  auto d = static_cast<std::size_t>(device);
  if (per_device.size() <= d) per_device.resize(d + 1);
  return per_device[d];
}

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

void* workspace_for(cublasHandle_t h, cudaStream_t s, int device) {
  static std::mutex mu;
  static auto* spaces = new std::map<std::pair<cublasHandle_t, cudaStream_t>, void*>;
  std::lock_guard lock(mu);
  void*& ws = (*spaces)[{h, s}];
  if (ws == nullptr) {
    backend::DeviceGuard guard(device);
    backend::check_cuda(cudaMalloc(&ws, cublas_workspace_bytes()), "cudaMalloc (cuBLAS workspace)");
  }
  return ws;
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

cublasHandle_t current_cublas_handle(int device, cudaStream_t stream) {
  thread_local std::vector<Binding<cublasHandle_t>> bindings;
  cublasHandle_t h = cublas_pool().reserve(device);
  Binding<cublasHandle_t>& b = binding(bindings, device);
  if (b.bound && b.handle == h && b.stream == stream) [[likely]] return h;
  backend::DeviceGuard guard(device);
  backend::check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  // cublasSetStream drops any user workspace, so set ours after it.
  backend::check_cublas(cublasSetWorkspace(h, workspace_for(h, stream, device), cublas_workspace_bytes()),
                        "cublasSetWorkspace");
  b = {h, stream, true};
  return h;
}

cublasLtHandle_t current_cublaslt_handle(int device) { return cublaslt_pool().reserve(device); }

cudnnHandle_t current_cudnn_handle(int device, cudaStream_t stream) {
  thread_local std::vector<Binding<cudnnHandle_t>> bindings;
  cudnnHandle_t h = cudnn_pool().reserve(device);
  Binding<cudnnHandle_t>& b = binding(bindings, device);
  if (b.bound && b.handle == h && b.stream == stream) [[likely]] return h;
  backend::check_cudnn(cudnnSetStream(h, stream), "cudnnSetStream");
  b = {h, stream, true};
  return h;
}

}  // namespace glassbox::handle_pool
