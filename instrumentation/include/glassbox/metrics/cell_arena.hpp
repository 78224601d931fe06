#pragma once
// Storage behind every counter, histogram and gauge: each thread owns its own cells,
// so a hot-path update is a relaxed load and store on a cache line no other
// thread writes. A scrape sums the cells of all live threads plus what exited
// threads left behind. Ids are never reused, so a handle stays valid for the
// life of the process.
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace glassbox::metrics::detail {

using CellId = std::uint32_t;

/// How a cell's 64 bits are summed: as an integer or as a double. `epoch`
/// starts a gauge's pair of cells (see gauge.hpp): the epoch a thread's delta
/// belongs to, then the delta itself (an f64 in the next cell).
enum class CellKind : std::uint8_t { u64, f64, epoch };

inline constexpr std::size_t kChunkCells = 256;
inline constexpr std::size_t kMaxChunks = 512;
inline constexpr std::size_t kMaxCells = kChunkCells * kMaxChunks;

struct Chunk {
  std::atomic<std::uint64_t> cells[kChunkCells] = {};
};

struct ThreadCells {
  std::atomic<Chunk*> chunks[kMaxChunks] = {};
};

/// Reserves `count` consecutive cells of one kind. Thread-safe; throws
/// glassbox::Error when the arena is full.
CellId allocate_cells(std::size_t count, CellKind kind);
/// Reserves a gauge's (epoch, delta) pair at an even id, so both cells lie in
/// one chunk and one lookup finds them.
CellId allocate_epoch_pair();

/// An epoch tag no epoch takes: a thread writes it while it moves its pair to
/// a new epoch, so a reader never pairs the new delta with the old epoch.
inline constexpr std::uint64_t kEpochWriting = ~std::uint64_t{0};

/// Holds the thread list still, so the sums read under it see no thread fold
/// its cells away half-way: one consistent snapshot.
[[nodiscard]] std::unique_lock<std::mutex> lock_threads();

/// Sum of a cell over all threads, live and exited. Call under lock_threads().
std::uint64_t sum_u64(CellId id);
/// The sums of cells `first` .. `first + count - 1` into `out`, each thread's
/// cells read in one pass (a histogram's buckets). Call under lock_threads().
void sum_u64_range(CellId first, std::size_t count, std::uint64_t* out);
double sum_f64(CellId id);
/// Sum of the deltas of pair `id` that belong to `epoch`. Call under lock_threads().
double sum_epoch_deltas(CellId id, std::uint64_t epoch);

/// Slow path: first update on this thread, or an update after the thread's
/// cells were folded at thread exit. Null when the update must go to the
/// shared sums instead: after exit, or when the thread's cells cannot be
/// allocated (out of memory), so no update is lost.
std::atomic<std::uint64_t>* cell_slow(CellId id) noexcept;
void add_after_exit_u64(CellId id, std::uint64_t n);
void add_after_exit_f64(CellId id, double v);
void add_after_exit_epoch(CellId id, std::uint64_t epoch, double v);

extern thread_local constinit ThreadCells* tl_cells;

/// The calling thread's cell, or nullptr when the slow path must run.
inline std::atomic<std::uint64_t>* local_cell(CellId id) noexcept {
  ThreadCells* tc = tl_cells;
  if (tc == nullptr) [[unlikely]]
    return nullptr;
  Chunk* chunk = tc->chunks[id / kChunkCells].load(std::memory_order_relaxed);
  if (chunk == nullptr) [[unlikely]]
    return nullptr;
  return &chunk->cells[id % kChunkCells];
}

inline void add_u64(CellId id, std::uint64_t n) noexcept {
  std::atomic<std::uint64_t>* c = local_cell(id);
  if (c == nullptr) [[unlikely]] {
    c = cell_slow(id);
    if (c == nullptr) return add_after_exit_u64(id, n);
  }
  // Only this thread writes the cell: load+store, no read-modify-write.
  c->store(c->load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void add_f64(CellId id, double v) noexcept {
  std::atomic<std::uint64_t>* c = local_cell(id);
  if (c == nullptr) [[unlikely]] {
    c = cell_slow(id);
    if (c == nullptr) return add_after_exit_f64(id, v);
  }
  double cur = std::bit_cast<double>(c->load(std::memory_order_relaxed));
  c->store(std::bit_cast<std::uint64_t>(cur + v), std::memory_order_relaxed);
}

/// Adds `v` to the calling thread's delta of pair `id` for `epoch`; a delta
/// left from an older epoch is dropped first (a set() since has replaced it).
inline void add_epoch_delta(CellId id, std::uint64_t epoch, double v) noexcept {
  std::atomic<std::uint64_t>* tag = local_cell(id);
  if (tag == nullptr) [[unlikely]] {
    tag = cell_slow(id);
    if (tag == nullptr) return add_after_exit_epoch(id, epoch, v);
  }
  std::atomic<std::uint64_t>* delta = tag + 1;
  if (tag->load(std::memory_order_relaxed) == epoch) [[likely]] {
    double cur = std::bit_cast<double>(delta->load(std::memory_order_relaxed));
    delta->store(std::bit_cast<std::uint64_t>(cur + v), std::memory_order_relaxed);
    return;
  }
  // A seqlock write with this thread as its only writer: readers that see
  // the same tag before and after reading the delta read a matching pair.
  tag->store(kEpochWriting, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  delta->store(std::bit_cast<std::uint64_t>(v), std::memory_order_relaxed);
  tag->store(epoch, std::memory_order_release);
}

}  // namespace glassbox::metrics::detail
