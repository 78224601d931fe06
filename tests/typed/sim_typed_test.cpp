// The typed suites on the sim backends: they run everywhere (label unit).
// tests/gpu/cuda_typed_test.cpp instantiates the same suites for CUDA.
#include "cudnn_state_typed.hpp"
#include "host_allocator_stamp_typed.hpp"
#include "host_allocator_typed.hpp"
#include "sim_backend_traits.hpp"

namespace glassbox::testing {

INSTANTIATE_TYPED_TEST_SUITE_P(SimHostAllocator, HostAllocatorTyped, SimHostTraits);
INSTANTIATE_TYPED_TEST_SUITE_P(SimHostAllocator, HostAllocatorStampTyped, SimHostTraits);
INSTANTIATE_TYPED_TEST_SUITE_P(SimCudnnState, CudnnStateTyped, SimCudnnTraits);

}  // namespace glassbox::testing
