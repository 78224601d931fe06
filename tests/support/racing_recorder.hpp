#pragma once
// A thread that records a stream on a block the moment the test says go,
// round after round, to race that block's free() on the test's thread
// (the record_stream / free race of the host allocator's tests).
#include <atomic>
#include <functional>
#include <thread>

#include "glassbox/error.hpp"

namespace glassbox::testing {

class RacingRecorder {
 public:
  /// `record(ptr, ctx)` runs on the recorder's thread once per round; a
  /// glassbox::UsageError it throws counts as refused (false).
  RacingRecorder(int rounds, std::function<bool(void*, void*)> record)
      : thread_([this, rounds, record = std::move(record)] {
          for (int i = 0; i < rounds; ++i) {
            while (round_.load() != i) {}
            bool ok = false;
            try {
              ok = record(ptr_.load(), ctx_.load());
            } catch (const UsageError&) {}
            recorded_ = ok;
            done_ = i;
          }
        }) {}
  ~RacingRecorder() { thread_.join(); }
  RacingRecorder(const RacingRecorder&) = delete;
  RacingRecorder& operator=(const RacingRecorder&) = delete;

  /// Round `i` (0, 1, ... in order): records on this block now.
  void go(int i, void* ptr, void* ctx) {
    ptr_ = ptr;
    ctx_ = ctx;
    round_ = i;
  }
  /// Waits for round `i`'s record: whether it was taken (false: refused).
  bool recorded(int i) {
    while (done_.load() != i) {}
    return recorded_.load();
  }

 private:
  std::atomic<int> round_{-1}, done_{-1};
  std::atomic<void*> ptr_{nullptr}, ctx_{nullptr};
  std::atomic<bool> recorded_{false};
  std::thread thread_;  // last: it reads the members above
};

}  // namespace glassbox::testing
