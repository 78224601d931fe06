// Metric primitives: exact totals under contention, label resolution,
// thread-exit folding, snapshots and name validation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/context.hpp"

namespace gm = glassbox::metrics;

namespace {

void run_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
}

}  // namespace

TEST(Metrics, CounterIsExactAfter16ThreadsAddAMillionEach) {
  gm::Registry r;
  gm::Counter c = r.counter("test_updates_total", "updates").with();
  constexpr int kThreads = 16, kPerThread = 1'000'000;
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPerThread; ++i) c.inc();
  });
  EXPECT_EQ(c.value(), std::uint64_t{kThreads} * kPerThread);
}

TEST(Metrics, HistogramIsExactAfter16ThreadsObserveAMillionEach) {
  gm::Registry r;
  gm::Histogram h = r.histogram("test_latency_seconds", "latency", {}, {1, 2, 4}).with();
  constexpr int kThreads = 16, kPerThread = 1'000'000;
  // Values 0.5, 1.5, 3, 8 land one in each bucket (<=1, <=2, <=4, +Inf).
  const double values[] = {0.5, 1.5, 3.0, 8.0};
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPerThread; ++i) h.observe(values[i % 4]);
  });
  gm::HistogramValue v = h.value();
  const std::uint64_t total = std::uint64_t{kThreads} * kPerThread;
  EXPECT_EQ(v.count, total);
  ASSERT_EQ(v.buckets.size(), 4u);
  for (auto b : v.buckets) EXPECT_EQ(b, total / 4);
  EXPECT_DOUBLE_EQ(v.sum, (0.5 + 1.5 + 3.0 + 8.0) * static_cast<double>(total / 4));
}

// A scrape sums a histogram's buckets a thread at a time (sum_u64_range):
// 601 buckets cross from one of a thread's chunks (256 cells) into the next
// twice or more, and a live thread that touched only the first bucket and
// the sum (the cell after the last bucket) has no chunk at all for the
// whole chunk between them. Two series, since one could start exactly at a
// chunk's start (602 cells apart, at most one does).
TEST(Metrics, HistogramsOfMoreBucketsThanAChunkSumEveryThreadsShare) {
  gm::Registry r;
  std::vector<double> bounds;
  for (int i = 1; i <= 600; ++i) bounds.push_back(i);
  auto& family = r.histogram("test_wide_seconds", "wide", {"n"}, bounds);
  const gm::Histogram series[] = {family.with({"0"}), family.with({"1"})};
  for (const gm::Histogram& h : series) {
    auto observe_each_bucket = [&](int times) {
      for (int i = 0; i <= 600; ++i)
        for (int k = 0; k < times; ++k) h.observe(i + 1);  // bucket i's bound is i + 1; 601 lands in +Inf
    };
    run_threads(1, [&](int) { observe_each_bucket(7); });  // exited: its share is folded
    for (int i = 0; i <= 600; ++i)
      for (int k = 0; k <= i; ++k) h.observe(i + 1);  // this thread: i + 1 in bucket i
    std::mutex mu;
    std::condition_variable cv;
    bool observed = false, read = false;
    std::thread live([&] {
      for (int k = 0; k < 1000; ++k) h.observe(0.5);
      std::unique_lock lock(mu);
      observed = true;
      cv.notify_all();
      cv.wait(lock, [&] { return read; });
    });
    gm::HistogramValue v;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return observed; });
      v = h.value();
      read = true;
      cv.notify_all();
    }
    live.join();
    ASSERT_EQ(v.buckets.size(), 601u);
    for (std::size_t i = 0; i < v.buckets.size(); ++i)
      EXPECT_EQ(v.buckets[i], 7 + (i + 1) + (i == 0 ? 1000 : 0)) << "bucket " << i;
  }
}

