// The per-(handle, stream) workspace table on fake memory: what it holds is
// counted, release_idle() frees only what no thread can be using, and never
// a workspace a thread is using while threads bind and release at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "glassbox/handle_pool/workspace_table.hpp"
#include "metric_value.hpp"

namespace gh = glassbox::handle_pool;

namespace {

constexpr std::size_t kBytes = 4096;

// Real memory, so a use after free is also a sanitizer's finding; `live`
// tells a test whether a pointer is still allocated.
struct FakeMemory {
  std::mutex mu;
  std::set<void*> live;
  std::atomic<int> frees{0};

  gh::WorkspaceTable::Memory memory() {
    return {[this](int, std::size_t bytes) {
              void* p = std::malloc(bytes);
              std::lock_guard lock(mu);
              live.insert(p);
              return p;
            },
            [this](int, void* p) {
              {
                std::lock_guard lock(mu);
                live.erase(p);
              }
              ++frees;
              std::free(p);
            }};
  }
  bool alive(void* p) {
    std::lock_guard lock(mu);
    return live.contains(p);
  }
};

// Distinct addresses to stand for handles and streams.
char handles[32];
char streams[4];

double gauge(const glassbox::metrics::Registry& r, int device = 0) {
  return glassbox::testing::metric_value(r, "glassbox_handle_workspace_bytes",
                                         {{"library", "fake"}, {"device", std::to_string(device)}});
}

const gh::WorkspaceTable::Idle kNoneIdle = [](int, gh::WorkspaceTable::Handle) { return false; };

}  // namespace

TEST(WorkspaceTable, OneWorkspacePerHandleAndStreamCounted) {
  glassbox::metrics::Registry registry;
  FakeMemory mem;
  gh::WorkspaceTable table("fake", kBytes, mem.memory(), registry);
  void* a = table.bind(&handles[0], &streams[0], 0);
  EXPECT_EQ(table.bind(&handles[0], &streams[0], 0), a);  // again: the same one
  void* b = table.bind(&handles[0], &streams[1], 0);
  EXPECT_NE(a, b);
  table.bind(&handles[1], &streams[0], 1);
  EXPECT_EQ(gauge(registry, 0), 2 * kBytes);
  EXPECT_EQ(gauge(registry, 1), kBytes);
  EXPECT_EQ(table.bytes(0), 2 * kBytes);
}

TEST(WorkspaceTable, ReleaseFreesWorkspacesOfOtherStreamsAndOfIdleHandles) {
  glassbox::metrics::Registry registry;
  FakeMemory mem;
  gh::WorkspaceTable table("fake", kBytes, mem.memory(), registry);
  void* old_stream = table.bind(&handles[0], &streams[0], 0);
  void* current = table.bind(&handles[0], &streams[1], 0);  // handle 0 moved on to stream 1
  void* pooled = table.bind(&handles[1], &streams[0], 0);   // handle 1's thread will have exited
  EXPECT_EQ(gauge(registry), 3 * kBytes);

  auto handle_1_idle = [](int, gh::WorkspaceTable::Handle h) { return h == &handles[1]; };
  EXPECT_EQ(table.release_idle(handle_1_idle), 2 * kBytes);
  EXPECT_FALSE(mem.alive(old_stream));
  EXPECT_FALSE(mem.alive(pooled));
  EXPECT_TRUE(mem.alive(current));  // bound and lent: in use
  EXPECT_EQ(gauge(registry), kBytes);
  EXPECT_EQ(table.release_idle(kNoneIdle), 0u);

  // Binding the released pair again makes a new workspace.
  void* again = table.bind(&handles[0], &streams[0], 0);
  EXPECT_TRUE(mem.alive(again));
  EXPECT_EQ(gauge(registry), 2 * kBytes);
}

// As PyTorch's handle-pool test does with its workspaces: threads get their
// handle's workspace for one stream after another and use it, while others
// release idle workspaces. A thread's workspace must stay allocated from
// bind() until the thread binds another.
TEST(WorkspaceTable, AWorkspaceInUseIsNeverFreedUnderItsThread) {
  glassbox::metrics::Registry registry;
  FakeMemory mem;
  gh::WorkspaceTable table("fake", kBytes, mem.memory(), registry);
  std::atomic<bool> stop{false};
  std::atomic<int> freed_under_use{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3000; ++k) {
        void* ws = table.bind(&handles[t], &streams[k % 3], 0);
        for (int use = 0; use < 3; ++use) {
          if (!mem.alive(ws)) {
            ++freed_under_use;
            return;
          }
          std::memset(ws, t, 64);
        }
      }
    });
  }
  std::vector<std::thread> clearers;
  for (int c = 0; c < 4; ++c) {
    clearers.emplace_back([&] {
      while (!stop) table.release_idle(kNoneIdle);
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  for (auto& th : clearers) th.join();
  EXPECT_EQ(freed_under_use.load(), 0);
  EXPECT_GT(mem.frees.load(), 0);  // the clearers did free: the property was exercised
  EXPECT_EQ(gauge(registry), static_cast<double>(table.bytes(0)));
}
