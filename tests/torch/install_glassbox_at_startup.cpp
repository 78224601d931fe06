// Linked into PyTorch's own C++ host allocator test (scripts/gpu-torch builds
// it on the GPU machine), so that every test there runs on glassbox's
// allocator: this executable's static initializers run after those of
// libtorch_cuda, where PyTorch registers its own.
#include <cstdio>

#include "glassbox/torch/install.hpp"

namespace {
const bool g_installed = [] {
  glassbox::torch::install();
  std::fprintf(stderr, "glassbox_torch: installed as PyTorch's CUDA host allocator\n");
  return true;
}();
}  // namespace
