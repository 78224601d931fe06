#pragma once
// Where the repository's files are, for tests that read them (dashboards,
// library sources, scripts): GLASSBOX_SOURCE when set (the GPU bundle's `run`
// sets it to the files the bundle carries, since the bundle runs from another
// checkout, or from none), else the checkout the test was built from
// (GLASSBOX_SOURCE_DIR, a compile definition of every test target that
// includes this). A folder that is not there throws, saying which it was.
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace glassbox::testing {

inline std::filesystem::path source_dir() {
  const char* env = std::getenv("GLASSBOX_SOURCE");
  const std::filesystem::path dir = env != nullptr ? env : GLASSBOX_SOURCE_DIR;
  if (!std::filesystem::is_directory(dir)) {
    throw std::runtime_error(
        "no source files at " + dir.string() +
        (env != nullptr ? " (GLASSBOX_SOURCE)" : " (the checkout the test was built from): set GLASSBOX_SOURCE"));
  }
  return dir;
}

}  // namespace glassbox::testing
