#pragma once
// A caching allocator of pinned (page-locked) host memory, for staging copies
// to and from the GPU.
//
// Requests round up to a size class (host_allocator/size_classes.hpp); freed
// blocks are cached per class and handed out again. A block that was used on
// streams (record_stream) is not reused when freed: one event is recorded per
// stream, and the block waits until every one has completed, so a copy still
// queued on a stream never sees its source overwritten. On a stream its
// caller promises outlives the allocator, one event recorded later covers a
// group of freed blocks (record_stream says when).
//
// Beyond PyTorch's CachingHostAllocatorImpl: each thread keeps a few free
// blocks per class (config thread_cache) so that a thread re-using a size
// takes no shared lock and touches no shared cache line; pow2x4 size classes;
// malloc + cudaHostRegister with parallel page touching; a cap on cached
// bytes (thread caches included) with least-recently-freed trimming, run
// outside free() and outside every lock (see max_cached_bytes); an
// out-of-memory path that
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
// on a block must happen before its free(). One that comes after it, or
// races it and loses, throws UsageError and counts in
// glassbox_host_usage_errors_total{error="record_stream_after_free"}: it is
// never lost silently (free() settles the race with one atomic exchange).
// Only a record that arrives after the block was handed out again cannot be
// told from one by the new owner, and counts as the new owner's.
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

/// What an out-of-memory observer is told.
struct OutOfMemoryInfo {
  std::size_t size = 0;          ///< bytes asked
  std::size_t rounded_size = 0;  ///< the block size it needed
  HostStats stats;               ///< after the retry failed
  /// The JSON snapshot written for it (config oom_snapshot), empty if none
  /// was configured or writing it failed. Format (version 1): an object with
  /// "version", "time_unix_ns", "request" {size, rounded_size, backend},
  /// "config" (to_string()), "buckets" (per bucket: bucket, block_size,
  /// blocks, bytes, and blocks by state: active, pending_event, retired,
  /// free, of which thread_cached; requested_bytes of active blocks;
  /// requests and cache_hits as stats()) and "blocks" (each: pool, bucket,
  /// size, state, thread_cached, requested_bytes, streams as hex ids (those
  /// an active block was recorded on so far; a freed block's streams live on
  /// only as its pending_events), pending_events (the events it waits on,
  /// counting a deferred one not yet recorded, see record_stream),
  /// age_seconds since it was made). States:
  /// active (handed out), pending_event (freed, waiting on events), retired
  /// (kept out of reuse for good: used during capture, or an event failed),
  /// free (cached).
  std::string snapshot_path;
};

