// The caching host allocator against its reference model
// (tests/support/host_allocator_model.hpp): the input bytes choose every
// operation and operand, so libFuzzer steers toward sequences that reach new
// allocator code. Any difference between allocator and model aborts.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>

#include "fuzz_check.hpp"
#include "host_allocator_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  glassbox::testing::ModelHarness harness(
      [&input](int lo, int hi) { return input.ConsumeIntegralInRange<int>(lo, hi); });
  try {
    while (input.remaining_bytes() > 0) harness.step_and_check();
  } catch (const glassbox::testing::ModelMismatch& e) {
    fuzz_check(false, "the allocator matches its reference model", e.what());
  }
  return 0;
}
