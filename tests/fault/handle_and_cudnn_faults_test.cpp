// Fault injection into the handle pool and the cuDNN states on the sim
// backends: handle creation, state stream and handle creation, and workspace
// allocation failing, from many threads at once. The ground truth is the sim
// factory's own record of what it created and destroyed: the pool's counts and
// metrics must equal it, each failure must reach its caller as an error that
// says what failed, the caller must be able to go on, and nothing may be left
// once the owners are gone.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/error.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "metric_value.hpp"

namespace gs = glassbox::sim;
namespace gc = glassbox::cudnn;
namespace gm = glassbox::metrics;
using glassbox::testing::metric_sum;
using Pool = glassbox::handle_pool::DeviceThreadHandlePool<gs::FakeHandleFactory>;
using State = gc::CudnnState<gc::SimCudnnBackend>;

namespace {

bool mentions(const std::exception& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

// Each of `threads` threads keeps calling `attempt` until it succeeds; returns
// how many attempts failed, each with an error naming `what_failed`.
template <class Attempt>
int attempts_failed(int threads, const std::string& what_failed, Attempt attempt) {
  std::atomic<int> failed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (;;) {
        try {
          attempt(t);
          return;
        } catch (const glassbox::BackendError& e) {
          EXPECT_TRUE(mentions(e, what_failed)) << e.what();
          failed.fetch_add(1);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  return failed.load();
}

// An empty closure through state `index`, from a caller stream of its own.
void run_on_fresh_stream(gc::CudnnStates<gc::SimCudnnBackend>& states, int index) {
  gs::SimStream caller(gs::SimStream::Mode::worker, "caller");
  gc::CudnnWrapper<gc::SimCudnnBackend>(states, 0, &caller).with_cudnn_state(index, [](State&) {});
}

}  // namespace

// Each round, a fresh pool meets 8 threads that all hold a handle at once, so
// every thread must create one and every armed fault fires.
TEST(HandlePoolFaults, FailedCreationsLeakNothingAndMetricsMatchTheFactory) {
  gm::Registry registry;
  auto state = std::make_shared<gs::FakeHandleState>();
  int failed = 0;
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto pool = Pool::create(gs::FakeHandleFactory("cublas", state), registry);
    std::latch all_hold(8);
    state->failures_to_inject = round % 7;
    failed += attempts_failed(8, "cublas handle creation failed on device 0", [&](int) {
      pool->reserve(0);
      all_hold.arrive_and_wait();
    });
    auto counts = pool->counts(0);
    {
      std::lock_guard lock(state->mu);
      ASSERT_EQ(counts.created, 8u);
      ASSERT_EQ(state->live.size(), 8u);
      ASSERT_EQ(metric_sum(registry, "glassbox_handles_created_total"), static_cast<double>(state->created));
    }
    ASSERT_EQ(counts.in_use, 0u) << "exited threads still hold handles";
    ASSERT_EQ(metric_sum(registry, "glassbox_handles_in_use"), 0);
    pool.reset();
    std::lock_guard lock(state->mu);
    ASSERT_TRUE(state->live.empty());
  }
  EXPECT_EQ(failed, 7 * (0 + 1 + 2 + 3 + 4 + 5 + 6));  // rounds 0..48 arm 0..6 seven times; round 49 arms 0
  EXPECT_EQ(state->created, state->destroyed);
}

TEST(CudnnStateFaults, StatesWhoseCreationFailsAreRetriedByTheNextCallerAndLeakNothing) {
  gm::Registry registry;
  gc::SimCudnnBackend backend({}, registry);
  auto states = std::make_unique<gc::CudnnStates<gc::SimCudnnBackend>>(backend, gc::CudnnStatesOptions{}, registry);
  backend.fail_stream_creations() = 3;
  int stream_failures =
      attempts_failed(16, "stream creation failed on device 0", [&](int t) { run_on_fresh_stream(*states, t % 4); });
  backend.fail_handle_creations() = 3;
  auto fresh = std::make_unique<gc::CudnnStates<gc::SimCudnnBackend>>(backend, gc::CudnnStatesOptions{}, registry);
  int handle_failures = attempts_failed(16, "cudnn handle creation failed on device 0",
                                        [&](int t) { run_on_fresh_stream(*fresh, t % 4); });
  EXPECT_EQ(stream_failures, 3);
  EXPECT_EQ(handle_failures, 3);
  auto live = backend.live();
  EXPECT_EQ(live.streams, 8u) << "a state whose handle failed kept its stream";
  EXPECT_EQ(live.handles, 8u);
  // Two owners on one registry: each successful execute counted once.
  EXPECT_EQ(metric_sum(registry, "glassbox_cudnn_state_executions_total"), 32);
  states.reset();
  fresh.reset();
  live = backend.live();
  EXPECT_EQ(live.streams, 0u);
  EXPECT_EQ(live.handles, 0u);
}

TEST(CudnnStateFaults, AFailedWorkspaceAllocationLeavesTheStateUsable) {
  gm::Registry registry;
  gc::SimCudnnBackend backend({}, registry);
  {
    gc::CudnnStates<gc::SimCudnnBackend> states(backend, gc::CudnnStatesOptions{}, registry);
    gs::SimStream caller(gs::SimStream::Mode::worker, "caller");
    gc::CudnnWrapper<gc::SimCudnnBackend> wrapper(states, 0, &caller);
    backend.fail_workspace_allocations() = 1;
    try {
      wrapper.with_cudnn_state(0, [](State& s) { s.workspace().get(4096); });
      FAIL() << "expected a BackendError";
    } catch (const glassbox::BackendError& e) {
      EXPECT_TRUE(mentions(e, "workspace allocation of 4096 bytes failed on device 0")) << e.what();
    }
    EXPECT_EQ(metric_sum(registry, "glassbox_cudnn_workspace_bytes"), 0);
    EXPECT_EQ(metric_sum(registry, "glassbox_cudnn_workspace_resizes_total"), 0);
    EXPECT_EQ(backend.live().workspace_blocks, 0u);
    wrapper.with_cudnn_state(0, [](State& s) { EXPECT_NE(s.workspace().get(4096), nullptr); });
    EXPECT_EQ(metric_sum(registry, "glassbox_cudnn_workspace_bytes"), 4096);
    EXPECT_EQ(backend.live().workspace_blocks, 1u);
  }
  // The states are gone; their streams ran the deferred frees before going.
  EXPECT_EQ(backend.live().workspace_blocks, 0u);
  EXPECT_EQ(backend.live().streams, 0u);
}
