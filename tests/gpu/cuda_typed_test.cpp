// The typed suites (tests/typed) on the CUDA backends, device 0; every test
// skips without a device. tests/typed/sim_typed_test.cpp instantiates the
// same suites for the sim.
#include "cuda_backend_traits.hpp"
#include "cudnn_state_typed.hpp"
#include "host_allocator_stamp_typed.hpp"
#include "host_allocator_typed.hpp"

namespace glassbox::testing {

INSTANTIATE_TYPED_TEST_SUITE_P(CudaHostAllocator, HostAllocatorTyped, CudaHostTraits);
INSTANTIATE_TYPED_TEST_SUITE_P(CudaHostAllocator, HostAllocatorStampTyped, CudaHostTraits);
INSTANTIATE_TYPED_TEST_SUITE_P(CudaCudnnState, CudnnStateTyped, CudaCudnnTraits);

}  // namespace glassbox::testing
