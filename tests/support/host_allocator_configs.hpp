#pragma once
// The configs the sim property tests of the host allocator (model, faults)
// run under: the default (a cache per thread in front of the shared lists)
// and thread caches off.
#include <gtest/gtest.h>

#include <string>

namespace glassbox::testing {

inline auto thread_cache_configs() { return ::testing::Values("", "thread_cache:0"); }

inline std::string config_name(const ::testing::TestParamInfo<const char*>& p) {
  return *p.param == '\0' ? "Default" : "NoThreadCache";
}

}  // namespace glassbox::testing
