#pragma once
// The caching host allocator's insides, shared by its source files.
//
// Lock order (outer first): publish_mu; trim_mu; instance_mu; caches_mu; a thread cache's lock
// (remote side; its owner never waits for it);
// a pool's class lock, then its blocks_mu; slow_mu; a class record's mu.
// an event shard's mu and oom_mu are taken alone; a block's lock is taken alone but for
// the OOM snapshot, which takes it last, under its pool's blocks_mu (nothing
// is taken while a block's lock is held, so that cannot deadlock).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "block_streams.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/detail/biased_lock.hpp"
#include "glassbox/trace/counter_track.hpp"
#include "glassbox/trace/span.hpp"
#include "spin_lock.hpp"

namespace glassbox::host_allocator {

// Two cache lines aligned: blocks of different threads are written on every
// allocate/free pair and must not share a line, and the context allocate()
// hands out (context_of) keeps a tag in the address's low seven bits.
struct alignas(128) Block {
  void* ptr = nullptr;
  std::size_t size = 0;
  std::uint32_t cls = 0;
  PoolId pool;
  // Guards `streams`, `captured`, `retired` and the writes of `event_count`
  // once the block is handed out (record_stream may come from another thread
  // than free). Two frees do without it: an owner's that no other record can
  // race takes the streams under its thread cache's lock, which keeps the
  // snapshots out (Impl::free_own_with_streams), and a free whose streams
  // were all done gives its count back alone (Impl::release_done).
  detail::SpinLock lock;
  // kHandedOut, plus kOnStreams once record_stream added a stream. One word,
  // so that free() and a racing record_stream agree on who came first:
  // record_stream sets kOnStreams by compare-exchange only while kHandedOut
  // is set, and adds its stream under `lock` in the same step; free clears
  // the word (Impl::settle_free says how). Either the record lands first and
  // free sees kOnStreams (and takes the streams, see `lock`), or the free
  // lands first and the record throws UsageError: never lost.
  static constexpr std::uint8_t kHandedOut = 1;
  static constexpr std::uint8_t kOnStreams = 2;
  std::atomic<std::uint8_t> use{0};
  // The thread that allocated it (thread_token()): while only owners record
  // on their blocks, an owner's free cannot race a record.
  std::atomic<const void*> owner{nullptr};
  // Used during graph capture: allocated while its stream captured, or
  // recorded on a capturing stream. A replay may read it at any later time.
  bool captured = false;
  // Every record_stream on it since it was handed out promised that the
  // stream outlives the allocator (StreamLife): its event may be deferred.
  // Next to `captured`: a hand-out sets both with one store.
  bool streams_outlive = true;
  bool retired = false;  // kept out of reuse for good, and counted so
  BlockStreams streams;
  // For the OOM snapshot: bytes asked by its current user (atomic, as the
  // snapshot reads it while another thread may hand the block out).
  std::atomic<std::size_t> requested{0};
  // Uses of it since its last free that no completed event has answered yet.
  // Atomic, as snapshots read it under `lock` while release_done writes it
  // without: no event of the block is queued then, so that free is its one
  // writer.
  std::atomic<int> event_count{0};
  // Its writers never race (see `lock`): a load and a store, no read-modify-write.
  void count_events(int n) noexcept {
    event_count.store(event_count.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t freed_tick = 0;  // when it was last freed (Impl::tick), for the LRU trim
  // Past the two lines the pair touches: the next block of the group one
  // event covers (EventGroup), or null, and the block's creation time.
  Block* group_next = nullptr;
  std::chrono::steady_clock::time_point created;
};

// The context allocate() hands out for a block: its address, with 1 + its
// class in the low bits when a thread cache may keep it (ThreadCache::tag),
// else 0. free() finds the slot from the context alone: no load from the
// block on the chain from one cached pair to the next.
inline constexpr std::uintptr_t kTagMask = alignof(Block) - 1;
inline void* tagged(Block* b, std::uintptr_t tag) noexcept {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(b) | tag);
}
inline Block* block_of(void* ctx) noexcept {
  return reinterpret_cast<Block*>(reinterpret_cast<std::uintptr_t>(ctx) & ~kTagMask);
}
inline std::uintptr_t tag_of(const void* ctx) noexcept { return reinterpret_cast<std::uintptr_t>(ctx) & kTagMask; }

struct FreeList {
  std::mutex mu;
  std::vector<Block*> blocks;
};

// Blocks one event covers: `head` and the blocks chained from it through
// Block::group_next (one block, unless its event was deferred); and where
// the event stands among others: the stream it was recorded on (its serial,
// HostBackend::stream_serial), the thread that recorded it and that
// thread's count of records so far. Of two events one thread recorded on
// one stream, the later completes after the earlier (stream order); across
// threads no order holds (two records race to the driver, and then to the
// shard's lock), nor in the shard's queue.
struct EventGroup {
  EventId event = 0;
  Block* head = nullptr;
  std::uint64_t stream_serial = 0;  // 0: unknown, in no order with any other
  std::uint32_t recorder = 0;
  std::uint64_t seq = 0;
};

// The group of an event the calling thread has just recorded on the stream
// of `stream_serial`, stamped with the thread and its count of records.
EventGroup just_recorded(EventId event, Block* head, std::uint64_t stream_serial) noexcept;

// Whether two events were recorded by one thread on one known stream.
inline bool same_source(const EventGroup& a, const EventGroup& b) noexcept {
  return a.stream_serial != 0 && a.stream_serial == b.stream_serial && a.recorder == b.recorder;
}

// Blocks freed on one long-lived stream since its last event (deferred: see
// record_stream), waiting for the event that will cover them all.
struct OpenGroup {
  StreamId stream = 0;
  Block* head = nullptr;
  int blocks = 0;
  // `blocks` when a miss of its shard last left it open: a group that has not
  // grown since is recorded at the next (its threads free on other streams now).
  int blocks_at_last_miss = 0;
  bool uncacheable = false;  // holds a block no thread cache takes: recorded at the next miss
};

// A share of a pool's pending events: those of the blocks that threads
// given this shard freed. A thread polls its own shard first, and the others
// only before it would make a new block: with one queue for all, sixteen
// threads on the record path spent half their time spinning on its lock.
// Cache-line aligned: each shard's lock and count are written by its threads.
struct alignas(64) EventShard {
  detail::SpinLock mu;                    // held for one deque or open-group operation
  std::deque<EventGroup> events;          // newest at the front
  std::atomic<std::int64_t> pending{0};   // events.size(), readable without mu
  std::vector<OpenGroup> open;            // one per stream, in the order first freed on
  std::atomic<std::int64_t> deferred{0};  // blocks in `open`, readable without mu
  // Blocks of the default pool freed here that wait on events, open groups
  // included (or were retired: for good), by class; summed over the shards
  // at scrape time (Impl::waiting_count). Here, not in the class's record:
  // on the record path every free and every reuse changes it, and one
  // shared count per class was a line that sixteen threads met at each.
  std::array<std::atomic<std::int64_t>, SizeClasses::kCount> waiting{};
  // Under mu: how many younger events of its thread and stream the probe of
  // a shared query leaves in front of it: what the GPU is found to lag
  // behind this shard's records (Impl::release_by_probe), and what
  // Impl::batches() lets wait beyond a cache's worth.
  int probe_lag = 1;
  // The thread and stream of the event a poll released last (Impl::batches:
  // the stream a thread keeps freeing on). Atomics, not under mu: a poll
  // notes them after its release without taking the lock again. Two polls
  // of one shard at once may leave one's thread with the other's stream;
  // batches() then misjudges once, which costs a block or a poll, not safety.
  std::atomic<std::uint64_t> released_stream{0};
  std::atomic<std::uint32_t> released_recorder{0};
  void note_released(const EventGroup& e) noexcept {
    released_stream.store(e.stream_serial, std::memory_order_relaxed);
    released_recorder.store(e.recorder, std::memory_order_relaxed);
  }
  EventGroup last_released() const noexcept {
    return EventGroup{.stream_serial = released_stream.load(std::memory_order_relaxed),
                      .recorder = released_recorder.load(std::memory_order_relaxed)};
  }
};

// The calling thread's event shard (1 + its index; 0 until chosen).
extern thread_local constinit std::uint32_t tl_event_shard;

struct BlockPool {
  // As many as the GPU machine's cores: threads are given shards in turn,
  // so up to this many threads never share one. (The typed test
  // AProbeReleasesNoEventAnotherThreadRecorded counts on 16.)
  static constexpr std::uint32_t kEventShards = 16;
  explicit BlockPool(PoolId pool_id) : id(pool_id) {}
  PoolId id;
  std::array<FreeList, SizeClasses::kCount> classes;
  std::mutex blocks_mu;
  std::unordered_set<Block*> blocks;
  std::unordered_map<void*, Block*> by_ptr;
  std::array<EventShard, kEventShards> shards;
  EventShard& own_shard() noexcept {
    if (tl_event_shard == 0) [[unlikely]]
      tl_event_shard = next_event_shard();
    return shards[tl_event_shard - 1];
  }
  // Blocks of class `cls` waiting in every shard.
  std::int64_t waiting(std::uint32_t cls) const noexcept {
    std::int64_t n = 0;
    for (const EventShard& s : shards) n += s.waiting[cls].load(std::memory_order_relaxed);
    return n;
  }
  // Events pending in every shard; each shard's count read once.
  std::int64_t pending() const noexcept { return sum(&EventShard::pending); }
  // Blocks in every shard's open groups.
  std::int64_t deferred() const noexcept { return sum(&EventShard::deferred); }
  std::int64_t sum(std::atomic<std::int64_t> EventShard::*count) const noexcept {
    std::int64_t n = 0;
    for (const EventShard& s : shards) n += (s.*count).load(std::memory_order_relaxed);
    return n;
  }
  static std::uint32_t next_event_shard() noexcept;
};

struct PrivatePool {
  explicit PrivatePool(PoolId id) : blocks(id) {}
  BlockPool blocks;
  int use_count = 1;
};

// The exported series of one bucket, resolved the first time a class of it is
// used. Shared by every allocator on the registry; each adds what changed
// since its last scrape (Impl::publish).
struct ClassMetrics {
  metrics::Counter requests;
  metrics::Counter hits;
  metrics::UpDownCounter active_blocks;
  metrics::UpDownCounter free_blocks;
  metrics::UpDownCounter pending_blocks;
  metrics::UpDownCounter active_bytes;
};

// What publish() last added to a class's series.
struct ClassView {
  std::int64_t held = 0;
  std::int64_t requests = 0;
  std::int64_t hits = 0;
  std::int64_t active = 0;
  std::int64_t free = 0;
  std::int64_t pending = 0;
};

// One class's counts, this allocator's own: the bucket's series (requests,
// blocks by state, active and cached bytes, rounded bytes) follow from them
// at scrape time. A thread with a cache counts hits and frees in its cache's
// slot (ThreadCache::Slot), next to the blocks a cached pair touches anyway;
// these cells (in no family) take misses, the counts of threads without a
// cache, and a cache's counts when its thread exits.
struct ClassCounts {
  metrics::Counter hits = metrics::Counter::create({});    // allocate() calls served from a cache
  metrics::Counter misses = metrics::Counter::create({});  // allocate() calls that made a block
  metrics::Counter freed = metrics::Counter::create({});   // free() calls
  ClassMetrics* series = nullptr;
  ClassView published;  // guarded by Impl::publish_mu
};

// A class's counts summed over the cells and every thread cache.
struct ClassTotals {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t freed = 0;
  std::uint64_t requests() const { return hits + misses; }
};

// A count only its owner thread writes: a load and a store, no
// read-modify-write; other threads read it at scrape time.
inline void bump(std::atomic<std::uint64_t>& count, std::uint64_t n) noexcept {
  count.store(count.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Per class, over all pools. `active_*` count blocks out of the shared free
// lists (in use, in a thread cache, or waiting on events).
struct ClassRecord {
  std::mutex mu;
  Stat allocations;
  Stat allocated_bytes;
  Stat active_requests;
  Stat active_bytes;
  std::uint64_t requests_base = 0;  // counter values at the last reset
  std::uint64_t hits_base = 0;
  // The exact peak of handed-out blocks (active_requests less the blocks in
  // thread caches), kept without a shared write on the thread-cache path:
  //   peak_out - handed_out == slack + the credits of every thread cache's slot.
  // A block freed into a thread cache earns that slot a credit; a hit spends
  // one. A hand-out with no credit to spend takes `slack`, and when there is
  // none, first reclaims every cache's credits (reclaim_credits: the caches
  // held, one heavy fence); only with none anywhere is it a new peak.
  std::int64_t peak_out = 0;
  std::atomic<std::int64_t> slack{0};  // written under mu; read relaxed outside as a hint
  // Private pools' blocks waiting on events (or retired); the default
  // pool's are counted in its event shards (EventShard::waiting).
  std::atomic<std::int64_t> private_waiting{0};
  std::atomic<ClassCounts*> counts{nullptr};  // set once, under Impl::counts_mu
  std::unique_ptr<ClassCounts> owned_counts;
};

// A thread's free blocks of the default pool, per class. Only blocks up to
// kMaxBlock: the per-pair cost matters for small staging buffers, and large
// pinned blocks should not sit idle in one thread's cache. Its owner thread
// takes `lock` on the owner side; empty_cache(), stats() and the allocator's
// teardown take it on the remote side (for_each_cache); the owner's exit
// needs only caches_mu (retire_cache). Aligned as its slots (128 bytes, at
// least a cache line): every cached pair writes its lock, a slot and
// requested_bytes, and two threads' caches allocated side by side must not
// share a line.
struct alignas(128) ThreadCache {
  static constexpr int kCapacity = 8;
  static constexpr std::size_t kMaxBlock = std::size_t{1} << 20;
  // 128 bytes apart: free() finds a block's slot with one shift of its
  // class, on the chain of loads from one cached pair to the next. Every
  // block in a slot is its owner's (Block::owner: free()'s own path keeps
  // only those, keep_cached() makes them so), so that a hit need not say so.
  struct alignas(128) Slot {
    int count = 0;
    // The slot's credits (ClassRecord::peak_out) are count - uncredited +
    // surplus, one of the two 0: the `uncredited` blocks at the bottom of the
    // stack have no credit to spend, the `surplus` credits no block. A free
    // into the cache earns a credit and a hit spends one, so the cached pair
    // moves `count` alone, and a hit's check is one comparison.
    int uncredited = 0;
    int surplus = 0;
    int credit() const noexcept { return count - uncredited + surplus; }
    void set_credit(int credits) noexcept {
      uncredited = std::max(0, count - credits);
      surplus = std::max(0, credits - count);
    }
    // Whether a block is cached that may spend a credit.
    bool credited() const noexcept { return count > uncredited; }
    // A block that spends a credit, or null (none cached, or none credited).
    Block* pop_credited() noexcept { return credited() ? blocks[--count] : nullptr; }
    // A block that spends no credit (there is one: count > 0).
    Block* pop_uncredited() noexcept {
      const int credits = credit();
      Block* b = blocks[--count];
      set_credit(credits);
      return b;
    }
    // Before the blocks: a pair that keeps one block cached touches one line.
    std::atomic<std::uint64_t> hits{0};   // this thread's allocate() hits (any pool, any size)
    std::atomic<std::uint64_t> freed{0};  // this thread's free() calls
    Block* blocks[kCapacity];
  };
  detail::BiasedLock lock;
  // Counts of the owner's (CacheCount), on the lock's line, before the slots' alignment.
  std::atomic<std::uint64_t> requested_bytes{0};  // bytes its allocate() calls asked for
  std::atomic<std::uint64_t> done_queries{0};     // its stream queries that found the stream done
  std::array<Slot, SizeClasses::kCount> slots{};

  // Whether a block may be kept in a thread cache: the default pool's, up to kMaxBlock.
  static bool may_keep(const Block& b) noexcept { return b.pool == PoolId{} && b.size <= kMaxBlock; }
  // A kept block's context tag (context_of): 1 + its class, 0 for none.
  static std::uintptr_t tag(std::uint32_t cls) noexcept { return cls + 1; }
  static std::size_t class_of_tag(std::uintptr_t tag) noexcept { return tag - 1; }
};
// Every class a cache may keep has a tag that fits below the block's alignment.
static_assert(SizeClasses(SizeClassPolicy::pow2x4).index(ThreadCache::kMaxBlock) + 1 <= kTagMask);
static_assert(SizeClasses(SizeClassPolicy::pow2).index(ThreadCache::kMaxBlock) + 1 <= kTagMask);
// A count that each thread cache keeps for its owner, on a line the owner's
// calls touch anyway (a metric cell costs the thread-local arena's lines),
// plus a cell for threads without a cache and for retired caches; publish()
// adds the sum's growth to the series.
template <std::atomic<std::uint64_t> ThreadCache::*kInCache>
struct CacheCount {
  metrics::Counter rest = metrics::Counter::create({});
  std::uint64_t published = 0;  // guarded by Impl::publish_mu

  // `tc`: the calling thread's own cache, or null.
  void add(ThreadCache* tc, std::uint64_t n) const noexcept {
    if (tc != nullptr) {
      bump(tc->*kInCache, n);
    } else {
      rest.inc(n);
    }
  }
  // At the owner's exit, under caches_mu (Impl::retire_cache).
  void retire(const ThreadCache& tc) const noexcept { rest.inc((tc.*kInCache).load(std::memory_order_relaxed)); }
  // The sum's growth since the last call. Caller holds publish_mu and caches_mu.
  std::uint64_t growth(const std::vector<std::shared_ptr<ThreadCache>>& caches) {
    std::uint64_t total = rest.value();
    for (const auto& tc : caches) total += ((*tc).*kInCache).load(std::memory_order_relaxed);
    return total - std::exchange(published, total);
  }
};

inline void* context_of(Block* b) noexcept {
  return tagged(b, ThreadCache::may_keep(*b) ? ThreadCache::tag(b->cls) : 0);
}

// The blocks the calling thread last found by their context in
// record_stream (Impl::find_block), so that its next record on one needs no
// lookup under the pool's shared lock: at sixteen threads that lock was met
// on every record. Valid while `epoch` equals the allocator's count of
// blocks taken out of its tables (Impl::blocks_forgotten): a block can only
// be deallocated after that count moved. One allocator's at a time.
struct KnownBlocks {
  static constexpr std::size_t kSlots = 64;
  std::uint64_t allocator = 0;
  std::uint64_t epoch = 0;
  std::array<const void*, kSlots> slots{};
  // Blocks are cache-line aligned: the bits above the line index the slots.
  const void*& slot(const void* b) noexcept { return slots[(reinterpret_cast<std::uintptr_t>(b) >> 6) % kSlots]; }
  const void* slot(const void* b) const noexcept { return slots[(reinterpret_cast<std::uintptr_t>(b) >> 6) % kSlots]; }
};
extern thread_local constinit KnownBlocks tl_known_blocks;

// The calling thread's cache of the allocator it used last (by id): the
// fast path of Impl::local_cache(), defined in thread_cache.cpp. One
// thread-local object rather than one per field: each thread-local costs the
// cached pair its own load of the thread pointer and address arithmetic.
struct LocalState {
  std::uint64_t cache_owner = 0;
  ThreadCache* cache = nullptr;
  // The stream record_stream last asked cache_owner's backend about, and
  // its answer (Impl::stream_outlives); valid where asked is set.
  StreamId last_stream = 0;
  bool last_stream_outlives = false;
  bool last_stream_asked = false;
};
extern thread_local constinit LocalState tl_local [[gnu::tls_model("initial-exec")]];
// Tells live threads apart: one address per thread (Block::owner).
inline const void* thread_token() noexcept { return &tl_local; }

struct Metrics {
  metrics::Registry& registry;
  metrics::Counter requested_bytes;
  metrics::Counter rounded_bytes;
  metrics::Gauge reserved_bytes;
  metrics::UpDownCounter cached_bytes;
  metrics::UpDownCounter pending_events;
  metrics::UpDownCounter deferred_blocks;
  metrics::Counter group_events;    // events recorded for open groups
  metrics::Counter group_blocks;    // blocks those events covered
  metrics::Counter covered_events;  // events released by a later one's query, with none of their own
  metrics::Counter streams_done;    // stream queries at frees that found the stream's work all run
  metrics::Counter streams_busy;    // stream queries at frees that found work left
  metrics::Histogram backend_alloc_seconds;
  metrics::Counter unrecyclable_captured;
  metrics::Counter unrecyclable_record_failed;
  metrics::Counter unrecyclable_query_failed;
  metrics::Family<metrics::Counter>& event_errors;  // by the backend's error name
  metrics::Counter oom;
  metrics::Counter record_after_free;  // record_stream on a freed block: UsageError
  metrics::Counter record_unknown;     // record_stream on memory not ours: UsageError
  explicit Metrics(metrics::Registry& r);
  ClassMetrics* resolve(unsigned bucket);
  std::mutex mu;
  std::map<unsigned, std::unique_ptr<ClassMetrics>> by_bucket;
};

// The allocator's counter tracks (trace file, NVTX), each named with the
// allocator's id and told where the shared state changes, so the cached pair
// of a thread cache touches none: reserved at a new block and a release;
// cached (every pool's shared free lists) where a block leaves or joins them,
// read from the atomics count_free() already keeps; active (reserved less
// cached: in use, in a thread cache, or waiting on events, as ClassRecord
// counts them) at both; the event backlog.
struct Tracks {
  Tracks(std::uint64_t allocator_id, const std::atomic<std::int64_t>& default_free_bytes,
         const BlockPool& default_pool);
  // The backlog changed by `events` in `pool`: the default pool's count is
  // its shards' own (EventShard::pending), so that a record path shares no
  // new line.
  void pending_changed(const BlockPool& pool, std::int64_t events) noexcept {
    if (pool.id != PoolId{}) private_pending.fetch_add(events, std::memory_order_relaxed);
    pending_events.changed();
  }
  void reserved_changed(std::int64_t bytes) noexcept;
  void shared_lists_changed() noexcept {
    cached.changed();
    active.changed();
  }

  std::atomic<std::int64_t> reserved_bytes{0};
  std::atomic<std::int64_t> private_free_bytes{0};  // private pools' shared lists
  std::atomic<std::int64_t> private_pending{0};     // private pools' events
  trace::CounterTrack reserved;
  trace::CounterTrack cached;
  trace::CounterTrack active;
  trace::CounterTrack pending_events;
};

struct CachingHostAllocator::Impl : std::enable_shared_from_this<Impl> {
  Impl(std::shared_ptr<HostBackend> b, Options o);
  ~Impl();

  // allocate / free
  // allocate()'s common case, whole and inline: a credited block of the
  // calling thread's cache, handed out under the cache's owner side alone,
  // writing only the thread's own lines. Null when anything else must come
  // first (a capture active, a cap, NVTX memory regions: hit_owner; no cache
  // yet, an empty or uncredited slot): allocate_slow() does it all then.
  // Events are polled only in allocate_uncached(): a thread with a block at
  // hand pays no driver call for a poll (the seed polls at every
  // allocation), and its pending blocks are reclaimed at its next miss, or
  // by any thread before it makes a block.
  Block* take_cached(std::uint32_t cls, std::size_t size) noexcept {
    LocalState& local = tl_local;
    if (local.cache_owner != hit_owner.load(std::memory_order_relaxed)) return nullptr;
    return pop_cached(*local.cache, cls, size);
  }
  // take_cached() of the hit it leaves for a cap or NVTX memory regions:
  // the same, plus the cap's count and NVTX's mark.
  Block* take_cached_marked(std::uint32_t cls, std::size_t size) noexcept {
    ThreadCache* tc = local_cache();
    if (tc == nullptr || !captures_empty.load(std::memory_order_relaxed)) return nullptr;
    Block* b = uncache(pop_cached(*tc, cls, size));
    if (b != nullptr && config.nvtx_mem_regions) backend->mark_requested(b->ptr, size, b->size);
    return b;
  }
  // The hit itself, from the calling thread's own cache `tc`.
  Block* pop_cached(ThreadCache& tc, std::uint32_t cls, std::size_t size) noexcept {
    if (!tc.lock.owner_try_lock()) return nullptr;
    auto& slot = tc.slots[cls];  // a class above ThreadCache::kMaxBlock: always empty
    if (!slot.credited()) {
      tc.lock.owner_unlock();
      return nullptr;
    }
    Block* b = slot.blocks[--slot.count];
    tc.lock.owner_unlock();
    hand_back(b, size);
    bump(slot.hits, 1);
    bump(tc.requested_bytes, size);
    return b;
  }
  // allocate() but for a hit: size 0, too large (throws), or allocate_uncached().
  [[gnu::noinline]] HostAllocation allocate_slow(std::size_t size);
  Block* allocate_uncached(std::size_t size, std::uint32_t cls);
  // Into the calling thread's cache, when the block may go there and its
  // slot has room. The block becomes the thread's (ThreadCache::Slot).
  bool keep_cached(ThreadCache& tc, Block* b) noexcept {
    if (!ThreadCache::may_keep(*b)) return false;
    b->owner.store(thread_token(), std::memory_order_relaxed);
    return keep_in_slot(tc, tc.slots[b->cls], b, capped());
  }
  // keep_cached() of a block that may be kept, and is the thread's, into its
  // class's `slot`. `count_bytes` is capped(), read before any store here:
  // free()'s own path runs uncapped only and passes false, so no call is
  // left in it.
  bool keep_in_slot(ThreadCache& tc, ThreadCache::Slot& slot, Block* b, bool count_bytes) noexcept {
    if (!tc.lock.owner_try_lock()) return false;
    const bool kept = slot.count < config.thread_cache;
    if (kept) {
      // A load, not an increment: blocks freed at once may share a tick.
      b->freed_tick = tick.load(std::memory_order_relaxed);
      slot.blocks[slot.count++] = b;  // earns a credit
      // Counted before unlocking: once unlocked, empty_cache() or a trim
      // may drain the slot and free the block.
      if (count_bytes) note_cached(b->size);
    }
    tc.lock.owner_unlock();
    return kept;
  }
  // free() past its own path, from where it left: the whole of it (no cache
  // of this allocator yet, a cap or record_mode not kOwnersOnly: free_owner;
  // another thread's block), a free that met record_mode's switch, or a
  // settled block that found no room in the cache. Each is free()'s one tail
  // call.
  [[gnu::noinline]] void free_slow(Block* b);
  [[gnu::noinline]] void free_after_switch(Block* b);
  [[gnu::noinline]] void free_settled(Block* b, ThreadCache* tc);
  // No lock: the block is on no list, so only this caller can see it until
  // allocate() returns; record_stream and free come after, in its order.
  void hand_out(Block* b, std::size_t size, bool captured) noexcept {
    b->owner.store(thread_token(), std::memory_order_relaxed);
    hand_back(b, size, captured);
  }
  // hand_out() of a block whose owner is the caller already: its own cache's.
  void hand_back(Block* b, std::size_t size, bool captured = false) noexcept {
    b->use.store(Block::kHandedOut, std::memory_order_relaxed);
    b->captured = captured;
    b->streams_outlive = true;
    b->requested.store(size, std::memory_order_relaxed);
  }
  Block* take_local(BlockPool& pool, std::uint32_t cls);
  bool cached_locally(BlockPool& pool, std::uint32_t cls);  // whether take_local would find one
  Block* take_central(BlockPool& pool, std::uint32_t cls);
  Block* create_block(std::size_t size, std::uint32_t cls, BlockPool& pool);
  void* backend_allocate_or_retry(std::size_t size, std::size_t rounded, trace::Span& span);
  // Counts the out-of-memory, writes the snapshot, tells the span and the
  // observers (oom_snapshot.cpp).
  void on_out_of_memory(std::size_t size, std::size_t rounded, trace::Span& span);
  // Returns the snapshot's path, or empty (and warns) when it could not be written.
  std::string write_oom_snapshot(std::size_t size, std::size_t rounded, const HostStats& stats);
  // Runs fn(block, in_a_thread_cache) on every block of every pool, with the
  // block's lock held (oom_snapshot.cpp).
  template <class Fn>
  void for_each_block(Fn fn);
  void on_allocated(Block* b, std::size_t size, bool hit, bool captured);
  void note_cached(std::size_t bytes);  // under a cap: a block of `bytes` went into a thread cache
  void count_free(const BlockPool& pool, std::int64_t bytes);  // on pool's shared lists: +bytes
  void count_doomed(const BlockPool& pool, const Block& b);    // off them, to be deallocated
  // `stamped`: b->freed_tick is set already (a thread cache's block, stamped when cached).
  // `from_thread_cache`: the block was free already (drain_cache), not
  // handed out, so the handed-out count does not change.
  void push_central(BlockPool& pool, Block* b, bool stamped = false, bool from_thread_cache = false);
  // Exact peaks (ClassRecord::peak_out). The caller holds r.mu.
  static void count_handed_out(ClassRecord& r);
  // Whether a hand-out of `cls` would have to reclaim credits first: a class
  // thread caches may hold, whose record has no slack.
  bool needs_credits(std::uint32_t cls) const;
  // Moves every thread cache's credits of `cls` into its record's slack,
  // when it has none: before a hand-out that must otherwise raise the peak.
  void reclaim_credits_if_needed(std::uint32_t cls);
  // A thread-cache hit with no credit to spend (after reclaim_credits).
  [[gnu::noinline]] Block* take_local_uncredited(ThreadCache& tc, std::uint32_t cls);
  // b (or null) left a thread cache: under a cap, counts it out.
  Block* uncache(Block* b) noexcept {
    if (b != nullptr && capped()) thread_cached_bytes.fetch_sub(static_cast<std::int64_t>(b->size));
    return b;
  }
  // Moves the credits of `cls` from every cache into slack; caller holds the
  // caches and r.mu.
  void reclaim_credits(std::uint32_t cls, ClassRecord& r);
  // free()'s side of the race with record_stream: clears b->use and says
  // whether the block is on streams. An owner's free needs no
  // read-modify-write while only owners have recorded (record_mode).
  bool settle_free(Block* b, const void* me);
  // Whether settle_own() may settle b's free: only owners have recorded,
  // and `me` (thread_token()) owns the block.
  bool owners_only_mine(const Block* b, const void* me) const noexcept {
    return record_mode.load(std::memory_order_relaxed) == kOwnersOnly && b->owner.load(std::memory_order_relaxed) == me;
  }
  enum class Settled : std::uint8_t { off_streams, on_streams, switched };
  // settle_free() of an owner's free, once owners_only_mine(); `switched`:
  // a record from another thread is switching record_mode now, and only
  // on_streams_after_switch() can tell.
  Settled settle_own(Block* b) noexcept {
    // No record can race this free, unless one from another thread is
    // switching the mode now. Its heavy fence splits this free in two: what
    // came before it is seen by the record (which then finds the block
    // freed), what comes after sees the switch, as the second load of the
    // mode does.
    const std::uint8_t use = b->use.load(std::memory_order_relaxed);
    b->use.store(0, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (record_mode.load(std::memory_order_relaxed) != kOwnersOnly) [[unlikely]]
      return Settled::switched;
    return use == (Block::kHandedOut | Block::kOnStreams) ? Settled::on_streams : Settled::off_streams;
  }
  [[gnu::noinline]] bool on_streams_after_switch(Block* b);  // a free that met record_mode's switch
  // A record or a free of a block another thread allocated switches
  // record_mode to kShared for good before it touches the block: one heavy
  // fence for the owners' frees in flight, and every thread cache held once,
  // which waits out the owners' records in flight (record_own).
  void note_foreign_use(const Block* b);
  // record_stream of an owner's block while record_mode is kOwnersOnly:
  // under the owner's cache lock, whose owner side is plain stores, where
  // the block's lock and the use word's compare-exchange are two
  // read-modify-writes on every record (the record path's largest own cost,
  // bench/RESULTS.md, session 32). False where it does not apply (another
  // thread's block, no cache of this allocator, the mode switching, a
  // remote holding the cache): the caller records the shared way.
  bool record_own(Block* b, StreamId stream, bool capturing, bool outlives, RecordOutcome& outcome);
  // backend->stream_outlives_allocator(stream), remembered by the calling
  // thread for the last stream it asked about while it holds a cache of
  // this allocator (tl_local): the record path's one other call, a virtual
  // call and a hash probe at every record. A yes cannot go stale: a stream
  // that outlives the allocator keeps its handle for the allocator's life.
  // A stale no (the handle since reused by a stream that would say yes)
  // only records at the free an event that could have been deferred.
  bool stream_outlives(StreamId stream) {
    LocalState& local = tl_local;
    if (local.cache_owner != id) return backend->stream_outlives_allocator(stream);
    if (!local.last_stream_asked || local.last_stream != stream) [[unlikely]] {
      local.last_stream_outlives = backend->stream_outlives_allocator(stream);
      local.last_stream = stream;
      local.last_stream_asked = true;
    }
    return local.last_stream_outlives;
  }
  // Any other record: under the block's lock, by compare-exchange.
  [[gnu::noinline]] RecordOutcome record_shared(Block* b, StreamId stream, bool capturing, bool outlives);
  // record_stream's and try_record_stream's one body (caching_host_allocator.cpp).
  RecordOutcome record(void* ptr, void* ctx, StreamId stream, StreamLife life);
  // Adds `stream` to b's streams; the caller keeps out b's other writers.
  [[gnu::always_inline]] static void add_stream(Block& b, StreamId stream, bool capturing, bool outlives) {
    b.captured = b.captured || capturing;
    b.streams_outlive = b.streams_outlive && outlives;
    b.streams.add(stream);
  }
  // Where b's pool counts it while it waits on events, freed through `shard`.
  std::atomic<std::int64_t>& waiting_count(const BlockPool& pool, EventShard& shard, const Block& b) noexcept {
    return &pool == &default_pool ? shard.waiting[b.cls] : records[b.cls].private_waiting;
  }
  bool batches(const BlockPool& pool, EventShard& own, std::size_t size, std::uint32_t cls) const noexcept;
  // A free of a block some stream used (Settled::on_streams): its streams
  // taken under the block's lock, or by its owner (free_own_with_streams)
  // under the owner's cache lock; then deferred, or queue_events().
  void free_with_streams(Block* b);
  void free_own_with_streams(Block* b, ThreadCache& tc, ThreadCache::Slot& slot);
  struct TakenStreams {
    bool captured = false;
    bool deferrable = false;  // one stream, every record promised it outlives the allocator
  };
  // Moves b's streams to `streams` and counts them in its events; the caller
  // keeps out every other writer and reader of b's streams.
  static TakenStreams take_streams(Block& b, std::vector<StreamId>& streams);
  void free_from_streams(Block* b, std::span<const StreamId> streams, TakenStreams taken);
  // Whether every one of `streams` (none capturing) has run all its work:
  // asked of the backend where the thread's IdleStreamGate lets it. `tc`:
  // the calling thread's cache, which counts the done answers, or null.
  [[gnu::always_inline]] bool streams_done(std::span<const StreamId> streams, ThreadCache* tc);
  // Records b's events on `streams`, or frees it where they turn out done.
  // `asked`: the caller has asked already whether one captures (then
  // `captured`) and whether all are done (not all).
  void queue_events(Block* b, std::span<const StreamId> streams, bool captured, bool asked = false);
  // Frees b, counted as waiting on `streams` events, with none.
  void release_done(Block* b, std::size_t streams);
  // Adds b, freed after use on `stream` alone (promised long-lived), to the
  // stream's open group in the calling thread's shard: no event yet.
  void defer_event(BlockPool& pool, Block* b, StreamId stream);
  // Records one event for each open group of `shard` that holds at least
  // `min_blocks` blocks (or an uncacheable one), covering all of them.
  void record_open_groups(BlockPool& pool, EventShard& shard, int min_blocks);
  void record_group(BlockPool& pool, EventShard& shard, const OpenGroup& group);
  // The size at which a thread records its open group: what its cache takes
  // back of it when it completes, so that the blocks return without a
  // shared list, and one event serves that many frees. A thread thus holds
  // the group it fills and the groups in flight: one when the stream keeps
  // up, more while the pool grows to cover its latency.
  int full_group() const noexcept { return std::max(config.thread_cache, 1); }
  // Keeps a freed block out of reuse for good (its event count never drains)
  // and counts it once, under `reason`.
  void retire(Block* b, metrics::Counter& reason);
  BlockPool& pool_of(const Block* b);
  std::pair<BlockPool*, bool> pool_for_current_stream();
  // The block of a context allocate() handed out (of `ptr`, without one),
  // or null: inline where the calling thread found it before.
  Block* find_block(void* ptr, void* ctx) {
    Block* b = block_of(ctx);
    if (b != nullptr && known_block(b)) [[likely]]
      return b;
    return find_block_slow(ptr, b);
  }
  [[gnu::noinline]] Block* find_block_slow(void* ptr, Block* b);
  Block* find_by_ptr(void* ptr);
  // Whether the calling thread found `ctx` among this allocator's blocks
  // before, and none has left them since (KnownBlocks).
  bool known_block(const void* ctx) const noexcept {
    const KnownBlocks& k = tl_known_blocks;
    return k.allocator == id && k.slot(ctx) == ctx && k.epoch == blocks_forgotten.load(std::memory_order_acquire);
  }
  void remember_block(const Block* b, std::uint64_t epoch) noexcept;
  // Takes b out of pool's tables (the caller holds blocks_mu), to be
  // deallocated: every thread's KnownBlocks is out of date from here.
  void forget(BlockPool& pool, Block* b) {
    blocks_forgotten.fetch_add(1, std::memory_order_acq_rel);
    pool.blocks.erase(b);
    pool.by_ptr.erase(b->ptr);
  }
  // Whether fn(pool) holds for some pool; each pool's blocks_mu is held
  // while fn looks at it.
  template <class Fn>
  bool any_pool(Fn fn);

  // events
  static constexpr std::uint32_t kNoClass = SizeClasses::kCount;
  // release_by_probe's bounds: the deepest lag, and the newest events a
  // probe is looked for among (the lock is held meanwhile).
  static constexpr int kMaxProbeLag = 64;
  static constexpr std::size_t kProbeScan = 2 * kMaxProbeLag;
  // Polls one shard (events.cpp says how); returns a block of class
  // `wanted` it freed, or null. With `fill_cache` (the calling thread's own
  // shard) the other blocks it frees go into the thread's cache where they fit.
  Block* process_shard(BlockPool& pool, EventShard& shard, std::int64_t size, std::uint32_t wanted,
                       bool fill_cache = false);
  // Frees the blocks of a group whose event `poll` found complete (or
  // failed, for good); process_shard says where they go. Returns whether
  // any became free.
  bool release_group(BlockPool& pool, EventShard& shard, const EventGroup& group, EventPoll poll, std::uint32_t wanted,
                     bool fill_cache, Block*& kept);
  // Releases polled events taken off `shard`'s queue and the blocks they
  // cover (release_group); returns whether any block became free, and in
  // `backlog_gone` whether the shard has no event left.
  bool release_polled(BlockPool& pool, EventShard& shard, std::span<const EventGroup> polled, EventPoll poll,
                      std::uint32_t wanted, bool fill_cache, Block*& kept, bool& backlog_gone);
  // One query for many of the shard's events (events.cpp says how).
  enum class ProbeResult { none, pending, released };
  ProbeResult release_by_probe(BlockPool& pool, EventShard& shard, std::uint32_t wanted, bool fill_cache, Block*& kept);
  // Every shard of `pool`, the calling thread's first, until one returns a
  // block of class `wanted`.
  Block* process_events(BlockPool& pool, std::int64_t size, std::uint32_t wanted = kNoClass);
  // The same, skipping the calling thread's shard: allocate() polls these
  // only before it would make a new block.
  Block* process_other_shards(BlockPool& pool, std::int64_t size, std::uint32_t wanted);
  void start_background_thread();

  // thread caches
  ThreadCache* local_cache() {
    if (tl_local.cache_owner == id) [[likely]]
      return tl_local.cache;
    return find_local_cache();
  }
  ThreadCache* find_local_cache();
  void retire_cache(ThreadCache& tc);
  void drain_cache(ThreadCache& tc);
  // Runs fn(cache) on every thread's cache, each held on the remote side;
  // one heavy fence for all of them. Takes caches_mu.
  template <class Fn>
  void for_each_cache(Fn fn);
  // Runs fn() once with every thread's cache held on the remote side (and
  // caches_mu): no cache changes meanwhile, for a snapshot of all of them.
  template <class Fn>
  void with_caches_held(Fn fn);
  // Blocks of class `cls` in thread caches; caller holds the caches.
  std::int64_t cached_in_threads(std::uint32_t cls) const;

  // freeing memory
  void empty_cache();
  // Takes a pool's free blocks off its lists and out of its block table, into
  // `doomed`, for deallocate() once no lock is held.
  void take_free_blocks(BlockPool& pool, std::vector<Block*>& doomed);
  bool capped() const noexcept { return config.max_cached_bytes > 0; }
  bool over_cap() const noexcept {
    return capped() &&
           default_free_bytes.load(std::memory_order_relaxed) + thread_cached_bytes.load(std::memory_order_relaxed) >
               static_cast<std::int64_t>(config.max_cached_bytes);
  }
  void trim_to_cap();
  // Takes least recently freed blocks off the default pool's shared lists
  // into `doomed` until the cached bytes are within the cap.
  void take_over_cap(std::vector<Block*>& doomed);
  void deallocate(Block* b);

  ClassCounts& class_counts(std::uint32_t cls) {
    ClassCounts* cc = records[cls].counts.load(std::memory_order_acquire);
    return cc != nullptr ? *cc : create_class_counts(cls);
  }
  ClassCounts& create_class_counts(std::uint32_t cls);
  // metrics at scrape time
  ClassTotals totals(std::uint32_t cls, const ClassCounts& cc);
  ClassTotals sum_totals(std::uint32_t cls, const ClassCounts& cc) const;  // caller holds caches_mu
  ClassView view(std::uint32_t cls, const ClassCounts& cc);
  void add_class_stats(std::uint32_t cls, HostStats& out) const;  // see stats()
  HostStats stats();
  void publish();

  std::shared_ptr<HostBackend> backend;
  // Read by every record and free, written rarely: on backend's line, where
  // the pair reads already, rather than spread over lines of their own.
  const std::uint64_t id;
  std::atomic<std::uint64_t> blocks_forgotten{0};  // see KnownBlocks
  SizeClasses classes;
  // The cache_owner (LocalState) whose allocate() takes its thread cache's
  // hit inline (hit_owner: no capture active, no cap, no NVTX memory
  // regions) and whose free() keeps its own blocks inline (free_owner: no
  // cap, record_mode kOwnersOnly): `id`, or kNoOwner, which no thread holds.
  // One load and compare each, where the conditions are one apiece. Hints:
  // what the inline paths must see in order, they read again after it
  // (settle_own reads record_mode).
  static constexpr std::uint64_t kNoOwner = ~std::uint64_t{0};
  std::atomic<std::uint64_t> hit_owner{kNoOwner};
  std::atomic<std::uint64_t> free_owner{kNoOwner};
  // hit_owner from what it stands for; the caller holds instance_mu (or
  // constructs), as the writers of captures_empty do.
  void update_hit_owner() noexcept;
  std::atomic<bool> captures_empty{true};
  // Whether free() and record_stream on an owner's block may settle their
  // race by plain loads and stores: kOwnersOnly until some thread records on
  // or frees a block another thread allocated; then kSwitching during one
  // heavy fence and one hold of every cache (note_foreign_use: they order
  // every owner's free and record in flight against the foreign uses that
  // follow), then kShared, where every free takes one exchange and every
  // record the block's lock. kShared from the start without membarrier
  // (detail::asymmetric_fences()).
  static constexpr std::uint8_t kOwnersOnly = 0, kSwitching = 1, kShared = 2;
  std::atomic<std::uint8_t> record_mode{kShared};
  HostAllocatorConfig config;  // its flags the pair reads lie on the next line
  std::function<void(const std::string&)> warn;
  Metrics m;

  BlockPool default_pool{PoolId{}};
  std::array<ClassRecord, SizeClasses::kCount> records;
  std::mutex counts_mu;
  std::mutex publish_mu;
  std::uint64_t collector_id = 0;
  // Free bytes on the default pool's shared lists. Private pools' free blocks
  // belong to their graphs: they leave with release_pool(), so they count
  // neither against the cap nor here (a cap they filled could never be met).
  std::atomic<std::int64_t> default_free_bytes{0};
  // Bytes in thread caches; kept only under a cap (capped()), so that an
  // uncapped allocator's cached pair touches no shared line.
  std::atomic<std::int64_t> thread_cached_bytes{0};
  std::atomic<std::uint64_t> tick{0};
  std::mutex trim_mu;

  mutable std::shared_mutex instance_mu;  // guards the three below
  std::map<PoolId, std::unique_ptr<PrivatePool>> private_pools;
  std::map<PoolId, PrivatePool*> freeable_pools;
  std::vector<std::pair<PoolId, std::function<bool(StreamId)>>> captures;
  std::once_flag warned_private_outside_capture;

  std::mutex caches_mu;
  std::vector<std::shared_ptr<ThreadCache>> caches;
  CacheCount<&ThreadCache::requested_bytes> requested_bytes;
  CacheCount<&ThreadCache::done_queries> done_queries;

  std::mutex slow_mu;  // guards the stats below
  Stat allocations;
  Stat allocated_bytes;
  DurationStat host_alloc_time;
  DurationStat host_free_time;

  std::mutex oom_mu;  // guards oom_observers
  std::vector<std::function<void(const OutOfMemoryInfo&)>> oom_observers;

  std::once_flag background_started;
  std::atomic<bool> background_active{false};
  std::mutex background_mu;
  std::condition_variable background_cv;
  std::thread background;
  // Last: its readers read the members above, from its first sample to its last.
  Tracks tracks{id, default_free_bytes, default_pool};
};

template <class Fn>
bool CachingHostAllocator::Impl::any_pool(Fn fn) {
  auto holds = [&](BlockPool& pool) {
    std::lock_guard lock(pool.blocks_mu);
    return fn(pool);
  };
  if (holds(default_pool)) return true;
  std::shared_lock lock(instance_mu);
  return std::any_of(private_pools.begin(), private_pools.end(),
                     [&](auto& entry) { return holds(entry.second->blocks); });
}

template <class Fn>
void CachingHostAllocator::Impl::with_caches_held(Fn fn) {
  std::lock_guard lock(caches_mu);
  for (auto& tc : caches) tc->lock.request();
  if (!caches.empty() && detail::asymmetric_fences()) detail::heavy_fence();
  for (auto& tc : caches) tc->lock.wait_for_owner();
  fn();
  for (auto& tc : caches) tc->lock.remote_unlock();
}

template <class Fn>
void CachingHostAllocator::Impl::for_each_cache(Fn fn) {
  std::lock_guard lock(caches_mu);
  for (auto& tc : caches) tc->lock.request();
  if (detail::asymmetric_fences()) detail::heavy_fence();
  for (auto& tc : caches) {
    tc->lock.wait_for_owner();
    fn(*tc);
    tc->lock.remote_unlock();
  }
}

}  // namespace glassbox::host_allocator
