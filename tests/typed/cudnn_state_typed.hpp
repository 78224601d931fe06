#pragma once
// The cuDNN state wrapper's behaviour, written once for any backend: work
// through a state ordered against the caller's stream both ways (also when
// the closure throws), one caller at a time per state and states side by
// side, lazily made per-index states with their own stream and handle, the
// workspace, errors, metrics and spans. Instantiated for the sim backend
// (tests/typed/sim_typed_test.cpp, label unit) and the CUDA backend
// (tests/gpu/cuda_typed_test.cpp, label gpu; skipped without a device).
//
// Ordering is checked with gates (see tests/support/sim_backend_traits.hpp):
// a gate holds one stream, and what must wait for it may not run until the
// gate opens. A wrong order shows as work that ran during a quiet period of
// 200 ms with the gate closed; a right one never fails, however slow the
// machine. Work on streams is host tasks (sim: queued items; CUDA:
// cudaLaunchHostFunc) that log their names.
//
// The sim's exact step-by-step orderings, lifetimes and inline-handle pool
// counts stay in tests/unit/cudnn_state_test.cpp; real convolutions and
// cuDNN's stream binding in tests/gpu/cudnn_conv_gpu_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/cudnn/cudnn_states.hpp"
#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/error.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/sampler.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace glassbox::testing {

namespace typed {

/// How long work that must wait is given to run anyway.
constexpr std::chrono::milliseconds kQuiet{200};

/// Names logged by host tasks, in the order they ran. The tasks share the
/// log's state, so one that runs late (when an ordering is broken) still
/// finds it.
class StreamLog {
 public:
  std::function<void()> add(std::string entry) {
    return [shared = shared_, entry = std::move(entry)] {
      std::lock_guard lock(shared->mu);
      shared->entries.push_back(entry);
      shared->cv.notify_all();
    };
  }
  /// Whether `n` entries are logged within `limit`.
  bool reaches(std::size_t n, std::chrono::milliseconds limit) {
    std::unique_lock lock(shared_->mu);
    return shared_->cv.wait_for(lock, limit, [&] { return shared_->entries.size() >= n; });
  }
  std::vector<std::string> entries() const {
    std::lock_guard lock(shared_->mu);
    return shared_->entries;
  }
  void clear() {
    std::lock_guard lock(shared_->mu);
    shared_->entries.clear();
  }

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> entries;
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
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

// The states' wait clock for TimeWaitingForABusyStateIsObserved. The lock
// reads it only when it finds the state busy: its first reading tells the
// holder that the second caller is waiting, and its readings are what the
// histogram sees, so the test needs no sleep and no scheduling luck.
struct SignallingClock {
  static inline std::promise<void> waiting;
  static inline std::atomic<int> readings{0};
  static void reset() {
    waiting = {};
    readings = 0;
  }
  static std::chrono::steady_clock::time_point now() {
    const std::chrono::steady_clock::time_point epoch{};
    if (readings++ > 0) return epoch + std::chrono::milliseconds(250);
    waiting.set_value();
    return epoch;
  }
};

}  // namespace typed

template <class T>
class CudnnStateTyped : public ::testing::Test {
 protected:
  using Backend = typename T::Backend;
  using States = cudnn::CudnnStates<Backend>;
  using Wrapper = cudnn::CudnnWrapper<Backend>;
  using State = cudnn::CudnnState<Backend>;
  using Stream = typename T::Stream;
  using Gate = typename T::Gate;
  using stream_type = typename Backend::stream_type;

  void SetUp() override {
    if (std::string why = T::unavailable(); !why.empty()) GTEST_SKIP() << why;
  }

  /// The states, on a registry of their own so every metric starts at zero.
  void make(cudnn::CudnnStatesOptions options = {}) {
    states = std::make_unique<States>(T::make_backend(registry), options, registry);
  }
  Wrapper wrapper(const Stream& caller, int device = 0) { return Wrapper(*states, device, caller.native()); }

  const metrics::SeriesSnapshot& series(const std::string& name, int device, int index) const {
    snap = registry.snapshot();
    const auto* s =
        metrics::find_series(snap, name, {{"device", std::to_string(device)}, {"state", std::to_string(index)}});
    if (s == nullptr) throw std::runtime_error("no series " + name);
    return *s;
  }
  double value(const std::string& name, int device, int index) const { return series(name, device, index).value; }
  std::optional<std::size_t> live_state_streams() { return T::live_state_streams(states->backend()); }

