#pragma once
// The property the caching host allocator exists for, under load: a block
// handed out is the caller's until every stream that used it has passed its
// event. Eight threads, default config (thread caches on), sizes in three
// classes. Each stamps every block it gets with (thread, iteration), queues
// on its own stream, behind a closed gate, a reader that checks the block
// still holds that stamp, records the stream, frees, and opens the gate only
// several iterations later, after it (and the other threads) allocated and
// stamped more blocks of the same class. An allocator that reused a block
// before its event completed hands it to a writer while the reader waits:
// that reader sees a foreign stamp. The odd threads promise their streams
// outlive the allocator, so their blocks' events are deferred and shared.
//
// A second case stages as the demo does: fresh threads each round, one
// shared long-lived stream (below).
//
// Instantiated with the host traits of tests/support/sim_backend_traits.hpp
// and tests/gpu/cuda_backend_traits.hpp (the reader is a host task: a
// SimStream item, or cudaLaunchHostFunc, which runs in stream order).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::testing {

template <class T>
class HostAllocatorStampTyped : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = T::unavailable(); !why.empty()) GTEST_SKIP() << why;
  }

  /// An allocator with the default config (thread caches on), on this test's registry.
  std::unique_ptr<host_allocator::CachingHostAllocator> make_allocator() {
    host_allocator::HostAllocatorOptions o;
    o.config = host_allocator::HostAllocatorConfig::parse("");
    o.registry = &registry;
    return std::make_unique<host_allocator::CachingHostAllocator>(T::make_backend(o.config), o);
  }

  /// Takes a block of `size` from `a`, stamps it with `value` and queues on
  /// `s` a reader that counts (ran, wrong) whether it still holds the stamp
  /// when the stream gets there. The caller records and frees the block.
  template <class Stream>
  host_allocator::HostAllocation stamp_with_reader(host_allocator::CachingHostAllocator& a, Stream& s, std::size_t size,
                                                   std::uint64_t value);

  metrics::Registry registry;
  std::atomic<int> ran{0}, wrong{0};
};

TYPED_TEST_SUITE_P(HostAllocatorStampTyped);

namespace stamp_detail {

// Every 8-byte word of the block holds the stamp (the sizes are multiples of 8).
inline void stamp(void* ptr, std::size_t size, std::uint64_t value) {
  auto* words = static_cast<std::uint64_t*>(ptr);
  std::fill(words, words + size / sizeof(std::uint64_t), value);
}

inline bool holds(const void* ptr, std::size_t size, std::uint64_t value) {
  const auto* words = static_cast<const std::uint64_t*>(ptr);
  return std::all_of(words, words + size / sizeof(std::uint64_t), [&](std::uint64_t w) { return w == value; });
}

}  // namespace stamp_detail

template <class T>
template <class Stream>
host_allocator::HostAllocation HostAllocatorStampTyped<T>::stamp_with_reader(host_allocator::CachingHostAllocator& a,
                                                                             Stream& s, std::size_t size,
                                                                             std::uint64_t value) {
  auto block = a.allocate(size);
  stamp_detail::stamp(block.ptr, size, value);
  T::host_task(s, [this, ptr = block.ptr, size, value] {
    if (!stamp_detail::holds(ptr, size, value)) wrong.fetch_add(1);
    ran.fetch_add(1);
  });
  return block;
}

