#include "glassbox/cuda/current_stream.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {
// Grown only by set_current_stream: a thread that never sets one reads no
// vector at all beyond its (empty) size.
thread_local std::vector<cudaStream_t> tl_streams;
}  // namespace

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

cudaStream_t current_stream(int device) noexcept {
  const auto d = static_cast<std::size_t>(device);
  return device >= 0 && d < tl_streams.size() ? tl_streams[d] : nullptr;
}

void set_current_stream(int device, cudaStream_t stream) {
  if (device < 0)
    throw ConfigError("set_current_stream: device " + std::to_string(device) + " is not a device index (0 or more)");
  const auto d = static_cast<std::size_t>(device);
  if (tl_streams.size() <= d) tl_streams.resize(d + 1, nullptr);
  tl_streams[d] = stream;
}

StreamGuard::StreamGuard(int device, cudaStream_t stream) : device_(device), previous_(current_stream(device)) {
  set_current_stream(device, stream);
}

StreamGuard::~StreamGuard() { set_current_stream(device_, previous_); }

}  // namespace glassbox::cuda