  // Work through state 1 between the caller's work, both ways: the state's
  // work must wait for the caller's earlier work, and the caller's later
  // work for the state's. `run(wrapper, caller, f)` makes the call.
  template <class Run>
  void expect_ordered_between_callers_work(Run run) {
    make();
    Stream caller;
    Wrapper w = wrapper(caller);
    run(w, caller.native(), [](State&) {});  // makes the state before any gate is closed
    caller.synchronize();
    typed::StreamLog log;
    stream_type state_stream{};
    {
      Gate held(caller.native());
      T::host_task(caller.native(), log.add("caller before"));
      run(w, caller.native(), [&](State& s) {
        state_stream = s.stream();
        T::host_task(s.stream(), log.add("through state"));
      });
      EXPECT_FALSE(log.reaches(1, typed::kQuiet)) << "the state's work started before the caller's earlier work";
      held.open();
      caller.synchronize();
      EXPECT_EQ(log.entries(), (std::vector<std::string>{"caller before", "through state"}));
      T::synchronize(state_stream);  // where the order is broken, the caller may be done first
    }
    log.clear();
    {
      std::optional<Gate> held;
      run(w, caller.native(), [&](State& s) {
        held.emplace(s.stream());
        T::host_task(s.stream(), log.add("through state"));
      });
      T::host_task(caller.native(), log.add("caller after"));
      EXPECT_FALSE(log.reaches(1, typed::kQuiet)) << "the caller's later work did not wait for the state's work";
      held->open();
      caller.synchronize();
      EXPECT_EQ(log.entries(), (std::vector<std::string>{"through state", "caller after"}));
      T::synchronize(state_stream);
    }
  }

  // Declared first, destroyed last: the states report into it.
  metrics::Registry registry;
  mutable metrics::Snapshot snap;
  std::unique_ptr<States> states;
};

TYPED_TEST_SUITE_P(CudnnStateTyped);

TYPED_TEST_P(CudnnStateTyped, WorkThroughAStateIsOrderedBetweenTheCallersEarlierAndLaterWork) {
  using F = typename TestFixture::State;
  this->expect_ordered_between_callers_work([](const typename TestFixture::Wrapper& w,
                                               typename TestFixture::stream_type caller,
                                               auto f) { w.with_cudnn_state(caller, 1, [&](F& s) { f(s); }); });
}

TYPED_TEST_P(CudnnStateTyped, TheFormWithoutAStreamOrdersAgainstTheWrappersStream) {
  using F = typename TestFixture::State;
  this->expect_ordered_between_callers_work([](const typename TestFixture::Wrapper& w,
                                               typename TestFixture::stream_type,
                                               auto f) { w.with_cudnn_state(1, [&](F& s) { f(s); }); });
}

TYPED_TEST_P(CudnnStateTyped, SixteenThreadsOnOneStateNeverOverlapInsideTheClosure) {
  using T = TypeParam;
  constexpr int kThreads = 16, kRounds = 200;
  this->make();
  std::atomic<int> inside{0}, most_inside{0};
  auto ran_on_stream = std::make_shared<std::atomic<int>>(0);  // shared with the tasks, in case one runs late
  std::atomic<typename TestFixture::stream_type> state_stream{};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      typename TestFixture::Stream caller;
      auto w = this->wrapper(caller);
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        w.with_cudnn_state(0, [&](typename TestFixture::State& s) {
          int now = ++inside;
          int seen = most_inside.load();
          while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {}
          std::this_thread::yield();  // widen the window another thread would have to hit
          state_stream = s.stream();
          T::host_task(s.stream(), [ran_on_stream] { ++*ran_on_stream; });
          --inside;
        });
      }
      caller.synchronize();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(most_inside.load(), 1) << "two threads were inside one state's closure at once";
  EXPECT_EQ(ran_on_stream->load(), kThreads * kRounds);
  T::synchronize(state_stream.load());
  EXPECT_EQ(this->value("glassbox_cudnn_state_executions_total", 0, 0), kThreads * kRounds);
  EXPECT_EQ(this->series("glassbox_cudnn_state_wait_seconds", 0, 0).histogram.count,
            static_cast<std::uint64_t>(kThreads * kRounds));
  if (auto n = this->live_state_streams()) {
    EXPECT_EQ(*n, 1u) << "one state, one stream, however many callers";
  }
}

