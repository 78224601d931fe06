// Device/thread handle pool on the fake backend: reuse, churn bounds,
// exclusivity, thread-exit return, pool death, failures and instrumentation.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"

namespace gs = glassbox::sim;
namespace gh = glassbox::handle_pool;
namespace gm = glassbox::metrics;
using Pool = gh::DeviceThreadHandlePool<gs::FakeHandleFactory>;

namespace {

struct Fixture {
  gm::Registry registry;
  std::shared_ptr<gs::FakeHandleState> state = [] {
    auto s = std::make_shared<gs::FakeHandleState>();
    s->device_count = 2;
    return s;
  }();
  std::shared_ptr<Pool> pool = Pool::create(gs::FakeHandleFactory("fake", state), registry);

  double metric(const std::string& name, int device) const {
    auto snap = registry.snapshot();
    auto* s = gm::find_series(snap, name, {{"library", "fake"}, {"device", std::to_string(device)}});
    return s ? s->value : -1;
  }
};

// Records which live thread holds each handle; fails on a second holder.
class Holders {
 public:
  void take(std::uint64_t h, int device) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = held_.emplace(std::pair{h, device}, std::this_thread::get_id());
    EXPECT_TRUE(fresh) << "handle " << h << " held by two live threads";
  }
  void drop(std::uint64_t h, int device) {
    std::lock_guard lock(mu_);
    held_.erase({h, device});
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::uint64_t, int>, std::thread::id> held_;
};

}  // namespace

TEST(HandlePool, ASecondReserveOnOneThreadReusesTheHandle) {
  Fixture f;
  auto a = f.pool->reserve(0);
  EXPECT_EQ(f.pool->reserve(0), a);
  EXPECT_NE(f.pool->reserve(1), a);
  EXPECT_EQ(f.pool->counts(0).created, 1u);
  EXPECT_EQ(f.pool->counts(0).in_use, 1u);
}

TEST(HandlePool, AnExitedThreadsHandleGoesToTheNextThread) {
  Fixture f;
  std::uint64_t first = 0, second = 0;
  std::thread([&] { first = f.pool->reserve(0); }).join();
  EXPECT_EQ(f.pool->counts(0).in_use, 0u);
  EXPECT_EQ(f.pool->counts(0).available, 1u);
  std::thread([&] { second = f.pool->reserve(0); }).join();
  EXPECT_EQ(first, second);
  EXPECT_EQ(f.pool->counts(0).created, 1u);
}

// 1000 rounds of fresh threads, 1..16 alive at once per round, all holding
// their handles at the same time (a barrier): the pool must create exactly
// as many handles as the most threads ever alive together, never lend one
// handle to two live threads, and get every handle back.
TEST(HandlePool, ThreadChurnCreatesNoMoreThanTheHighWaterMark) {
  Fixture f;
  Holders holders;
  std::mt19937 rng(42);
  std::size_t max_concurrency = 0;
  for (int round = 0; round < 1000; ++round) {
    int n = std::uniform_int_distribution<int>(1, 16)(rng);
    max_concurrency = std::max<std::size_t>(max_concurrency, static_cast<std::size_t>(n));
    std::barrier all_hold(n);
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([&, t] {
        int device = t % 2;
        auto h = f.pool->reserve(device);
        holders.take(h, device);
        EXPECT_EQ(f.pool->reserve(device), h);
        all_hold.arrive_and_wait();
        holders.drop(h, device);  // before exit returns it to the pool
        all_hold.arrive_and_wait();
      });
    }
    for (auto& t : threads) t.join();
  }
  std::size_t created = f.pool->counts(0).created + f.pool->counts(1).created;
  std::size_t hwm = f.pool->counts(0).high_water_mark + f.pool->counts(1).high_water_mark;
  EXPECT_EQ(created, max_concurrency);
  EXPECT_EQ(hwm, max_concurrency);
  for (int d : {0, 1}) {
    EXPECT_EQ(f.pool->counts(d).in_use, 0u);
    EXPECT_EQ(f.pool->counts(d).created, f.pool->counts(d).high_water_mark);
    EXPECT_EQ(f.metric("glassbox_handles_in_use", d), 0);
    EXPECT_EQ(f.metric("glassbox_handles_created_total", d), static_cast<double>(f.pool->counts(d).created));
    EXPECT_EQ(f.metric("glassbox_handles_high_water_mark", d), static_cast<double>(f.pool->counts(d).high_water_mark));
    EXPECT_EQ(f.metric("glassbox_handles_available", d), static_cast<double>(f.pool->counts(d).created));
  }
}

