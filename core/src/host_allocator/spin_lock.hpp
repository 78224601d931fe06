#pragma once
// A test-and-test-and-set lock for critical sections of a few instructions
// that are almost never contended (a thread's own cache, one block's
// streams): one atomic exchange to take, one store to release.
#include <atomic>
#include <thread>

namespace glassbox::host_allocator::detail {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace glassbox::host_allocator::detail