// Each closure waits inside its state for the other: only possible if the
// two states are held at the same time.
TYPED_TEST_P(CudnnStateTyped, DifferentStatesRunConcurrently) {
  this->make();
  typed::Rendezvous both(2);
  bool met[2] = {false, false};
  std::vector<std::thread> threads;
  for (int index : {0, 1}) {
    threads.emplace_back([&, index] {
      typename TestFixture::Stream caller;
      this->wrapper(caller).with_cudnn_state(
          index, [&](typename TestFixture::State&) { met[index] = both.arrive_and_wait(std::chrono::seconds(10)); });
      caller.synchronize();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(met[0] && met[1]) << "states 0 and 1 were not held at the same time";
}

// The same probe on one state: the first closure must give up waiting,
// because the second cannot enter until it leaves.
TYPED_TEST_P(CudnnStateTyped, OneStateIsNeverHeldByTwoCallersAtOnce) {
  this->make();
  typed::Rendezvous both(2);
  std::atomic<int> met{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      typename TestFixture::Stream caller;
      this->wrapper(caller).with_cudnn_state(3, [&](typename TestFixture::State&) {
        met += both.arrive_and_wait(std::chrono::milliseconds(200)) ? 1 : 0;
      });
      caller.synchronize();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(met.load(), 1) << "both callers were inside state 3 at once";
}

TYPED_TEST_P(CudnnStateTyped, TimeWaitingForABusyStateIsObserved) {
  typed::SignallingClock::reset();
  this->make({.wait_clock = &typed::SignallingClock::now});
  typename TestFixture::Stream first_caller, second_caller;
  std::promise<void> holding;
  std::thread holder([&] {
    this->wrapper(first_caller).with_cudnn_state(0, [&](typename TestFixture::State&) {
      holding.set_value();
      // Bounded: without the clock's signal the checks below fail instead of hanging.
      EXPECT_EQ(typed::SignallingClock::waiting.get_future().wait_for(std::chrono::seconds(10)),
                std::future_status::ready)
          << "the second caller never waited";
    });
  });
  holding.get_future().wait();
  this->wrapper(second_caller).with_cudnn_state(0, [](typename TestFixture::State&) {});
  holder.join();
  first_caller.synchronize();
  second_caller.synchronize();
  const auto& h = this->series("glassbox_cudnn_state_wait_seconds", 0, 0).histogram;
  EXPECT_EQ(typed::SignallingClock::readings.load(), 2);
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.buckets.front(), 1u) << "the uncontended lock counts as no wait";
  EXPECT_DOUBLE_EQ(h.sum, 0.25) << "the second caller's wait, as its clock read it";
}

TYPED_TEST_P(CudnnStateTyped, EachStateHasItsOwnStreamAndHandleKeptAcrossExecutions) {
  using CudnnState = typename TestFixture::State;
  this->make();
  typename TestFixture::Stream caller;
  auto w = this->wrapper(caller);
  std::vector<CudnnState*> seen;
  for (int round = 0; round < 2; ++round) {
    for (int index = 0; index < 4; ++index) {
      w.with_cudnn_state(index, [&](CudnnState& s) {
        EXPECT_EQ(s.index(), index);
        EXPECT_EQ(s.device(), 0);
        if (round == 0)
          seen.push_back(&s);
        else
          EXPECT_EQ(seen[static_cast<std::size_t>(index)], &s) << "state " << index << " was created twice";
      });
    }
  }
  caller.synchronize();
  std::set<typename TestFixture::stream_type> streams;
  std::set<typename TestFixture::Backend::handle_type> handles;
  for (CudnnState* s : seen) {
    streams.insert(s->stream());
    handles.insert(s->handle());
  }
  EXPECT_EQ(streams.size(), 4u);
  EXPECT_EQ(handles.size(), 4u);
  EXPECT_EQ(streams.count(caller.native()), 0u);
}

TYPED_TEST_P(CudnnStateTyped, WorkspaceGrowsOnlyAndIsReusedAcrossExecutions) {
  using CudnnState = typename TestFixture::State;
  this->make();
  typename TestFixture::Stream caller;
  auto w = this->wrapper(caller);
  void* first = nullptr;
  w.with_cudnn_state(0, [&](CudnnState& s) {
    first = s.workspace().get(1000);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(s.workspace().size(), 1000u);
    EXPECT_EQ(s.workspace().get(10), first) << "a smaller request must reuse the block";
    EXPECT_EQ(s.workspace().size(), 1000u) << "the workspace shrank";
  });
  w.with_cudnn_state(0, [&](CudnnState& s) {
    EXPECT_EQ(s.workspace().get(1000), first) << "the next execute must find the same block";
    void* bigger = s.workspace().get(4000);
    EXPECT_NE(bigger, nullptr);
    EXPECT_EQ(s.workspace().size(), 4000u);
    EXPECT_EQ(s.workspace().get(0), bigger);
  });
  caller.synchronize();
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_resizes_total", 0, 0), 2);
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_bytes", 0, 0), 4000);
}

TYPED_TEST_P(CudnnStateTyped, ResetReleasesTheWorkspace) {
  this->make();
  typename TestFixture::Stream caller;
  this->wrapper(caller).with_cudnn_state(0, [&](typename TestFixture::State& s) {
    s.workspace().get(300);
    s.workspace().reset();
    EXPECT_EQ(s.workspace().size(), 0u);
    EXPECT_EQ(this->value("glassbox_cudnn_workspace_bytes", 0, 0), 0);
    s.workspace().get(100);  // allocates again: nothing is kept after a reset
  });
  caller.synchronize();
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_resizes_total", 0, 0), 2);
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_bytes", 0, 0), 100);
}

TYPED_TEST_P(CudnnStateTyped, AnIndexOutOfRangeIsAClearError) {
  this->make();
  typename TestFixture::Stream caller;
  auto w = this->wrapper(caller);
  const int per_device = this->states->states_per_device();
  for (int bad : {per_device, -1}) {
    try {
      w.with_cudnn_state(bad, [](typename TestFixture::State&) { FAIL() << "ran the closure for a bad index"; });
      FAIL() << "no error for index " << bad;
    } catch (const glassbox::ConfigError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("state index " + std::to_string(bad) + " is out of range"), std::string::npos) << what;
      EXPECT_NE(what.find("accepted indices are 0.." + std::to_string(per_device - 1)), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(per_device) + " states per device"), std::string::npos) << what;
    }
  }
  if (auto n = this->live_state_streams()) {
    EXPECT_EQ(*n, 0u) << "a state was made for a bad index";
  }
}

TYPED_TEST_P(CudnnStateTyped, TheNumberOfStatesPerDeviceIsConfigurable) {
  using CudnnState = typename TestFixture::State;
  this->make({.states_per_device = 2});
  typename TestFixture::Stream caller;
  auto w = this->wrapper(caller);
  EXPECT_NO_THROW(w.with_cudnn_state(1, [](CudnnState&) {}));
  EXPECT_THROW(w.with_cudnn_state(2, [](CudnnState&) {}), glassbox::ConfigError);
  caller.synchronize();
  metrics::Registry other;
  EXPECT_THROW(typename TestFixture::States(TypeParam::make_backend(other), {.states_per_device = 0}, other),
               glassbox::ConfigError);
  EXPECT_THROW(typename TestFixture::States(TypeParam::make_backend(other), {.wait_clock = nullptr}, other),
               glassbox::ConfigError);
}

TYPED_TEST_P(CudnnStateTyped, ADeviceOutOfRangeIsAClearError) {
  this->make();
  typename TestFixture::Stream caller;
  const int devices = this->states->device_count();
  try {
    this->wrapper(caller, devices).with_cudnn_state(0, [](typename TestFixture::State&) {});
    FAIL() << "no error for device " << devices;
  } catch (const glassbox::ConfigError& e) {
    const std::string expected = "device " + std::to_string(devices) + " is out of range; accepted devices are 0.." +
                                 std::to_string(devices - 1);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TYPED_TEST_P(CudnnStateTyped, AThrowingClosureStillOrdersTheCallerAndFreesTheState) {
  using T = TypeParam;
  using CudnnState = typename TestFixture::State;
  this->make();
  typename TestFixture::Stream caller;
  auto w = this->wrapper(caller);
  typed::StreamLog log;
  typename TestFixture::stream_type state_stream{};
  {
    std::optional<typename TestFixture::Gate> held;
    EXPECT_THROW(w.with_cudnn_state(0,
                                    [&](CudnnState& s) {
                                      state_stream = s.stream();
                                      held.emplace(s.stream());
                                      T::host_task(s.stream(), log.add("queued before the throw"));
                                      throw std::runtime_error("cudnn call failed");
                                    }),
                 std::runtime_error);
    T::host_task(caller.native(), log.add("caller after"));
    EXPECT_FALSE(log.reaches(1, typed::kQuiet)) << "the caller's later work overtook the failed closure's work";
    ASSERT_TRUE(held.has_value());
    held->open();
    caller.synchronize();
  }
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"queued before the throw", "caller after"}));
  TypeParam::synchronize(state_stream);
  bool ran = false;
  w.with_cudnn_state(0, [&](CudnnState&) { ran = true; });  // would deadlock if the lock were still held
  EXPECT_TRUE(ran);
  caller.synchronize();
}

