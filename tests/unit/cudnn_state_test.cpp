// The cuDNN state wrapper on the sim backend: stream ordering (manual streams
// stepped by hand), exclusive use of one state, concurrency across states,
// the workspace, errors, and the metrics and spans of every execute.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/error.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/sampler.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace gc = glassbox::cudnn;
namespace gm = glassbox::metrics;
namespace gt = glassbox::trace;
using glassbox::sim::SimStream;
using State = gc::CudnnState<gc::SimCudnnBackend>;
using Wrapper = gc::CudnnWrapper<gc::SimCudnnBackend>;
using namespace std::chrono_literals;

namespace {

constexpr auto kManual = SimStream::Mode::manual;
constexpr auto kWorker = SimStream::Mode::worker;

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

// `parties` threads meet; each waits at most `limit` for the rest. A bounded
// wait turns "these never run at the same time" into a failed check, not a hang.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool arrive_and_wait(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    ++arrived_;
    cv_.notify_all();
    return cv_.wait_for(lock, limit, [&] { return arrived_ >= parties_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int parties_;
  int arrived_ = 0;
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

TEST(CudnnState, SixteenThreadsOnOneStateNeverOverlapInsideTheClosure) {
  constexpr int kThreads = 16, kRounds = 200;
  Sim sim({.state_streams = kWorker});
  std::atomic<int> inside{0}, most_inside{0}, ran_on_stream{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      SimStream caller(kWorker, "caller");
      Wrapper w = sim.wrapper(caller);
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        w.with_cudnn_state(0, [&](State& s) {
          int now = ++inside;
          int seen = most_inside.load();
          while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {}
          std::this_thread::yield();  // widen the window another thread would have to hit
          s.stream()->enqueue([&] { ++ran_on_stream; });
          --inside;
        });
      }
      caller.synchronize();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(most_inside.load(), 1) << "two threads were inside one state's closure at once";
  EXPECT_EQ(ran_on_stream.load(), kThreads * kRounds);
  EXPECT_EQ(sim.value("glassbox_cudnn_state_executions_total", 0, 0), kThreads * kRounds);
  EXPECT_EQ(sim.series("glassbox_cudnn_state_wait_seconds", 0, 0).histogram.count,
            static_cast<std::uint64_t>(kThreads * kRounds));
  EXPECT_EQ(sim.states.backend().live().streams, 1u) << "one state, one stream, however many callers";
}

// Each closure waits inside its state for the other: only possible if the
// two states are held at the same time.
TEST(CudnnState, DifferentStatesRunConcurrently) {
  Sim sim({.state_streams = kManual});
  Rendezvous both(2);
  bool met[2] = {false, false};
  std::vector<std::thread> threads;
  for (int index : {0, 1}) {
    threads.emplace_back([&, index] {
      SimStream caller(kManual);
      sim.wrapper(caller).with_cudnn_state(index, [&](State&) { met[index] = both.arrive_and_wait(10s); });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(met[0] && met[1]) << "states 0 and 1 were not held at the same time";
}

// The same probe on one state: the first closure must give up waiting,
// because the second cannot enter until it leaves.
TEST(CudnnState, OneStateIsNeverHeldByTwoCallersAtOnce) {
  Sim sim({.state_streams = kManual});
  Rendezvous both(2);
  std::atomic<int> met{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      SimStream caller(kManual);
      sim.wrapper(caller).with_cudnn_state(3, [&](State&) { met += both.arrive_and_wait(200ms) ? 1 : 0; });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(met.load(), 1) << "both callers were inside state 3 at once";
}

TEST(CudnnState, TimeWaitingForABusyStateIsObserved) {
  Sim sim({.state_streams = kManual});
  SimStream first_caller(kManual), second_caller(kManual);
  std::atomic<bool> holding{false}, second_started{false};
  std::thread holder([&] {
    sim.wrapper(first_caller).with_cudnn_state(0, [&](State&) {
      holding = true;
      while (!second_started) std::this_thread::yield();
      std::this_thread::sleep_for(50ms);
    });
  });
  while (!holding) std::this_thread::yield();
  std::thread second([&] {
    second_started = true;
    sim.wrapper(second_caller).with_cudnn_state(0, [](State&) {});
  });
  holder.join();
  second.join();
  const auto& h = sim.series("glassbox_cudnn_state_wait_seconds", 0, 0).histogram;
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.buckets.front(), 1u) << "the uncontended lock counts as no wait";
  EXPECT_GE(h.sum, 0.025) << "the second caller waited about 50 ms for the first";
}

TEST(CudnnState, EachStateHasItsOwnStreamAndHandleKeptAcrossExecutions) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  std::vector<State*> seen;
  for (int round = 0; round < 2; ++round) {
    for (int index = 0; index < 4; ++index) {
      w.with_cudnn_state(index, [&](State& s) {
        EXPECT_EQ(s.index(), index);
        EXPECT_EQ(s.device(), 0);
        if (round == 0)
          seen.push_back(&s);
        else
          EXPECT_EQ(seen[static_cast<std::size_t>(index)], &s) << "state " << index << " was created twice";
      });
    }
  }
  std::set<SimStream*> streams;
  std::set<std::uint64_t> handles;
  for (State* s : seen) {
    streams.insert(s->stream());
    handles.insert(s->handle());
  }
  EXPECT_EQ(streams.size(), 4u);
  EXPECT_EQ(handles.size(), 4u);
  EXPECT_EQ(streams.count(&caller), 0u);
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

TEST(CudnnState, WorkspaceGrowsOnlyAndIsReusedAcrossExecutions) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  void* first = nullptr;
  w.with_cudnn_state(0, [&](State& s) {
    first = s.workspace().get(1000);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(s.workspace().size(), 1000u);
    EXPECT_EQ(s.workspace().get(10), first) << "a smaller request must reuse the block";
    EXPECT_EQ(s.workspace().size(), 1000u) << "the workspace shrank";
  });
  w.with_cudnn_state(0, [&](State& s) {
    EXPECT_EQ(s.workspace().get(1000), first) << "the next execute must find the same block";
    void* bigger = s.workspace().get(4000);
    EXPECT_NE(bigger, nullptr);
    EXPECT_EQ(s.workspace().size(), 4000u);
    EXPECT_EQ(s.workspace().get(0), bigger);
  });
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_resizes_total", 0, 0), 2);
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_bytes", 0, 0), 4000);
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

TEST(CudnnState, ResetReleasesTheWorkspace) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  sim.wrapper(caller).with_cudnn_state(0, [&](State& s) {
    s.workspace().get(300);
    s.workspace().reset();
    EXPECT_EQ(s.workspace().size(), 0u);
    s.stream()->run_until_blocked();
    EXPECT_EQ(sim.value("glassbox_cudnn_workspace_bytes", 0, 0), 0);
    s.workspace().get(100);  // allocates again: nothing is kept after a reset
  });
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_resizes_total", 0, 0), 2);
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_bytes", 0, 0), 100);
}

TEST(CudnnState, AnIndexOutOfRangeIsAClearError) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  for (int bad : {4, -1}) {
    try {
      w.with_cudnn_state(bad, [](State&) { FAIL() << "ran the closure for a bad index"; });
      FAIL() << "no error for index " << bad;
    } catch (const glassbox::ConfigError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("state index " + std::to_string(bad) + " is out of range"), std::string::npos) << what;
      EXPECT_NE(what.find("accepted indices are 0..3"), std::string::npos) << what;
      EXPECT_NE(what.find("4 states per device"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(sim.states.backend().live().streams, 0u);
}

TEST(CudnnState, TheNumberOfStatesPerDeviceIsConfigurable) {
  Sim sim({.state_streams = kManual}, {.states_per_device = 2});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  EXPECT_NO_THROW(w.with_cudnn_state(1, [](State&) {}));
  EXPECT_THROW(w.with_cudnn_state(2, [](State&) {}), glassbox::ConfigError);
  EXPECT_THROW(Sim({}, {.states_per_device = 0}), glassbox::ConfigError);
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

TEST(CudnnState, ADeviceOutOfRangeIsAClearError) {
  Sim sim({.device_count = 2, .state_streams = kManual});
  SimStream caller(kManual);
  try {
    sim.wrapper(caller, 2).with_cudnn_state(0, [](State&) {});
    FAIL() << "no error for device 2";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("device 2 is out of range; accepted devices are 0..1"), std::string::npos)
        << e.what();
  }
}

TEST(CudnnState, AThrowingClosureStillOrdersTheCallerAndFreesTheState) {
  Sim sim({.state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller);
  std::vector<std::string> log;
  SimStream* state_stream = nullptr;
  EXPECT_THROW(w.with_cudnn_state(0,
                                  [&](State& s) {
                                    state_stream = s.stream();
                                    s.stream()->enqueue([&] { log.push_back("queued before the throw"); });
                                    throw std::runtime_error("cudnn call failed");
                                  }),
               std::runtime_error);
  caller.enqueue([&] { log.push_back("caller after"); });
  EXPECT_EQ(caller.run_until_blocked(), 0u) << "the caller's later work overtook the failed closure's work";
  state_stream->run_until_blocked();
  caller.run_until_blocked();
  EXPECT_EQ(log, (std::vector<std::string>{"queued before the throw", "caller after"}));
  bool ran = false;
  w.with_cudnn_state(0, [&](State&) { ran = true; });  // would deadlock if the lock were still held
  EXPECT_TRUE(ran);
}

TEST(CudnnState, MetricsAreExactAfterNExecutions) {
  Sim sim({.device_count = 2, .state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller, 1);
  const std::size_t requests[] = {64, 32, 128, 128, 16, 256, 8, 256, 100, 200};
  for (std::size_t bytes : requests) w.with_cudnn_state(2, [&](State& s) { s.workspace().get(bytes); });

  EXPECT_EQ(sim.value("glassbox_cudnn_state_executions_total", 1, 2), 10);
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_bytes", 1, 2), 256);
  EXPECT_EQ(sim.value("glassbox_cudnn_workspace_resizes_total", 1, 2), 3);  // 64, 128, 256
  const auto& wait = sim.series("glassbox_cudnn_state_wait_seconds", 1, 2).histogram;
  EXPECT_EQ(wait.count, 10u);
  EXPECT_EQ(wait.sum, 0.0) << "one thread never waits";
  // Every slot has its series from the start, so idle states show as zeros.
  EXPECT_EQ(sim.value("glassbox_cudnn_state_executions_total", 0, 0), 0);
  EXPECT_EQ(sim.value("glassbox_cudnn_state_executions_total", 1, 3), 0);
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

class CudnnStateSpans : public ::testing::Test {
 protected:
  void SetUp() override {
    gt::set_sampler(gt::always_on());
    gt::set_span_processor(processor_);
  }
  void TearDown() override {
    gt::set_span_processor(nullptr);
    gt::set_sampler(nullptr);
  }
  static const gt::AttributeValue* attribute(const gt::SpanData& span, const std::string& key) {
    for (const auto& a : span.attributes) {
      if (a.key == key) return &a.value;
    }
    return nullptr;
  }
  std::shared_ptr<gt::InMemorySpanProcessor> processor_ = std::make_shared<gt::InMemorySpanProcessor>();
};

TEST_F(CudnnStateSpans, EveryExecuteIsASpanWithDeviceStateAndWorkspace) {
  Sim sim({.device_count = 2, .state_streams = kManual});
  SimStream caller(kManual);
  Wrapper w = sim.wrapper(caller, 1);
  w.with_cudnn_state(3, [](State& s) { s.workspace().get(4096); });
  EXPECT_THROW(w.with_cudnn_state(3, [](State&) { throw std::runtime_error("no algorithm fits"); }),
               std::runtime_error);

  auto spans = processor_->take();
  ASSERT_EQ(spans.size(), 2u);
  for (const auto& span : spans) {
    EXPECT_EQ(span.name, "glassbox.cudnn.execute");
    ASSERT_NE(attribute(span, "glassbox.device"), nullptr);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.device")), 1);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.cudnn.state")), 3);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.cudnn.workspace_bytes")), 4096);
  }
  EXPECT_EQ(spans[0].status, gt::StatusCode::ok);
  EXPECT_EQ(spans[1].status, gt::StatusCode::error);
  EXPECT_EQ(spans[1].status_message, "no algorithm fits");
}
