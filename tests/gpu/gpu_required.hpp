#pragma once
// Whether a GPU test must skip for want of devices. With
// GLASSBOX_REQUIRE_GPU=1 (scripts/gpu-bench sets it on the GPU machine) no
// device at all is a failure instead: a GPU suite that skips there proves
// nothing. A test that needs more devices than the machine has still skips.
// A driver that is there but unusable makes cuda_device_count() throw, which
// fails the test wherever it runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "glassbox/cuda/cuda_check.hpp"

namespace glassbox::testing {

inline bool gpu_required() {
  const char* v = std::getenv("GLASSBOX_REQUIRE_GPU");
  return v != nullptr && std::string_view(v) == "1";
}

/// True when the calling test should GTEST_SKIP(): fewer than `needed` devices.
inline bool lacks_devices(int needed = 1) {
  const int have = cuda::cuda_device_count();
  if (have >= needed) return false;
  if (have == 0 && gpu_required())
    ADD_FAILURE() << "GLASSBOX_REQUIRE_GPU=1, but cudaGetDeviceCount finds no CUDA device";
  return true;
}

}  // namespace glassbox::testing