TEST(Metrics, BoundaryValueLandsInItsOwnBucket) {
  gm::Registry r;
  gm::Histogram h = r.histogram("test_le_seconds", "le semantics", {}, {1, 2}).with();
  h.observe(1.0);
  h.observe(2.0);
  h.observe(2.0000001);
  EXPECT_EQ(h.value().buckets, (std::vector<std::uint64_t>{1, 1, 1}));
}

TEST(Metrics, SameLabelsResolveToTheSameSeries) {
  gm::Registry r;
  auto& fam = r.counter("test_requests_total", "requests", {"bucket"});
  fam.with({"3"}).inc(2);
  fam.with({"3"}).inc(3);
  fam.with({"4"}).inc(7);
  auto snap = r.snapshot();
  EXPECT_EQ(gm::find_series(snap, "test_requests_total", {{"bucket", "3"}})->value, 5);
  EXPECT_EQ(gm::find_series(snap, "test_requests_total", {{"bucket", "4"}})->value, 7);
}

TEST(Metrics, RedeclaringTheSameFamilyReturnsIt) {
  gm::Registry r;
  auto& a = r.gauge("test_depth", "depth", {"device"});
  auto& b = r.gauge("test_depth", "depth", {"device"});
  EXPECT_EQ(&a, &b);
}

TEST(Metrics, UpdatesFromExitedThreadsAreKept) {
  gm::Registry r;
  gm::Counter c = r.counter("test_exited_total", "from exited threads").with();
  for (int round = 0; round < 50; ++round) {
    run_threads(4, [&](int) { c.inc(10); });
  }
  EXPECT_EQ(c.value(), 50u * 4u * 10u);
}

TEST(Metrics, SnapshotsDuringChurnNeverGoBackwards) {
  gm::Registry r;
  gm::Counter c = r.counter("test_churn_total", "churn").with();
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    std::uint64_t last = 0;
    while (!stop.load()) {
      auto snap = r.snapshot();
      auto now = static_cast<std::uint64_t>(gm::find_series(snap, "test_churn_total")->value);
      EXPECT_GE(now, last);
      last = now;
    }
  });
  for (int round = 0; round < 200; ++round) {
    run_threads(4, [&](int) {
      for (int i = 0; i < 100; ++i) c.inc();
    });
  }
  stop = true;
  scraper.join();
  EXPECT_EQ(c.value(), 200u * 4u * 100u);
}

TEST(Metrics, GaugeSetAddAndHighWaterMark) {
  gm::Registry r;
  gm::Gauge g = r.gauge("test_in_use", "in use").with();
  g.set(3);
  g.add(2);
  g.sub(1);
  EXPECT_EQ(g.value(), 4);
  g.set_max(2);
  EXPECT_EQ(g.value(), 4);
  g.set_max(9);
  EXPECT_EQ(g.value(), 9);
}