// On the last device (the sim has two), so the device label is checked too.
TYPED_TEST_P(CudnnStateTyped, MetricsAreExactAfterNExecutions) {
  this->make();
  const int last = this->states->device_count() - 1;
  typename TestFixture::Stream caller(last);
  auto w = this->wrapper(caller, last);
  const std::size_t requests[] = {64, 32, 128, 128, 16, 256, 8, 256, 100, 200};
  for (std::size_t bytes : requests) {
    w.with_cudnn_state(2, [&](typename TestFixture::State& s) { s.workspace().get(bytes); });
  }
  caller.synchronize();

  EXPECT_EQ(this->value("glassbox_cudnn_state_executions_total", last, 2), 10);
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_bytes", last, 2), 256);
  EXPECT_EQ(this->value("glassbox_cudnn_workspace_resizes_total", last, 2), 3);  // 64, 128, 256
  const auto& wait = this->series("glassbox_cudnn_state_wait_seconds", last, 2).histogram;
  EXPECT_EQ(wait.count, 10u);
  EXPECT_EQ(wait.sum, 0.0) << "one thread never waits";
  // Every slot has its series from the start, so idle states show as zeros.
  EXPECT_EQ(this->value("glassbox_cudnn_state_executions_total", 0, 0), 0);
  EXPECT_EQ(this->value("glassbox_cudnn_state_executions_total", last, 3), 0);
}

