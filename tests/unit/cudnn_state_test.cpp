// The cuDNN state wrapper on the sim backend, where only the sim can tell:
// stream ordering step by step (manual streams stepped by hand), the
// backend's live counts as states come and go, a grown workspace's old block
// freed in stream order, the inline handle pool's counts, the environment.
// Behaviour any backend shows (ordering with gates, one caller per state,
// states side by side, the workspace, errors, metrics and spans) is in the
// typed suite tests/typed/cudnn_state_typed.hpp, run on the sim and on CUDA.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/error.hpp"

namespace gc = glassbox::cudnn;
namespace gm = glassbox::metrics;
using glassbox::sim::SimStream;
using State = gc::CudnnState<gc::SimCudnnBackend>;
using Wrapper = gc::CudnnWrapper<gc::SimCudnnBackend>;

namespace {

constexpr auto kManual = SimStream::Mode::manual;

// States on their own registry, so every metric starts at zero.
struct Sim {
  explicit Sim(gc::SimCudnnOptions backend = {}, gc::CudnnStatesOptions options = {})
      : states(gc::SimCudnnBackend(backend, registry), options, registry) {}

  Wrapper wrapper(SimStream& stream, int device = 0) { return Wrapper(states, device, &stream); }

  const gm::SeriesSnapshot& series(const std::string& name, int device, int index) const {
    snap = registry.snapshot();
    const auto* s = gm::find_series(snap, name, {{"device", std::to_string(device)}, {"state", std::to_string(index)}});
    if (s == nullptr) throw std::runtime_error("no series " + name);
    return *s;
  }
  double value(const std::string& name, int device, int index) const { return series(name, device, index).value; }

  gm::Registry registry;
  gc::CudnnStates<gc::SimCudnnBackend> states;
  mutable gm::Snapshot snap;
};

// Caller work, work through state 1, caller work again: checks that the
// state's work waits for the caller's earlier work, and the caller's later
// work for the state's. `run` makes the with_cudnn_state call.
template <class Run>
void expect_ordered_between_callers_work(Run run) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual, "caller");
  std::vector<std::string> log;
  SimStream* state_stream = nullptr;

  caller.enqueue([&] { log.push_back("caller before"); });
  run(sim.wrapper(caller), caller, [&](State& s) {
    state_stream = s.stream();
    s.stream()->enqueue([&] { log.push_back("through state"); });
  });
  caller.enqueue([&] { log.push_back("caller after"); });

  ASSERT_NE(state_stream, nullptr);
  EXPECT_EQ(state_stream->run_until_blocked(), 0u) << "the state's work started before the caller's earlier work";
  EXPECT_TRUE(caller.step());
  EXPECT_FALSE(caller.step()) << "the caller's later work did not wait for the state's work";
  EXPECT_EQ(log, std::vector<std::string>{"caller before"});
  EXPECT_EQ(state_stream->run_until_blocked(), 2u);  // the wait, then the work
  EXPECT_EQ(caller.run_until_blocked(), 2u);         // the wait, then "caller after"
  EXPECT_EQ(log, (std::vector<std::string>{"caller before", "through state", "caller after"}));
}

}  // namespace

TEST(CudnnState, WorkThroughAStateIsOrderedBetweenTheCallersEarlierAndLaterWork) {
  expect_ordered_between_callers_work(
      [](const Wrapper& w, SimStream& caller, auto f) { w.with_cudnn_state(&caller, 1, f); });
}

TEST(CudnnState, TheFormWithoutAStreamOrdersAgainstTheWrappersStream) {
  expect_ordered_between_callers_work([](const Wrapper& w, SimStream&, auto f) { w.with_cudnn_state(1, f); });
}

TEST(CudnnState, StatesAreCreatedOnFirstUseAndDestroyedWithTheirOwner) {
  gm::Registry registry;
  gc::SimCudnnBackend backend({.device_count = 2, .state_streams = kManual}, registry);
  {
    gc::CudnnStates<gc::SimCudnnBackend> states(backend, {}, registry);
    EXPECT_EQ(backend.live().streams, 0u);
    SimStream caller(kManual);
    Wrapper(states, 1, &caller).with_cudnn_state(2, [](State& s) { s.workspace().get(100); });
    Wrapper(states, 1, &caller).with_cudnn_state(2, [](State&) {});
    auto live = backend.live();
    EXPECT_EQ(live.streams, 1u);
    EXPECT_EQ(live.handles, 1u);
    EXPECT_EQ(live.workspace_blocks, 1u);
  }
  auto live = backend.live();
  EXPECT_EQ(live.streams, 0u);
  EXPECT_EQ(live.handles, 0u);
  EXPECT_EQ(live.workspace_blocks, 0u) << "a destroyed state's workspace leaked";
}

TEST(CudnnState, AGrownWorkspaceFreesTheOldBlockOnlyAfterTheStateStreamPassesIt) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  SimStream* state_stream = nullptr;
  sim.wrapper(caller).with_cudnn_state(0, [&](State& s) {
    state_stream = s.stream();
    s.workspace().get(256);
    s.stream()->enqueue([] {});  // stands for a kernel still reading the old block
    s.workspace().get(512);
  });
  EXPECT_EQ(sim.states.backend().live().workspace_blocks, 2u) << "the old block was freed under queued work";
  caller.run_until_blocked();
  state_stream->run_until_blocked();
  EXPECT_EQ(sim.states.backend().live().workspace_blocks, 1u);
  EXPECT_EQ(sim.states.backend().live().workspace_bytes, 512u);
}

TEST(CudnnState, TheStatesPerDeviceComeFromTheEnvironment) {
  ::setenv("GLASSBOX_CUDNN_STATES_PER_DEVICE", "8", 1);
  EXPECT_EQ(gc::CudnnStatesOptions::from_env().states_per_device, 8);
  for (const char* bad : {"0", "abc", "", "2000", "-3"}) {
    ::setenv("GLASSBOX_CUDNN_STATES_PER_DEVICE", bad, 1);
    try {
      gc::CudnnStatesOptions::from_env();
      FAIL() << "accepted '" << bad << "'";
    } catch (const glassbox::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("GLASSBOX_CUDNN_STATES_PER_DEVICE='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("GLASSBOX_CUDNN_STATES_PER_DEVICE");
  EXPECT_EQ(gc::CudnnStatesOptions::from_env().states_per_device, 4);
}

TEST(CudnnState, InlineHandleIsTheCallingThreadsPooledHandle) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  auto mine = w.inline_handle();
  EXPECT_EQ(w.inline_handle(), mine);
  decltype(mine) theirs = 0;
  std::thread([&] { theirs = w.inline_handle(); }).join();
  EXPECT_NE(theirs, mine);
  const auto& pool = sim.states.backend().handle_pool();
  EXPECT_EQ(pool.counts(0).created, 2u);
  EXPECT_EQ(pool.counts(0).in_use, 1u) << "the exited thread's handle went back to the pool";
  EXPECT_EQ(sim.states.backend().live().handles, 0u) << "an inline handle is not a state's handle";
}