TEST(Metrics, GaugeAddsFromManyThreadsAreExact) {
  gm::Registry r;
  gm::Gauge g = r.gauge("test_gauge_threads", "g").with();
  run_threads(8, [&](int) {
    for (int i = 0; i < 100'000; ++i) g.add(1);
  });
  EXPECT_EQ(g.value(), 800'000);
}

// A thread that stays alive between steps, so its gauge cells stay live
// (not folded at exit) while other threads set and read.
class LiveThread {
 public:
  LiveThread() : thread_([this] { serve(); }) {}
  ~LiveThread() {
    run({});
    thread_.join();
  }
  /// Runs `step` on the thread and waits for it; an empty step ends the thread.
  void run(std::function<void()> step) {
    std::unique_lock lock(mu_);
    step_ = std::move(step);
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  void serve() {
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return pending_; });
      std::function<void()> step = std::move(step_);
      if (step) step();
      pending_ = false;
      cv_.notify_all();
      if (!step) return;
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> step_;
  bool pending_ = false;
  std::thread thread_;
};

TEST(Metrics, GaugeSetReplacesWhatOtherThreadsAdded) {
  gm::Registry r;
  gm::Gauge g = r.gauge("test_gauge_set_shards", "g").with();
  LiveThread a, b;
  a.run([&] { g.add(5); });
  b.run([&] { g.add(7); });
  run_threads(1, [&](int) { g.add(11); });  // exited: its delta is folded away
  EXPECT_EQ(g.value(), 23);
  g.set(2);
  EXPECT_EQ(g.value(), 2);
  a.run([&] { g.add(1); });  // its old delta belongs to the epoch before set()
  run_threads(1, [&](int) { g.sub(4); });
  EXPECT_EQ(g.value(), -1);
  b.run([&] { g.set(10); });
  a.run([&] { g.add(3); });
  EXPECT_EQ(g.value(), 13);
}

TEST(Metrics, GaugeHighWaterMarkCountsOtherThreadsAdds) {
  gm::Registry r;
  gm::Gauge g = r.gauge("test_gauge_max_shards", "g").with();
  LiveThread a;
  a.run([&] { g.add(10); });
  g.set_max(5);
  EXPECT_EQ(g.value(), 10);
  g.set_max(12);
  EXPECT_EQ(g.value(), 12);
  a.run([&] { g.add(1); });
  EXPECT_EQ(g.value(), 13);
}

// Adders, setters and readers at once (TSan runs it too). Sets write 0 or
// 1e6; every add is +1, so any value read lies in [0, 1e6 + all adds], and
// once all stop, the last set plus the adds after it is exact.
TEST(Metrics, GaugeConcurrentSetAddAndReadStayConsistent) {
  gm::Registry r;
  gm::Gauge g = r.gauge("test_gauge_race", "g").with();
  constexpr int kAdders = 4, kAdds = 20'000;
  std::atomic<bool> stop{false};
  std::atomic<int> out_of_range{0};
  std::thread setter([&] {
    for (int i = 0; !stop.load(); ++i) g.set(i % 2 == 0 ? 0.0 : 1e6);
  });
  std::thread reader([&] {
    while (!stop.load()) {
      double v = r.snapshot().front().series.front().value;
      if (v < 0 || v > 1e6 + kAdders * kAdds) out_of_range.fetch_add(1);
    }
  });
  std::vector<std::unique_ptr<LiveThread>> adders;
  for (int i = 0; i < kAdders; ++i) adders.push_back(std::make_unique<LiveThread>());
  std::vector<std::thread> drivers;
  for (auto& a : adders) {
    drivers.emplace_back([&] {
      a->run([&] {
        for (int i = 0; i < kAdds; ++i) g.add(1);
      });
    });
  }
  for (auto& d : drivers) d.join();
  stop = true;
  setter.join();
  reader.join();
  EXPECT_EQ(out_of_range.load(), 0);
  g.set(7);
  for (auto& a : adders) a->run([&] { g.add(1); });
  EXPECT_EQ(g.value(), 7 + kAdders);
}

TEST(Metrics, BadNamesAreRejectedWithTheName) {
  gm::Registry r;
  try {
    r.counter("bad-name_total", "x");
    FAIL() << "expected ConfigError";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'bad-name_total'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.counter("no_suffix", "x"), glassbox::ConfigError);
  EXPECT_THROW(r.gauge("ok", "x", {"__reserved"}), glassbox::ConfigError);
  EXPECT_THROW(r.histogram("h_seconds", "x", {"le"}, {1}), glassbox::ConfigError);
  EXPECT_THROW(r.histogram("h2_seconds", "x", {}, {2, 1}), glassbox::ConfigError);
  EXPECT_THROW(r.histogram("h3_seconds", "x", {}, {}), glassbox::ConfigError);
}

TEST(Metrics, ClashingRedeclarationIsAnError) {
  gm::Registry r;
  r.counter("test_clash_total", "x", {"a"});
  EXPECT_THROW(r.counter("test_clash_total", "x", {"b"}), glassbox::ConfigError);
  r.gauge("test_clash_gauge", "x");
  EXPECT_THROW(r.histogram("test_clash_gauge", "x", {}, {1}), glassbox::ConfigError);
}

TEST(Metrics, WrongLabelCountIsAnError) {
  gm::Registry r;
  auto& fam = r.counter("test_labels_total", "x", {"library", "device"});
  try {
    fam.with({"cublas"});
    FAIL() << "expected ConfigError";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 2 label value(s), got 1"), std::string::npos) << e.what();
  }
}

TEST(Metrics, ExponentialBuckets) {
  EXPECT_EQ(gm::exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_THROW(gm::exponential_buckets(0, 2, 4), glassbox::ConfigError);
}

TEST(Metrics, UpDownCounterSumsSignedSharesAcrossThreads) {
  gm::Registry r;
  gm::UpDownCounter active = r.up_down_counter("test_active_blocks", "blocks").with();
  // Thread A takes 1000, thread B gives them back: A's share +1000, B's -1000.
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) active.add(1);
  }).join();
  EXPECT_EQ(active.value(), 1000);
  std::thread([&] {
    for (int i = 0; i < 990; ++i) active.add(-1);
  }).join();
  EXPECT_EQ(active.value(), 10);
  auto snap = r.snapshot();
  EXPECT_EQ(gm::find_series(snap, "test_active_blocks")->value, 10);
  EXPECT_EQ(snap[0].type, gm::MetricType::gauge);
  EXPECT_THROW(r.gauge("test_active_blocks", "blocks"), glassbox::ConfigError);
}

