#pragma once
// The sim backends' fault injection: a counter of calls still to fail, which
// each call decrements once, so a test arms "the next N calls fail" from any
// thread and exactly N calls fail.
#include <atomic>

namespace glassbox::sim {

/// Takes one injected fault if any are left; true when this call must fail.
inline bool take_fault(std::atomic<int>& left) noexcept {
  int n = left.load();
  while (n > 0 && !left.compare_exchange_weak(n, n - 1)) {}
  return n > 0;
}

}  // namespace glassbox::sim
