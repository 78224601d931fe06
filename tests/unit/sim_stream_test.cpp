// The sim backend's streams: order, events, cross-stream waits, capture.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/sim/sim_stream.hpp"

using glassbox::sim::SimEvent;
using glassbox::sim::SimStream;

TEST(SimStream, RunsItemsInOrderOnlyWhenStepped) {
  SimStream s;
  std::vector<int> ran;
  s.enqueue([&] { ran.push_back(1); });
  s.enqueue([&] { ran.push_back(2); });
  EXPECT_TRUE(ran.empty());
  EXPECT_TRUE(s.step());
  EXPECT_EQ(ran, std::vector<int>{1});
  EXPECT_EQ(s.run_until_blocked(), 1u);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_FALSE(s.step());
}

TEST(SimStream, AnEventCompletesWhenTheStreamPassesIt) {
  SimStream s;
  s.enqueue([] {});
  SimEvent e = s.record();
  s.enqueue([] {});
  EXPECT_FALSE(e.query());
  s.step();
  EXPECT_TRUE(e.query());
  EXPECT_TRUE(SimEvent().query());
}

TEST(SimStream, AWaitBlocksUntilTheOtherStreamsEventCompletes) {
  SimStream producer, consumer;
  std::vector<std::string> log;
  producer.enqueue([&] { log.push_back("produce"); });
  consumer.wait(producer.record());
  consumer.enqueue([&] { log.push_back("consume"); });
  EXPECT_EQ(consumer.run_until_blocked(), 0u);  // blocked on the wait
  EXPECT_THROW(consumer.synchronize(), glassbox::Error);
  producer.step();
  EXPECT_EQ(consumer.run_until_blocked(), 2u);
  EXPECT_EQ(log, (std::vector<std::string>{"produce", "consume"}));
}

TEST(SimStream, WorkerModeRunsOnItsOwn) {
  SimStream a(SimStream::Mode::worker), b(SimStream::Mode::worker);
  std::atomic<int> order{0};
  int seen_by_b = -1;
  a.enqueue([&] { order = 1; });
  b.wait(a.record());
  b.enqueue([&] { seen_by_b = order.load(); });
  b.synchronize();
  EXPECT_EQ(seen_by_b, 1);
  EXPECT_EQ(a.completed(), a.submitted());
}

TEST(SimStream, CaptureFlag) {
  SimStream s;
  EXPECT_FALSE(s.capturing());
  s.begin_capture();
  EXPECT_TRUE(s.capturing());
  s.end_capture();
  EXPECT_FALSE(s.capturing());
}

TEST(SimStream, TwoThreadsSteppingOneStreamRunEachItemOnce) {
  SimStream s;
  std::atomic<int> ran{0}, inside{0};
  for (int i = 0; i < 2000; ++i) {
    s.enqueue([&] {
      EXPECT_EQ(inside.fetch_add(1), 0) << "two items of one stream ran at once";
      ++ran;
      inside.fetch_sub(1);
    });
  }
  std::thread a([&] {
    while (s.completed() < 2000) s.step();
  });
  std::thread b([&] {
    while (s.completed() < 2000) s.step();
  });
  a.join();
  b.join();
  EXPECT_EQ(ran.load(), 2000);
}