TEST(Metrics, CollectorsRunBeforeEachSnapshotUntilRemoved) {
  gm::Registry r;
  auto g = r.gauge("test_collected", "set by a collector").with();
  int runs = 0;
  std::uint64_t id = r.add_collector([&] { g.set(++runs * 10.0); });
  EXPECT_EQ(gm::find_series(r.snapshot(), "test_collected")->value, 10);
  EXPECT_EQ(gm::find_series(r.snapshot(), "test_collected")->value, 20);
  r.remove_collector(id);
  EXPECT_EQ(gm::find_series(r.snapshot(), "test_collected")->value, 20);
  EXPECT_EQ(runs, 2);
}

TEST(Metrics, HistogramQuantileInterpolatesWithinTheBucket) {
  gm::HistogramValue h{{1.0, 2.0, 4.0}, {0, 0, 0, 0}, 0, 0.0, {}};
  EXPECT_FALSE(gm::histogram_quantile(h, 0.5));
  h.buckets = {2, 6, 2, 0};  // (0, 1]: 2, (1, 2]: 6, (2, 4]: 2
  h.count = 10;
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 0.1), 0.5);  // rank 1 of the first bucket's 2
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 0.5), 1.5);  // rank 5: 3 of the second bucket's 6
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 0.9), 3.0);  // rank 9: 1 of the third bucket's 2
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 1.0), 4.0);
  h.buckets = {0, 0, 1, 3};  // most in +Inf: the highest finite bound
  h.count = 4;
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 0.99), 4.0);
  EXPECT_DOUBLE_EQ(*gm::histogram_quantile(h, 0.25), 4.0);  // rank 1: all of (2, 4]
}