TEST(HandlePool, DestroyingThePoolWhileThreadsHoldHandlesDoesNotCrash) {
  Fixture f;
  constexpr int kThreads = 8;
  std::latch reserved(kThreads), pool_gone(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      f.pool->reserve(0);
      reserved.count_down();
      pool_gone.wait();  // exits after the pool is destroyed
    });
  }
  reserved.wait();
  f.pool.reset();
  pool_gone.count_down();
  for (auto& t : threads) t.join();
  std::lock_guard lock(f.state->mu);
  EXPECT_TRUE(f.state->live.empty());
  EXPECT_EQ(f.state->created, static_cast<std::uint64_t>(kThreads));
  EXPECT_EQ(f.state->destroyed, f.state->created);
  EXPECT_EQ(f.metric("glassbox_handles_in_use", 0), 0);
}

TEST(HandlePool, AThreadExitingAfterAtexitDoesNotCrash) {
  // The child process exits with a thread still holding a handle from a
  // static pool; the thread exits after the pool's static destructor ran.
  EXPECT_EXIT(
      {
        static std::atomic<bool> release{false};
        static std::thread* holder = nullptr;
        std::atexit([] {  // registered first, so it runs after the pool is destroyed
          release = true;
          holder->join();
        });
        static auto pool = Pool::create(gs::FakeHandleFactory("fake"), gm::Registry::global());
        std::latch reserved(1);
        holder = new std::thread([&] {
          pool->reserve(0);
          reserved.count_down();
          while (!release) std::this_thread::yield();
        });
        reserved.wait();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(HandlePool, ADeviceOutOfRangeNamesTheDeviceAndTheRange) {
  Fixture f;
  for (int bad : {-1, 2, 100}) {
    try {
      f.pool->reserve(bad);
      FAIL() << bad;
    } catch (const glassbox::ConfigError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("device " + std::to_string(bad) + " is out of range"), std::string::npos) << m;
      EXPECT_NE(m.find("0..1"), std::string::npos) << m;
    }
  }
}

TEST(HandlePool, AFailedCreationLeavesThePoolConsistent) {
  Fixture f;
  f.state->failures_to_inject = 1;
  EXPECT_THROW(f.pool->reserve(0), glassbox::BackendError);
  EXPECT_EQ(f.pool->counts(0).in_use, 0u);
  EXPECT_EQ(f.pool->counts(0).created, 0u);
  EXPECT_EQ(f.metric("glassbox_handles_in_use", 0), 0);
  auto h = f.pool->reserve(0);  // the next try succeeds
  EXPECT_EQ(f.pool->reserve(0), h);
  EXPECT_EQ(f.pool->counts(0).created, 1u);
  EXPECT_EQ(f.pool->counts(0).high_water_mark, 1u);
}

TEST(HandlePool, PoolsAreIndependentOnOneThread) {
  Fixture a, b;
  auto ha = a.pool->reserve(0);
  auto hb = b.pool->reserve(0);
  EXPECT_EQ(a.pool->reserve(0), ha);
  EXPECT_EQ(b.pool->reserve(0), hb);
  EXPECT_EQ(a.pool->counts(0).created, 1u);
  EXPECT_EQ(b.pool->counts(0).created, 1u);
}

TEST(HandlePool, CreationOpensASpanWithLibraryAndDevice) {
  auto processor = std::make_shared<glassbox::trace::InMemorySpanProcessor>();
  glassbox::trace::set_sampler(glassbox::trace::always_on());
  glassbox::trace::set_span_processor(processor);
  Fixture f;
  f.pool->reserve(1);
  f.pool->reserve(1);  // cached: no second span
  f.state->failures_to_inject = 1;
  std::thread([&] { EXPECT_THROW(f.pool->reserve(1), glassbox::BackendError); }).join();
  glassbox::trace::set_span_processor(nullptr);
  glassbox::trace::set_sampler(nullptr);

  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 2u);
  for (const auto& s : spans) {
    EXPECT_EQ(s.name, "glassbox.handle_pool.create");
    ASSERT_EQ(s.attributes.size(), 2u);
    EXPECT_EQ(std::get<std::string>(s.attributes[0].value), "fake");
    EXPECT_EQ(std::get<std::int64_t>(s.attributes[1].value), 1);
  }
  EXPECT_EQ(spans[0].status, glassbox::trace::StatusCode::ok);
  EXPECT_EQ(spans[1].status, glassbox::trace::StatusCode::error);
  EXPECT_NE(spans[1].status_message.find("injected failure"), std::string::npos);
}

TEST(HandlePool, CreationTimeIsObserved) {
  Fixture f;
  f.state->create_latency = std::chrono::milliseconds(2);
  f.pool->reserve(0);
  auto snap = f.registry.snapshot();
  auto* s = gm::find_series(snap, "glassbox_handle_create_seconds", {{"library", "fake"}, {"device", "0"}});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->histogram.count, 1u);
  EXPECT_GE(s->histogram.sum, 0.002);
}