TYPED_TEST_P(CudnnStateTyped, EveryExecuteIsASpanWithDeviceStateAndWorkspace) {
  struct Recording {
    std::shared_ptr<trace::InMemorySpanProcessor> processor = std::make_shared<trace::InMemorySpanProcessor>();
    Recording() {
      trace::set_sampler(trace::always_on());
      trace::set_span_processor(processor);
    }
    ~Recording() {
      trace::set_span_processor(nullptr);
      trace::set_sampler(nullptr);
    }
  } recording;
  auto attribute = [](const trace::SpanData& span, const std::string& key) -> const trace::AttributeValue* {
    for (const auto& a : span.attributes) {
      if (a.key == key) return &a.value;
    }
    return nullptr;
  };
  this->make();
  const int last = this->states->device_count() - 1;
  typename TestFixture::Stream caller(last);
  auto w = this->wrapper(caller, last);
  w.with_cudnn_state(3, [](typename TestFixture::State& s) { s.workspace().get(4096); });
  EXPECT_THROW(
      w.with_cudnn_state(3, [](typename TestFixture::State&) { throw std::runtime_error("no algorithm fits"); }),
      std::runtime_error);
  caller.synchronize();

  std::vector<trace::SpanData> spans;
  for (auto& span : recording.processor->take()) {
    if (span.name == "glassbox.cudnn.execute") spans.push_back(std::move(span));  // not the backend's own
  }
  ASSERT_EQ(spans.size(), 2u);
  for (const auto& span : spans) {
    ASSERT_NE(attribute(span, "glassbox.device"), nullptr);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.device")), last);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.cudnn.state")), 3);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "glassbox.cudnn.workspace_bytes")), 4096);
  }
  EXPECT_EQ(spans[0].status, trace::StatusCode::ok);
  EXPECT_EQ(spans[1].status, trace::StatusCode::error);
  EXPECT_EQ(spans[1].status_message, "no algorithm fits");
}

REGISTER_TYPED_TEST_SUITE_P(CudnnStateTyped, WorkThroughAStateIsOrderedBetweenTheCallersEarlierAndLaterWork,
                            TheFormWithoutAStreamOrdersAgainstTheWrappersStream,
                            SixteenThreadsOnOneStateNeverOverlapInsideTheClosure, DifferentStatesRunConcurrently,
                            OneStateIsNeverHeldByTwoCallersAtOnce, TimeWaitingForABusyStateIsObserved,
                            EachStateHasItsOwnStreamAndHandleKeptAcrossExecutions,
                            WorkspaceGrowsOnlyAndIsReusedAcrossExecutions, ResetReleasesTheWorkspace,
                            AnIndexOutOfRangeIsAClearError, TheNumberOfStatesPerDeviceIsConfigurable,
                            ADeviceOutOfRangeIsAClearError, AThrowingClosureStillOrdersTheCallerAndFreesTheState,
                            MetricsAreExactAfterNExecutions, EveryExecuteIsASpanWithDeviceStateAndWorkspace);

}  // namespace glassbox::testing
