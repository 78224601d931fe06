#pragma once
// Runs a shell command for tests that drive real tools (promtool, node) and
// returns its exit status and combined output.
#include <cstdio>
#include <string>

namespace glassbox::testing {

struct CommandResult {
  int status = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  r.status = ::pclose(p);
  return r;
}

}  // namespace glassbox::testing
