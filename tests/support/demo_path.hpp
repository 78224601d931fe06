#pragma once
// Where the glassbox-demo binary is, for tests that start it: GLASSBOX_DEMO
// when set (the GPU bundle's `run` sets it, since the bundle has no build
// tree), else the one the test was built with (GLASSBOX_DEMO_PATH, a
// compile definition of every test target that includes this).
#include <cstdlib>
#include <string>

namespace glassbox::testing {

inline std::string demo_path() {
  const char* env = std::getenv("GLASSBOX_DEMO");
  return env != nullptr ? env : GLASSBOX_DEMO_PATH;
}

}  // namespace glassbox::testing
