#pragma once
// NVTX ranges in the glassbox domain. ScopedRange pushes and pops on one
// thread; start_range/end_range make a range that may end on another thread.
#include <cstdint>

#include "glassbox/nvtx/domain.hpp"

namespace glassbox::nvtx {

class ScopedRange {
 public:
  /// [[nodiscard]]: a discarded temporary would push and pop at once.
  [[nodiscard]] ScopedRange(const RegisteredName& name, Category category) noexcept;
  /// For names known only at run time (copied by the tool at each push).
  [[nodiscard]] ScopedRange(const char* name, Category category) noexcept;
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

using RangeId = std::uint64_t;

RangeId start_range(const RegisteredName& name, Category category) noexcept;
void end_range(RangeId id) noexcept;

}  // namespace glassbox::nvtx
