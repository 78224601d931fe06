// Property test: thousands of random operation sequences run against the
// caching host allocator and against the reference model of its rules
// (host_allocator_model.hpp), comparing every stat and metric after each step.
#include <gtest/gtest.h>

#include <random>

#include "host_allocator_configs.hpp"
#include "host_allocator_model.hpp"

// Under the default config (the thread's cache in front of the shared
// lists) and with thread caches off.
class HostAllocatorModel : public ::testing::TestWithParam<const char*> {};

TEST_P(HostAllocatorModel, RandomSequencesMatchTheReferenceModel) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    glassbox::testing::ModelHarness harness(
        [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }, GetParam());
    try {
      for (int step = 0; step < 200; ++step) harness.step_and_check();
    } catch (const glassbox::testing::ModelMismatch& e) {
      FAIL() << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, HostAllocatorModel, glassbox::testing::thread_cache_configs(),
                         glassbox::testing::config_name);
