// The per-thread chunk pools behind the graph's tensors, nodes and edge lists
// (glassbox/autograd/detail/pooled.hpp): reuse on the freeing thread, short
// arrays, the bound on what a thread keeps, and the hand-back at thread exit.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <thread>
#include <vector>

#include "glassbox/autograd/detail/pooled.hpp"

namespace {

namespace gd = glassbox::autograd::detail;

// A size no graph object has, so that the engine's own use of the pools on
// the test's threads does not move the counts (allocate_shared adds its counts).
struct Odd {
  std::array<char, 400> bytes{};
};
using OddChunks = gd::ThreadChunks<((sizeof(Odd) + 16 + 15) / 16) * 16>;

std::size_t kept_on_fresh_thread(void (*body)()) {
  std::size_t kept = 0;
  std::thread([&] {
    body();
    kept = OddChunks::kept();
  }).join();
  return kept;
}

TEST(PooledChunks, AFreedObjectsChunkIsTheThreadsNextOfItsSize) {
  if (!gd::kPoolChunks) GTEST_SKIP() << "nothing is pooled under AddressSanitizer";
  std::thread([] {
    const void* first = nullptr;
    {
      auto a = gd::make_pooled<Odd>();
      first = a.get();
    }
    EXPECT_EQ(OddChunks::kept(), 1U);
    auto b = gd::make_pooled<Odd>();
    EXPECT_EQ(b.get(), first);
    EXPECT_EQ(OddChunks::kept(), 0U);
  }).join();
}

// 104 bytes: arrays of one to four take chunks of 112, 208, 320 and 416 bytes.
struct Item {
  std::array<char, 104> bytes{};
};
using Items = std::vector<Item, gd::PooledAllocator<Item>>;

template <std::size_t N>
using ItemChunks = gd::ThreadChunks<((N * sizeof(Item) + 15) / 16) * 16>;

// What the thread keeps of N items' chunk size once an array of N is freed.
template <std::size_t N>
std::uint32_t kept_after_an_array_of() {
  {
    Items a;
    a.reserve(N);
  }
  return ItemChunks<N>::kept();
}

TEST(PooledChunks, ArraysOfUpToFourComeFromTheThreadsPool) {
  if (!gd::kPoolChunks) GTEST_SKIP() << "nothing is pooled under AddressSanitizer";
  static_assert(gd::PooledAllocator<Item>::kPooledCount == 4);
  std::thread([] {
    EXPECT_EQ(kept_after_an_array_of<1>(), 1U);
    EXPECT_EQ(kept_after_an_array_of<2>(), 1U);
    EXPECT_EQ(kept_after_an_array_of<3>(), 1U);
    EXPECT_EQ(kept_after_an_array_of<4>(), 1U);
    EXPECT_EQ(kept_after_an_array_of<5>(), 0U) << "arrays of five go to the heap";
    const Item* kept = nullptr;
    {
      Items two(2);
      kept = two.data();
    }
    Items again(2);
    EXPECT_EQ(again.data(), kept);
    EXPECT_EQ(ItemChunks<2>::kept(), 0U);
  }).join();
}

TEST(PooledChunks, AThreadKeepsAtMostTheBoundOfASize) {
  if (!gd::kPoolChunks) GTEST_SKIP() << "nothing is pooled under AddressSanitizer";
  const std::size_t kept = kept_on_fresh_thread([] {
    std::vector<std::shared_ptr<Odd>> many(2 * gd::kMaxPooledBytes / sizeof(Odd));
    for (auto& p : many) p = gd::make_pooled<Odd>();
  });
  const std::size_t chunk = ((sizeof(Odd) + 16 + 15) / 16) * 16;
  EXPECT_EQ(kept, gd::kMaxPooledBytes / chunk);
}

TEST(PooledChunks, AnObjectFreedOnAnotherThreadJoinsThatThreadsPool) {
  if (!gd::kPoolChunks) GTEST_SKIP() << "nothing is pooled under AddressSanitizer";
  std::shared_ptr<Odd> made;
  std::thread([&] { made = gd::make_pooled<Odd>(); }).join();
  std::thread([&] {
    const std::uint32_t before = OddChunks::kept();
    made.reset();
    EXPECT_EQ(OddChunks::kept(), before + 1);
  }).join();
}

// Constructed before the thread's first pooled chunk, so destroyed after the
// pools' hand-back (thread-locals go in reverse order): by then the thread
// keeps nothing, and keeps nothing it frees later.
struct CheckAfterHandBack {
  std::uint32_t* kept_at_exit;
  std::uint32_t* kept_after_late_free;
  ~CheckAfterHandBack() {
    *kept_at_exit = OddChunks::kept();
    { auto late = gd::make_pooled<Odd>(); }
    *kept_after_late_free = OddChunks::kept();
  }
};

TEST(PooledChunks, AThreadHandsItsChunksBackWhenItExits) {
  if (!gd::kPoolChunks) GTEST_SKIP() << "nothing is pooled under AddressSanitizer";
  std::uint32_t kept_before_exit = 0;
  std::uint32_t kept_at_exit = 99;
  std::uint32_t kept_after_late_free = 99;
  std::thread([&] {
    thread_local CheckAfterHandBack check{&kept_at_exit, &kept_after_late_free};
    (void)check;
    std::vector<std::shared_ptr<Odd>> some(10);
    for (auto& p : some) p = gd::make_pooled<Odd>();
    some.clear();
    kept_before_exit = OddChunks::kept();
  }).join();
  EXPECT_EQ(kept_before_exit, 10U);
  EXPECT_EQ(kept_at_exit, 0U);
  EXPECT_EQ(kept_after_late_free, 0U);
}

}  // namespace