namespace {

glassbox::trace::SpanContext span_context(std::uint8_t trace, std::uint8_t span, bool sampled) {
  glassbox::trace::SpanContext c;
  c.trace_id.bytes.fill(trace);
  c.span_id.bytes.fill(span);
  c.sampled = sampled;
  return c;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(Metrics, HistogramKeepsTheLatestSampledObservationAsItsBucketsExemplar) {
  gm::Registry r;
  auto h = r.histogram("test_exemplar_seconds", "latency", {}, {1.0, 2.0}).with();
  h.observe(0.5);  // no span: no exemplar
  {
    glassbox::trace::ContextScope unsampled(span_context(0x11, 0x22, false));
    h.observe(0.5);
  }
  EXPECT_TRUE(h.value().exemplars.empty());  // none in any bucket: no per-bucket list
  {
    glassbox::trace::ContextScope sampled(span_context(0xab, 0xcd, true));
    h.observe(0.25);
    h.observe(1.5);
  }
  {
    glassbox::trace::ContextScope later(span_context(0x01, 0x02, true));
    h.observe(0.75);
  }
  gm::HistogramValue v = h.value();
  ASSERT_EQ(v.exemplars.size(), 3u);
  ASSERT_TRUE(v.exemplars[0]);
  EXPECT_EQ(v.exemplars[0]->labels,
            (gm::LabelPairs{{"trace_id", "01010101010101010101010101010101"}, {"span_id", "0202020202020202"}}));
  EXPECT_EQ(v.exemplars[0]->value, 0.75);
  ASSERT_TRUE(v.exemplars[1]);
  EXPECT_EQ(v.exemplars[1]->labels[0].second, repeat("ab", 16));
  EXPECT_EQ(v.exemplars[1]->labels[1].second, repeat("cd", 8));
  EXPECT_EQ(v.exemplars[1]->value, 1.5);
  EXPECT_FALSE(v.exemplars[2]);
  auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(v.exemplars[1]->timestamp, now, 60);
}

// A visit reads every series of a family into one reused SeriesSnapshot: a
// series must not show what the one before it had (its exemplars, buckets).
TEST(Metrics, EachSeriesOfASnapshotHasOnlyItsOwnReadings) {
  gm::Registry r;
  auto& family = r.histogram("test_reuse_seconds", "latency", {"k"}, {1.0, 2.0});
  {
    glassbox::trace::ContextScope sampled(span_context(0xab, 0xcd, true));
    family.with({"a"}).observe(1.5);
    family.with({"a"}).observe(0.5);
  }
  family.with({"b"}).observe(5.0);
  const gm::Snapshot snapshot = r.snapshot();
  const gm::SeriesSnapshot* a = gm::find_series(snapshot, "test_reuse_seconds", {{"k", "a"}});
  const gm::SeriesSnapshot* b = gm::find_series(snapshot, "test_reuse_seconds", {{"k", "b"}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->histogram.exemplars.size(), 3u);
  EXPECT_EQ(a->histogram.buckets, (std::vector<std::uint64_t>{1, 1, 0}));
  EXPECT_TRUE(b->histogram.exemplars.empty());
  EXPECT_EQ(b->histogram.buckets, (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(b->histogram.count, 1u);
  EXPECT_EQ(b->histogram.sum, 5.0);
}

// Writers race on one slot while a reader checks that every exemplar it sees
// is one a writer wrote whole: trace id, span id and value from one context.
TEST(Metrics, ExemplarsReadWhileWrittenAreNeverTorn) {
  gm::detail::ExemplarSlot slot;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (std::uint8_t i = 1; !stop.load(std::memory_order_relaxed); i = static_cast<std::uint8_t>(i % 250 + 1)) {
        std::uint8_t id = static_cast<std::uint8_t>(i + w);
        slot.record(span_context(id, id, true), id / 1000.0);
      }
    });
  }
  int seen = 0;
  std::string torn;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
       torn.empty() && std::chrono::steady_clock::now() < end;) {
    auto e = slot.read();
    if (!e) continue;
    ++seen;
    const std::string& trace = e->labels[0].second;
    const std::string& span = e->labels[1].second;
    if (trace != repeat(trace.substr(0, 2), 16) || span != trace.substr(0, 16) ||
        e->value != std::stoi(trace.substr(0, 2), nullptr, 16) / 1000.0) {
      torn = trace + " " + span + " " + std::to_string(e->value);
    }
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(torn, "") << "an exemplar mixing two writes";
  EXPECT_GT(seen, 0);
}
