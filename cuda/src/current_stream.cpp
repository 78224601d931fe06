#include "glassbox/cuda/current_stream.hpp"

#include "glassbox/cuda/cuda_check.hpp"

namespace glassbox::cuda {

namespace {
thread_local constinit cudaStream_t tl_stream = nullptr;
}  // namespace

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

cudaStream_t current_stream() noexcept { return tl_stream; }

void set_current_stream(cudaStream_t stream) noexcept { tl_stream = stream; }

StreamGuard::StreamGuard(cudaStream_t stream) noexcept : previous_(tl_stream) { tl_stream = stream; }

StreamGuard::~StreamGuard() { tl_stream = previous_; }

}  // namespace glassbox::cuda