/// Defaults read the environment: `config` is HostAllocatorConfig::from_env()
/// (GLASSBOX_HOST_ALLOC_CONF, see host_allocator_config.hpp) each time options
/// are constructed, so an operator tunes a service's allocator without a
/// rebuild; set `config` in code to ignore the variable. A malformed value
/// throws ConfigError from here.
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
  /// `ptr`, when neither is a live allocation (freed, by an earlier or a
  /// racing free(), or never from here), counted in
  /// glassbox_host_usage_errors_total{error}.
  ///
  /// With StreamLife::outlives_allocator (see host_backend.hpp) the caller
  /// promises the stream stays valid: when a block was used on that stream
  /// alone, free() records no event. The block joins the stream's open
  /// group, and one event, recorded when the freeing thread next runs out
  /// of cached blocks (once the group holds thread_cache blocks, or nothing
  /// else of its is in flight) or when events are processed, covers every
  /// block of the group: an event on a stream completes only after all work
  /// queued before it. One record and one poll then serve a group of blocks
  /// where a record and a poll per block were due. Recording on a destroyed
  /// stream is undefined: without the promise the event is recorded in
  /// free(). A group whose stream captures when it would be recorded waits
  /// for the capture to end.
  bool record_stream(void* ptr, void* ctx, StreamId stream, StreamLife life = StreamLife::unknown);
  /// What try_record_stream() did.
  enum class RecordOutcome { recorded, unknown_memory, freed };
  /// record_stream() that answers instead of throwing, for callers that ask
  /// about any memory, as PyTorch's copy kernel asks its host allocator about
  /// pageable memory too: `unknown_memory` (no allocation of this allocator)
  /// is not counted, `freed` is, as record_stream()'s.
  RecordOutcome try_record_stream(void* ptr, void* ctx, StreamId stream, StreamLife life = StreamLife::unknown);

  /// Records the default pool's open groups (see record_stream), then polls
  /// its pending events, every thread's shard of them (the calling thread's
  /// first), each oldest first, stopping at the first that has not
  /// completed; then trims the cache to max_cached_bytes.
  /// Never throws for a failed poll.
  void process_events();
  /// Polls pending events of `size`'s class only, until one block of that
  /// class becomes free.
  void process_events_for_size(std::size_t size);
  /// Frees the default pool's free blocks (thread caches included) and
  /// empties private pools that were released.
  void empty_cache();

  /// From now until end_allocate_to_pool(id), allocations whose current
  /// stream `filter` accepts come from private pool `id` (created on first
  /// use); the first active pool whose filter accepts wins. While any pool is
  /// active, every allocate() asks the backend for its current stream and
  /// runs the filters under a shared lock; with none active, that check is a
  /// single relaxed load, so capture support costs the common path nothing.
  /// Each call takes one use of the pool, which release_pool() gives back.
  /// Throws Error when `id` is already active.
  void begin_allocate_to_pool(PoolId id, std::function<bool(StreamId)> filter);
  /// Stops sending allocations to pool `id`. The pool keeps its blocks, and
  /// blocks of it freed later go back to it rather than to the default pool,
  /// ready for the next begin_allocate_to_pool(id) (a graph captured again,
  /// or another graph sharing the pool). Throws Error when `id` is not active.
  void end_allocate_to_pool(PoolId id);
  /// Gives back one use of pool `id`. At none, the next empty_cache() returns
  /// the pool's free blocks to the backend and drops the pool once it holds
  /// no block; a block allocated during capture and used on a stream never
  /// becomes free, so a pool that has one stays until the allocator is
  /// destroyed. A begin_allocate_to_pool(id) before then takes the pool up
  /// again. Throws Error when there is no pool `id`, and UsageError while it
  /// is still active (end_allocate_to_pool() comes first).
  void release_pool(PoolId id);

  /// The statistics now, per size class and in total. Blocks in thread caches
  /// count as cached, not active. Not one atomic snapshot: each class is read
  /// under its own lock while other threads go on allocating. Reaching into
  /// every thread's cache costs one membarrier system call, which interrupts
  /// each CPU running a thread of this process (unless GLASSBOX_NO_MEMBARRIER
  /// or the kernel ruled it out, see detail/biased_lock.hpp): poll it at a
  /// monitoring rate, not per allocation.
  HostStats stats() const;
  /// Zeroes what stats() accumulates: `allocated` and `freed` of every Stat,
  /// the backend alloc/free timings, and each class's `requests` and
  /// `cache_hits`; current values and peaks stay. The metric series are left
  /// alone: Prometheus counters must only grow, and other allocators may
  /// share the series.
  void reset_accumulated_stats();
  /// Lowers every peak of stats() to its current value, to measure the peak
  /// of what follows.
  void reset_peak_stats();

  /// Calls `observer` at each out-of-memory, just before allocate() throws
  /// OutOfMemoryError, on the allocating thread with no allocator lock held.
  /// An exception from it is caught and reported through Options::warn.
  /// Each out-of-memory also counts in glassbox_host_oom_total, writes the
  /// config's oom_snapshot, and adds a "glassbox.host_allocator.oom" event
  /// to the slow-path span.
  void add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer);

  const HostAllocatorConfig& config() const noexcept;
  /// The block size a request of `size` gets.
  std::size_t round_size(std::size_t size) const;

 private:
  // Defined in core/src/host_allocator/allocator_impl.hpp. Shared, because
  // each thread's list of its caches (thread_cache.cpp) holds it weakly: an
  // allocator may die before the threads that used it, or after them.
  struct Impl;
  friend struct LocalCacheEntry;  // that list's entry, which names Impl
  std::shared_ptr<Impl> impl_;
};

}  // namespace glassbox::host_allocator
