#include "glassbox/metrics/cell_arena.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
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

// Folds a gauge's (epoch, delta) into the retired pair at `id`: the newer
// epoch wins, since a set() in it dropped every older delta. Under a.mu.
void merge_epoch_delta(Arena& a, std::size_t id, std::uint64_t epoch, double delta) {
  std::uint64_t& r_epoch = a.retired[id];
  std::uint64_t& r_delta = a.retired[id + 1];
  if (epoch > r_epoch) {
    r_epoch = epoch;
    r_delta = std::bit_cast<std::uint64_t>(delta);
  } else if (epoch == r_epoch) {
    r_delta = std::bit_cast<std::uint64_t>(std::bit_cast<double>(r_delta) + delta);
  }
}

void fold_into_retired(Arena& a, const Chunk& chunk, std::size_t base) {
  for (std::size_t i = 0; i < kChunkCells; ++i) {
    std::uint64_t bits = chunk.cells[i].load(std::memory_order_relaxed);
    CellKind kind = a.kinds[base + i].load(std::memory_order_acquire);
    if (kind == CellKind::epoch) {
      // Its own thread is exiting, so the pair is not half-written.
      merge_epoch_delta(a, base + i, bits, std::bit_cast<double>(chunk.cells[i + 1].load(std::memory_order_relaxed)));
      ++i;
      continue;
    }
    if (bits == 0) continue;
    std::uint64_t& r = a.retired[base + i];
    if (kind == CellKind::f64) {
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

CellId allocate_epoch_pair() {
  Arena& a = arena();
  std::size_t next = a.next.load();
  std::size_t first = 0;
  do {
    first = next + next % 2;
    if (first + 2 > kMaxCells) {
      throw Error("glassbox metrics: cell arena full (" + std::to_string(kMaxCells) +
                  " cells); too many metric series were created");
    }
  } while (!a.next.compare_exchange_weak(next, first + 2));
  a.kinds[first + 1].store(CellKind::f64, std::memory_order_release);
  a.kinds[first].store(CellKind::epoch, std::memory_order_release);
  return static_cast<CellId>(first);
}

std::atomic<std::uint64_t>* cell_slow(CellId id) noexcept {
  if (tl_exited) return nullptr;
  Arena& a = arena();
  try {
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
  } catch (const std::bad_alloc&) {
    // Out of memory: this update goes where an exited thread's do, the shared
    // sums (a lock, no allocation); the next one tries for cells again.
    return nullptr;
  }
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

void add_after_exit_epoch(CellId id, std::uint64_t epoch, double v) {
  Arena& a = arena();
  std::lock_guard lock(a.mu);
  merge_epoch_delta(a, id, epoch, v);
}

std::unique_lock<std::mutex> lock_threads() { return std::unique_lock(arena().mu); }

namespace {
std::uint64_t live_bits(const ThreadCells& tc, CellId id) {
  const Chunk* chunk = tc.chunks[id / kChunkCells].load(std::memory_order_acquire);
  return chunk ? chunk->cells[id % kChunkCells].load(std::memory_order_relaxed) : 0;
}
}  // namespace

double sum_epoch_deltas(CellId id, std::uint64_t epoch) {
  Arena& a = arena();
  double total = a.retired[id] == epoch ? std::bit_cast<double>(a.retired[id + 1]) : 0.0;
  for (const ThreadCells* tc : a.threads) {
    const Chunk* chunk = tc->chunks[id / kChunkCells].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    const std::atomic<std::uint64_t>& tag = chunk->cells[id % kChunkCells];
    if (tag.load(std::memory_order_acquire) != epoch) continue;
    double delta = std::bit_cast<double>(chunk->cells[id % kChunkCells + 1].load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    // Moved on while read: a set() ran meanwhile, and the gauge's read retries.
    if (tag.load(std::memory_order_relaxed) == epoch) total += delta;
  }
  return total;
}

std::uint64_t sum_u64(CellId id) {
  Arena& a = arena();
  std::uint64_t total = a.retired[id];
  for (const ThreadCells* tc : a.threads) total += live_bits(*tc, id);
  return total;
}

void sum_u64_range(CellId first, std::size_t count, std::uint64_t* out) {
  Arena& a = arena();
  std::copy_n(a.retired.begin() + first, count, out);
  for (const ThreadCells* tc : a.threads) {
    // The range may cross from one chunk into the next.
    for (std::size_t done = 0; done < count;) {
      const std::size_t id = first + done;
      const std::size_t n = std::min(count - done, kChunkCells - id % kChunkCells);
      if (const Chunk* chunk = tc->chunks[id / kChunkCells].load(std::memory_order_acquire)) {
        for (std::size_t i = 0; i < n; ++i)
          out[done + i] += chunk->cells[id % kChunkCells + i].load(std::memory_order_relaxed);
      }
      done += n;
    }
  }
}

double sum_f64(CellId id) {
  Arena& a = arena();
  double total = std::bit_cast<double>(a.retired[id]);
  for (const ThreadCells* tc : a.threads) total += std::bit_cast<double>(live_bits(*tc, id));
  return total;
}

}  // namespace glassbox::metrics::detail
