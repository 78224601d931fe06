#include "glassbox/metrics/cell_arena.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "glassbox/error.hpp"

namespace glassbox::metrics::detail {

thread_local constinit ThreadCells* tl_cells = nullptr;

namespace {
thread_local constinit bool tl_exited = false;
}

namespace {

// Leaked on purpose: threads that exit after static destruction (or during
// it) still fold their cells into a live arena instead of a destroyed one.
struct Arena {
  std::mutex mu;  // guards everything below
  std::vector<ThreadCells*> threads;
  std::vector<std::uint64_t> retired = std::vector<std::uint64_t>(kMaxCells, 0);
  // Written once per cell when it is allocated, without `mu`: allocation runs
  // under family locks, which snapshots take after `mu` (lock order).
  std::vector<std::atomic<CellKind>> kinds = std::vector<std::atomic<CellKind>>(kMaxCells);
  std::atomic<std::size_t> next{0};
};

Arena& arena() {
  static Arena* a = new Arena;
  return *a;
}

void fold_into_retired(Arena& a, const Chunk& chunk, std::size_t base) {
  for (std::size_t i = 0; i < kChunkCells; ++i) {
    std::uint64_t bits = chunk.cells[i].load(std::memory_order_relaxed);
    if (bits == 0) continue;
    std::uint64_t& r = a.retired[base + i];
    if (a.kinds[base + i].load(std::memory_order_acquire) == CellKind::f64) {
      r = std::bit_cast<std::uint64_t>(std::bit_cast<double>(r) + std::bit_cast<double>(bits));
    } else {
      r += bits;
    }
  }
}

// Folds a thread's cells into the retired sums when the thread exits, then
// frees them. Later updates from this thread's remaining destructors go
// straight to the retired sums.
struct ThreadOwner {
  bool armed = false;
  ~ThreadOwner() {
    ThreadCells* tc = tl_cells;
    tl_exited = true;
    if (tc == nullptr) return;
    Arena& a = arena();
    {
      std::lock_guard lock(a.mu);
      for (std::size_t c = 0; c < kMaxChunks; ++c) {
        if (Chunk* chunk = tc->chunks[c].load(std::memory_order_relaxed)) {
          fold_into_retired(a, *chunk, c * kChunkCells);
        }
      }
      std::erase(a.threads, tc);
    }
    tl_cells = nullptr;
    for (auto& chunk : tc->chunks) delete chunk.load(std::memory_order_relaxed);
    delete tc;
  }
};

thread_local ThreadOwner tl_owner;

}  // namespace

CellId allocate_cells(std::size_t count, CellKind kind) {
  Arena& a = arena();
  std::size_t first = a.next.fetch_add(count);
  if (first + count > kMaxCells) {
    throw Error("glassbox metrics: cell arena full (" + std::to_string(kMaxCells) +
                " cells); too many metric series were created");
  }
  for (std::size_t i = 0; i < count; ++i) a.kinds[first + i].store(kind, std::memory_order_release);
  return static_cast<CellId>(first);
}

std::atomic<std::uint64_t>* cell_slow(CellId id) {
  if (tl_exited) return nullptr;
  Arena& a = arena();
  if (tl_cells == nullptr) {
    tl_owner.armed = true;  // first touch registers the exit-time fold
    auto tc = std::make_unique<ThreadCells>();
    std::lock_guard lock(a.mu);
    a.threads.push_back(tc.get());
    tl_cells = tc.release();
  }
  std::atomic<Chunk*>& slot = tl_cells->chunks[id / kChunkCells];
  if (slot.load(std::memory_order_relaxed) == nullptr) {
    // Release: a scraper that sees the pointer sees zeroed cells.
    slot.store(new Chunk, std::memory_order_release);
  }
  return &slot.load(std::memory_order_relaxed)->cells[id % kChunkCells];
}

void add_after_exit_u64(CellId id, std::uint64_t n) {
  Arena& a = arena();
  std::lock_guard lock(a.mu);
  a.retired[id] += n;
}

void add_after_exit_f64(CellId id, double v) {
  Arena& a = arena();
  std::lock_guard lock(a.mu);
  a.retired[id] = std::bit_cast<std::uint64_t>(std::bit_cast<double>(a.retired[id]) + v);
}

std::unique_lock<std::mutex> lock_threads() { return std::unique_lock(arena().mu); }

namespace {
std::uint64_t live_bits(const ThreadCells& tc, CellId id) {
  const Chunk* chunk = tc.chunks[id / kChunkCells].load(std::memory_order_acquire);
  return chunk ? chunk->cells[id % kChunkCells].load(std::memory_order_relaxed) : 0;
}
}  // namespace

std::uint64_t sum_u64(CellId id) {
  Arena& a = arena();
  std::uint64_t total = a.retired[id];
  for (const ThreadCells* tc : a.threads) total += live_bits(*tc, id);
  return total;
}

double sum_f64(CellId id) {
  Arena& a = arena();
  double total = std::bit_cast<double>(a.retired[id]);
  for (const ThreadCells* tc : a.threads) total += std::bit_cast<double>(live_bits(*tc, id));
  return total;
}

}  // namespace glassbox::metrics::detail
