#pragma once
// Where the repository's files are, for tests that read them (dashboards,
// library sources, scripts): GLASSBOX_SOURCE when set (the GPU bundle's `run`
// sets it to the files the bundle carries, since the bundle runs from another
// checkout, or from none), else the checkout the test was built from
// (GLASSBOX_SOURCE_DIR, a compile definition of every test target that
// includes this). A folder that is not there throws, saying which it was.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

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

/// The whole of a file, as bytes; empty when it cannot be read.
inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace glassbox::testing
