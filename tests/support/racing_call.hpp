#pragma once
// A thread that makes one call on a block the moment the test says go,
// round after round, to race the test thread's own call on that block (the
// record_stream / free races of the host allocator's tests: a record on
// another thread racing the free, or a free on another thread racing the
// record).
#include <atomic>
#include <functional>
#include <thread>

#include "glassbox/error.hpp"

namespace glassbox::testing {

class RacingCall {
 public:
  /// `call(ptr, ctx)` runs on the racing thread once per round; a
  /// glassbox::UsageError it throws counts as refused (false).
  RacingCall(int rounds, std::function<bool(void*, void*)> call)
      : thread_([this, rounds, call = std::move(call)] {
          for (int i = 0; i < rounds; ++i) {
            while (round_.load() != i) {}
            bool ok = false;
            try {
              ok = call(ptr_.load(), ctx_.load());
            } catch (const UsageError&) {}
            taken_ = ok;
            done_ = i;
          }
        }) {}
  ~RacingCall() { thread_.join(); }
  RacingCall(const RacingCall&) = delete;
  RacingCall& operator=(const RacingCall&) = delete;

  /// Round `i` (0, 1, ... in order): calls on this block now.
  void go(int i, void* ptr, void* ctx) {
    ptr_ = ptr;
    ctx_ = ctx;
    round_ = i;
  }
  /// Waits for round `i`'s call: whether it was taken (false: refused).
  bool taken(int i) {
    while (done_.load() != i) {}
    return taken_.load();
  }

 private:
  std::atomic<int> round_{-1}, done_{-1};
  std::atomic<void*> ptr_{nullptr}, ctx_{nullptr};
  std::atomic<bool> taken_{false};
  std::thread thread_;  // last: it reads the members above
};

}  // namespace glassbox::testing
