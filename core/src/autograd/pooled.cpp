#include "glassbox/autograd/detail/pooled.hpp"

#include <array>
#include <cstdlib>

namespace glassbox::autograd::detail {

namespace {

// Set once the calling thread's Drains is gone: a size first pooled after
// that keeps nothing, or its chunks would outlive the thread.
constinit thread_local bool tl_exiting = false;

// One per thread that has pooled a chunk: its destructor, at the thread's
// exit, hands every size's kept chunks back to the heap.
struct Drains {
  std::array<void (*)() noexcept, kMaxPooledChunk / 16> fns{};
  std::size_t count = 0;
  ~Drains() {
    tl_exiting = true;
    for (std::size_t i = 0; i < count; ++i) fns[i]();
  }
};

}  // namespace

bool drain_at_thread_exit(void (*drain)() noexcept) {
  if (tl_exiting) return false;
  thread_local Drains drains;
  // One entry per size, sizes multiples of 16 up to kMaxPooledChunk: never full.
  if (drains.count == drains.fns.size()) std::abort();
  drains.fns[drains.count++] = drain;
  return true;
}

}  // namespace glassbox::autograd::detail