TYPED_TEST_P(HostAllocatorStampTyped, EveryReaderSeesItsOwnStampUnderEightThreads) {
  using Stream = typename TypeParam::Stream;
  using Gate = typename TypeParam::Gate;
  // 8 x 100 gates stay below the CUDA arena's 1024 gate slots: none is reused.
  constexpr int kThreads = 8, kIterations = 100;
  constexpr std::size_t kSizes[] = {1000, 4000, 16000};
  // Gates stay closed this many iterations: the thread's next block of the
  // same class is taken and stamped before the reader may run.
  constexpr std::size_t kLag = std::size(kSizes);

  // Before the allocator: the odd threads' streams are promised to outlive it.
  std::vector<std::unique_ptr<Stream>> streams;
  for (int t = 0; t < kThreads; ++t) streams.push_back(std::make_unique<Stream>());
  auto owned = this->make_allocator();
  host_allocator::CachingHostAllocator& allocator = *owned;

  auto work = [&](int t) {
    Stream& s = *streams[t];
    std::deque<std::unique_ptr<Gate>> closed;
    for (int i = 0; i < kIterations; ++i) {
      const std::size_t size = kSizes[(t + i) % kLag];
      closed.push_back(std::make_unique<Gate>(s.native()));
      auto a = this->stamp_with_reader(allocator, s, size, (std::uint64_t(t) << 32) | std::uint64_t(i));
      allocator.record_stream(
          a.ptr, a.ctx, s.id(),
          t % 2 == 1 ? host_allocator::StreamLife::outlives_allocator : host_allocator::StreamLife::unknown);
      allocator.free(a.ctx);
      if (closed.size() > kLag) {
        closed.front()->open();
        closed.pop_front();
      }
    }
    for (auto& g : closed) g->open();
    s.synchronize();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  allocator.process_events();

  EXPECT_EQ(this->ran.load(), kThreads * kIterations);
  EXPECT_EQ(this->wrong.load(), 0) << "readers saw a block overwritten before their stream was done with it";
  EXPECT_GT(allocator.stats().classes.size(), 0u);
}

// The demo's pattern: each round, fresh threads stage small blocks on one
// stream that every thread shares and that is promised to outlive the
// allocator, so the blocks' events are deferred, grouped across threads,
// and the threads exit with groups still open (their shards and caches left
// to others). Each round's readers wait behind a gate that opens only two
// rounds later, after two more rounds of fresh threads allocated and stamped
// blocks of the same classes: a block reused before the event that covers
// its reader completed shows its reader a foreign stamp.
TYPED_TEST_P(HostAllocatorStampTyped, EveryReaderSeesItsOwnStampWhenFreshThreadsShareOneStream) {
  using Stream = typename TypeParam::Stream;
  using Gate = typename TypeParam::Gate;
  constexpr int kRounds = 12, kThreads = 4, kPerThread = 6;
  constexpr std::size_t kSizes[] = {64, 8192};
  constexpr std::size_t kLag = 2;  // rounds a gate stays closed

  Stream s;  // before the allocator: it outlives it, as promised
  auto owned = this->make_allocator();
  host_allocator::CachingHostAllocator& allocator = *owned;

  auto stage = [&](int round, int t) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::size_t size = kSizes[static_cast<std::size_t>(i) % std::size(kSizes)];
      const std::uint64_t value = (std::uint64_t(round) << 40) | (std::uint64_t(t) << 20) | std::uint64_t(i);
      auto a = this->stamp_with_reader(allocator, s, size, value);
      allocator.record_stream(a.ptr, a.ctx, s.id(), host_allocator::StreamLife::outlives_allocator);
      allocator.free(a.ctx);
    }
  };
  std::deque<std::unique_ptr<Gate>> closed;
  for (int round = 0; round < kRounds; ++round) {
    closed.push_back(std::make_unique<Gate>(s.native()));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(stage, round, t);
    for (auto& th : threads) th.join();
    if (closed.size() > kLag) {
      closed.front()->open();
      closed.pop_front();
    }
  }
  for (auto& g : closed) g->open();
  s.synchronize();
  allocator.process_events();

  EXPECT_EQ(this->ran.load(), kRounds * kThreads * kPerThread);
  EXPECT_EQ(this->wrong.load(), 0) << "readers saw a block overwritten before their stream was done with it";
}

REGISTER_TYPED_TEST_SUITE_P(HostAllocatorStampTyped, EveryReaderSeesItsOwnStampUnderEightThreads,
                            EveryReaderSeesItsOwnStampWhenFreshThreadsShareOneStream);

}  // namespace glassbox::testing
