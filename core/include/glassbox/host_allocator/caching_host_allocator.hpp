#pragma once
// A caching allocator of pinned (page-locked) host memory, for staging copies
// to and from the GPU.
//
// Requests round up to a size class (host_allocator/size_classes.hpp); freed
// blocks are cached per class and handed out again. A block that was used on
// streams (record_stream) is not reused when freed: one event is recorded per
// stream, and the block waits until every one has completed, so a copy still
// queued on a stream never sees its source overwritten.
//
// Beyond PyTorch's CachingHostAllocatorImpl: each thread keeps a few free
// blocks per class (config thread_cache) so that a thread re-using a size
// takes no shared lock and touches no shared cache line; pow2x4 size classes;
// malloc + cudaHostRegister with parallel page touching; a cap on cached
// bytes with least-recently-freed trimming; an out-of-memory path that
// processes events, empties the cache and retries once.
//
// CUDA graph capture: between begin_allocate_to_pool(id, filter) and
// end_allocate_to_pool(id), allocations from streams the filter accepts come
// from a private pool. A block used during capture is never recycled: a
// captured graph may replay its copies at any later time, so no event says
// when the block is free again. Used during capture means used on a stream
// (record_stream) and either allocated while its stream captured, recorded on
// a capturing stream while a private pool is being allocated to, or freed
// while one of its streams captures (no event is ever recorded on a
// capturing stream). Such blocks stay reserved, are not cached, and are
// counted in glassbox_host_blocks_unrecyclable_total{reason="captured"}.
//
// An event whose poll fails (the backend says it never will complete) is
// dropped and counted in glassbox_host_event_errors_total{error}; its block
// is kept out of reuse for good, and polling goes on with the other events.
//
// Thread-safety: every member may be called from any thread. record_stream()
// on a block must happen before its free(): one after it throws UsageError
// (unless the block was handed out again meanwhile), but one racing it may
// go unseen, as telling the two apart would cost the cached allocate/free
// pair an atomic read-modify-write.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "glassbox/host_allocator/host_allocator_config.hpp"
#include "glassbox/host_allocator/host_backend.hpp"
#include "glassbox/host_allocator/host_stats.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::host_allocator {

/// A memory pool's identity; {0, 0} is the default pool.
struct PoolId {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  friend auto operator<=>(const PoolId&, const PoolId&) = default;
};

/// What allocate() returns: the memory and the block behind it (pass `ctx` to
/// free() and record_stream(): it saves a lookup).
struct HostAllocation {
  void* ptr = nullptr;
  void* ctx = nullptr;
};

struct HostAllocatorOptions {
  HostAllocatorConfig config = HostAllocatorConfig::from_env();
  metrics::Registry* registry = &metrics::Registry::global();
  /// Where one-time warnings go (default: stderr).
  std::function<void(const std::string&)> warn;
};

class CachingHostAllocator {
 public:
  using Options = HostAllocatorOptions;

  explicit CachingHostAllocator(std::shared_ptr<HostBackend> backend, Options options = {});
  /// Returns every block to the backend. Memory still in use becomes invalid.
  ~CachingHostAllocator();
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  /// Pinned memory of at least `size` bytes ({nullptr, nullptr} for 0). Throws
  /// OutOfMemoryError when the backend has none even after empty_cache().
  HostAllocation allocate(std::size_t size);
  /// Returns a block: reusable at once if it was used on no stream, else once
  /// every stream it was used on has passed the event recorded here (never,
  /// if it was used during capture).
  void free(void* ctx);
  /// Marks the block as used on `stream`: `ctx` when it is one of this
  /// allocator's blocks, else the one at `ptr` (as PyTorch, for callers that
  /// wrap the context in their own). Returns true; throws UsageError, naming
  /// `ptr`, when neither is a live allocation (freed, or never from here).
  bool record_stream(void* ptr, void* ctx, StreamId stream);

  /// Polls the default pool's pending events, oldest first, stopping at the
  /// first that has not completed. Never throws for a failed poll.
  void process_events();
  /// Polls pending events of `size`'s class only, until one block of that
  /// class becomes free.
  void process_events_for_size(std::size_t size);
  /// Frees the default pool's free blocks (thread caches included) and
  /// empties private pools that were released.
  void empty_cache();

  void begin_allocate_to_pool(PoolId id, std::function<bool(StreamId)> filter);
  void end_allocate_to_pool(PoolId id);
  void release_pool(PoolId id);

  HostStats stats() const;
  void reset_accumulated_stats();
  void reset_peak_stats();

  const HostAllocatorConfig& config() const noexcept;
  /// The block size a request of `size` gets.
  std::size_t round_size(std::size_t size) const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace glassbox::host_allocator
