// A backward whose allocation fails, at each of its allocations in turn: it
// ends (with the error, or unharmed where the failure was caught), never
// hangs, and the engine runs the next backward; and a thread's first metric
// update, which allocates the thread's cells, is counted when that fails.
// An executable of its own: it replaces the global operator new.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <new>
#include <thread>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/engine.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/metrics/snapshot.hpp"

namespace {
// On this thread, how many more allocations succeed before one fails; the
// failure disarms it. Negative: none fails.
thread_local long tl_allocations_left = -1;
}  // namespace

void* operator new(std::size_t n) {
  if (tl_allocations_left == 0) {
    tl_allocations_left = -1;
    throw std::bad_alloc();
  }
  if (tl_allocations_left > 0) --tl_allocations_left;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC takes these for mismatched calls, not for the replacements they are.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

namespace ga = glassbox::autograd;
using ga::Tensor;

enum class Outcome { completed, failed, next_one_wrong };

Tensor leaf() {
  Tensor x = Tensor::ones(ga::Shape{1});
  x.set_requires_grad(true);
  return x;
}

// d/dx of 2x * 3 on a fresh leaf: 6 when nothing of an earlier backward leaks in.
bool chain_backward_is_right(ga::Engine& engine) {
  Tensor x = leaf();
  ga::backward({x * 2.0F * 3.0F}, {}, ga::BackwardOptions{false, &engine});
  return x.grad().defined() && x.grad().item() == 6.0F;
}

// Two roots, acc = x*1 + x*2 + ... and x*9: a node with two ready successors
// queues one of them on the thread's heap, as does the second root, and a
// fresh thread's heap allocates when it first grows (so do its metric cells,
// at its first update). A chain's backward goes after, on the same thread,
// to find whatever the failed one left queued.
Outcome backward_failing_at(ga::Engine& engine, long allocation) {
  Tensor x = leaf();
  Tensor acc = x * 1.0F;
  for (int i = 2; i <= 8; ++i) acc = acc + x * static_cast<float>(i);
  Tensor other = x * 9.0F;
  tl_allocations_left = allocation;
  Outcome outcome = Outcome::failed;
  try {
    ga::backward({acc, other}, {}, ga::BackwardOptions{false, &engine});
    outcome = Outcome::completed;
  } catch (const std::exception&) {}
  tl_allocations_left = -1;
  if (!chain_backward_is_right(engine)) return Outcome::next_one_wrong;
  return outcome;
}

TEST(EngineOutOfMemory, ABackwardWhoseAllocationFailsEndsAndTheEngineRunsTheNext) {
  glassbox::metrics::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry});
  int completed = 0;
  int failed = 0;
  for (long allocation = 0; allocation < 400; ++allocation) {
    // A thread per backward: its first queuing allocates (see above).
    std::packaged_task<Outcome()> task([&] { return backward_failing_at(engine, allocation); });
    std::future<Outcome> outcome = task.get_future();
    std::thread thread(std::move(task));
    if (outcome.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "the backward hung after its allocation " << allocation << " failed";
      std::fflush(stdout);
      std::_Exit(1);  // the hung thread cannot be joined
    }
    thread.join();
    const Outcome got = outcome.get();
    ASSERT_NE(got, Outcome::next_one_wrong) << "a backward after allocation " << allocation << " failed went wrong";
    (got == Outcome::completed ? completed : failed)++;
  }
  EXPECT_GT(failed, 10);
  EXPECT_GT(completed, 0) << "the sweep ended before the backward's last allocation";
  EXPECT_EQ(backward_failing_at(engine, -1), Outcome::completed);
}

TEST(MetricsOutOfMemory, AThreadsFirstUpdateIsCountedWhenItsCellsCannotBeAllocated) {
  glassbox::metrics::Registry registry;
  glassbox::metrics::Counter counter = registry.counter("test_updates_total", "updates").with();
  std::thread([&] {
    tl_allocations_left = 0;  // the thread's cells: its first allocation
    counter.inc(3);
    tl_allocations_left = -1;
    counter.inc(4);  // cells this time
  }).join();
  EXPECT_EQ(glassbox::metrics::sum_series(registry.snapshot(), "test_updates_total"), 7.0);
}

}  // namespace
