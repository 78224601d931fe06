#pragma once
// Training progress: on a terminal a bar redrawn in place with the step
// rate and ETA; otherwise (a pipe, a log) a plain line for the first step,
// then about once a second, then for the last.
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace glassbox::demo {

class Progress {
 public:
  /// `total` 0 means unbounded: no bar and no ETA. `terminal`: draw the bar.
  Progress(std::int64_t total, bool terminal, std::FILE* out = stdout);
  /// After step `done` (1-based), whose loss was `loss`.
  void update(std::int64_t done, float loss);
  /// Prints the last step's line if it was not printed, and ends the bar's line.
  void finish();

 private:
  void print(bool final);

  const std::int64_t total_;
  const bool terminal_;
  std::FILE* const out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_print_ = start_;
  std::int64_t done_ = 0;
  std::int64_t printed_ = 0;
  float loss_ = 0;
};

}  // namespace glassbox::demo
