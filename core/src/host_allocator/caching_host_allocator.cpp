// allocate / free / record_stream and the pool selection for graph capture.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <sstream>
#include <utility>

#include "allocator_impl.hpp"
#include "glassbox/error.hpp"
#include "glassbox/nvtx/range.hpp"
#include "glassbox/trace/span.hpp"
#include "idle_stream_gate.hpp"

namespace glassbox::host_allocator {

namespace {

std::uint64_t next_allocator_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

const nvtx::RegisteredName& backend_alloc_range() {
  static const nvtx::RegisteredName name("glassbox.host_allocator.backend_alloc");
  return name;
}

std::string pool_text(PoolId id) { return "(" + std::to_string(id.first) + "," + std::to_string(id.second) + ")"; }

}  // namespace

Tracks::Tracks(std::uint64_t allocator_id, const std::atomic<std::int64_t>& default_free_bytes,
               const BlockPool& default_pool)
    : reserved("glassbox.host.reserved_bytes #" + std::to_string(allocator_id),
               [this] { return reserved_bytes.load(std::memory_order_relaxed); }),
      cached("glassbox.host.cached_bytes #" + std::to_string(allocator_id),
             [this, &default_free_bytes] {
               return default_free_bytes.load(std::memory_order_relaxed) +
                      private_free_bytes.load(std::memory_order_relaxed);
             }),
      active("glassbox.host.active_bytes #" + std::to_string(allocator_id),
             [this, &default_free_bytes] {
               return reserved_bytes.load(std::memory_order_relaxed) -
                      default_free_bytes.load(std::memory_order_relaxed) -
                      private_free_bytes.load(std::memory_order_relaxed);
             }),
      pending_events("glassbox.host.pending_events #" + std::to_string(allocator_id), [this, &default_pool] {
        return default_pool.pending() + private_pending.load(std::memory_order_relaxed);
      }) {}

void Tracks::reserved_changed(std::int64_t bytes) noexcept {
  reserved_bytes.fetch_add(bytes, std::memory_order_relaxed);
  reserved.changed();
  active.changed();
}

CachingHostAllocator::Impl::Impl(std::shared_ptr<HostBackend> b, Options o)
    : backend(std::move(b)),
      id(next_allocator_id()),
      classes(o.config.size_classes),
      config(o.config),
      warn(o.warn ? std::move(o.warn)
                  : [](const std::string& w) { std::fprintf(stderr, "glassbox: %s\n", w.c_str()); }),
      m(*o.registry) {
  if (detail::asymmetric_fences()) record_mode.store(kOwnersOnly, std::memory_order_relaxed);
  update_hit_owner();
  if (record_mode.load(std::memory_order_relaxed) == kOwnersOnly && !capped())
    free_owner.store(id, std::memory_order_relaxed);
  collector_id = m.registry.add_collector([this] { publish(); });
}

void CachingHostAllocator::Impl::update_hit_owner() noexcept {
  const bool open = captures_empty.load(std::memory_order_relaxed) && !capped() && !config.nvtx_mem_regions;
  hit_owner.store(open ? id : kNoOwner, std::memory_order_relaxed);
}

ClassCounts& CachingHostAllocator::Impl::create_class_counts(std::uint32_t cls) {
  std::lock_guard lock(counts_mu);
  ClassRecord& r = records[cls];
  if (r.owned_counts == nullptr) {
    r.owned_counts = std::make_unique<ClassCounts>();
    r.owned_counts->series = m.resolve(classes.bucket(cls));
    r.counts.store(r.owned_counts.get(), std::memory_order_release);
  }
  return *r.owned_counts;
}

CachingHostAllocator::CachingHostAllocator(std::shared_ptr<HostBackend> backend, Options options)
    : impl_(std::make_shared<Impl>(std::move(backend), std::move(options))) {}

CachingHostAllocator::~CachingHostAllocator() = default;

void CachingHostAllocator::add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer) {
  std::lock_guard lock(impl_->oom_mu);
  impl_->oom_observers.push_back(std::move(observer));
}

const HostAllocatorConfig& CachingHostAllocator::config() const noexcept { return impl_->config; }

std::size_t CachingHostAllocator::round_size(std::size_t size) const {
  return size == 0 ? 0 : impl_->classes.size(impl_->classes.index(size));
}

// The cached pair's half: a hit of the thread's cache inline, everything
// else one tail call away. No check of the size before the hit: a size of 0
// or above kMaxRequest has a class no thread cache keeps (SizeClasses::index),
// so it misses, and allocate_slow() turns it away.
HostAllocation CachingHostAllocator::allocate(std::size_t size) {
  Impl& a = *impl_;
  const std::uint32_t cls = a.classes.index(size);
  if (Block* b = a.take_cached(cls, size)) [[likely]]
    return {b->ptr, tagged(b, ThreadCache::tag(cls))};  // a cache's block: context_of(b)
  return a.allocate_slow(size);
}

HostAllocation CachingHostAllocator::Impl::allocate_slow(std::size_t size) {
  if (size == 0) return {};
  if (size > SizeClasses::kMaxRequest) {
    throw ConfigError("glassbox host allocator: allocate(" + std::to_string(size) + ") exceeds the largest request, " +
                      std::to_string(SizeClasses::kMaxRequest) + " bytes");
  }
  const std::uint32_t cls = classes.index(size);
  if (capped() || config.nvtx_mem_regions) {
    if (Block* b = take_cached_marked(cls, size)) return {b->ptr, context_of(b)};
  }
  Block* b = allocate_uncached(size, cls);
  return {b->ptr, context_of(b)};
}

Block* CachingHostAllocator::Impl::allocate_uncached(std::size_t size, std::uint32_t cls) {
  BlockPool* pool = &default_pool;
  bool capturing = false;
  if (!captures_empty.load(std::memory_order_relaxed)) [[unlikely]] {
    std::tie(pool, capturing) = pool_for_current_stream();
  }
  // A thread with a block of the class in its cache polls nothing (see
  // take_cached). Otherwise as the seed: poll events, then take a cached
  // block; but only the thread's own shard of the events first, and the
  // other shards only before making a new block. Polling first keeps the
  // handed-out peak exact: what the poll frees is free before this block is
  // handed out (a block waiting in another shard counts as handed out until
  // a poll frees it). The first block of the class the poll frees is handed
  // over; the others refill the thread's cache where they fit: a group of
  // deferred blocks (record_stream) comes back whole, with no shared list
  // between its free and its reuse. Before the poll, the thread's open
  // groups that are full, or have not grown since its last miss, get their
  // event: a group recorded at one miss is polled at the next (at once, on a
  // GPU that is done with the stream), and the pool grows only while the
  // stream's latency is not yet covered. With a background thread the
  // default pool's events are polled there; private pools never have a
  // thread (capture records no events anyway). A thread that keeps freeing
  // on one stream polls nothing until a cache's worth of blocks wait
  // (batches(), below).
  Block* b = nullptr;
  EventShard& own = pool->own_shard();
  const bool polls = (!config.background_thread || pool != &default_pool) && !batches(*pool, own, size, cls);
  if (!cached_locally(*pool, cls)) {
    if (own.deferred.load(std::memory_order_relaxed) > 0) record_open_groups(*pool, own, full_group());
    if (polls && own.pending.load(std::memory_order_relaxed) > 0) b = process_shard(*pool, own, -1, cls, true);
  }
  if (b == nullptr) b = take_local(*pool, cls);
  if (b == nullptr) b = take_central(*pool, cls);
  if (b == nullptr && polls) b = process_other_shards(*pool, -1, cls);
  bool hit = b != nullptr;
  if (!hit) {
    if (config.background_thread) start_background_thread();
    trim_to_cap();  // before the cache grows by a new block
    b = create_block(size, cls, *pool);
  }
  on_allocated(b, size, hit, capturing);
  return b;
}

// Whether allocate() makes a new block rather than poll: while fewer than a
// cache's worth of the class's blocks freed here wait on events, beyond the
// events the GPU was last found to lag (the shard's probe lag), all of one
// thread and stream (the shard's newest and oldest are), the stream of the
// event a poll here released last: a thread that keeps freeing blocks on
// one stream. For blocks a thread cache holds. One query can then cover
// a cache's worth of them (release_by_probe): with one block in flight,
// each free's event was queried by the next allocate, and the query was
// half the driver's cost of the record path. The lag counts too: a GPU a
// few records behind (a stream with work queued completes its events long
// after their frees) left the probe pending at a cache's worth, and each
// allocate then queried. The price is up to a cache's worth of
// blocks per class and thread more than reuse at first chance needs (which
// needs the lag's worth in flight anyway), as deferred groups cost; a
// cache of 0 turns both off. Blocks freed on many streams or by many
// threads would not share a query: they are polled at once, as before.
bool CachingHostAllocator::Impl::batches(const BlockPool& pool, EventShard& own, std::size_t size,
                                         std::uint32_t cls) const noexcept {
  if (&pool != &default_pool || size > ThreadCache::kMaxBlock || own.pending.load(std::memory_order_relaxed) == 0) {
    return false;
  }
  const std::int64_t waiting = own.waiting[cls].load(std::memory_order_relaxed);
  if (waiting >= full_group() + kMaxProbeLag) return false;
  std::lock_guard lock(own.mu);
  const int lag = config.thread_cache > 0 ? own.probe_lag : 0;  // no cache: polled at once, as the seed
  return waiting < full_group() + lag && !own.events.empty() && same_source(own.events.front(), own.events.back()) &&
         same_source(own.events.back(), own.last_released());
}

void CachingHostAllocator::Impl::on_allocated(Block* b, std::size_t size, bool hit, bool captured) {
  hand_out(b, size, captured);
  if (config.nvtx_mem_regions) [[unlikely]]
    backend->mark_requested(b->ptr, size, b->size);
  ThreadCache* tc = local_cache();
  if (!hit) {
    class_counts(b->cls).misses.inc();
  } else if (tc != nullptr) {
    bump(tc->slots[b->cls].hits, 1);
  } else {
    class_counts(b->cls).hits.inc();
  }
  requested_bytes.add(tc, size);
}

Block* CachingHostAllocator::Impl::take_local(BlockPool& pool, std::uint32_t cls) {
  if (&pool != &default_pool || classes.size(cls) > ThreadCache::kMaxBlock) return nullptr;
  ThreadCache* tc = local_cache();
  if (tc == nullptr || !tc->lock.owner_try_lock()) return nullptr;
  auto& slot = tc->slots[cls];
  if (Block* b = slot.pop_credited()) [[likely]] {
    tc->lock.owner_unlock();
    return uncache(b);
  }
  const bool uncredited = slot.count > 0;
  tc->lock.owner_unlock();
  return uncredited ? take_local_uncredited(*tc, cls) : nullptr;
}

bool CachingHostAllocator::Impl::cached_locally(BlockPool& pool, std::uint32_t cls) {
  if (&pool != &default_pool || classes.size(cls) > ThreadCache::kMaxBlock) return false;
  ThreadCache* tc = local_cache();
  if (tc == nullptr || !tc->lock.owner_try_lock()) return false;
  const bool any = tc->slots[cls].count > 0;
  tc->lock.owner_unlock();
  return any;
}

Block* CachingHostAllocator::Impl::take_local_uncredited(ThreadCache& tc, std::uint32_t cls) {
  auto pop = [&] {
    auto& slot = tc.slots[cls];
    return slot.count == 0 ? nullptr : slot.pop_uncredited();
  };
  ClassRecord& r = records[cls];
  {
    // r.mu comes after a cache's lock in the lock order, but the owner's
    // side never waits: a failed try goes on to the shared lists.
    std::lock_guard lock(r.mu);
    if (r.slack.load(std::memory_order_relaxed) > 0) {
      if (!tc.lock.owner_try_lock()) return nullptr;
      Block* b = pop();
      tc.lock.owner_unlock();
      if (b != nullptr) count_handed_out(r);
      return uncache(b);
    }
  }
  Block* b = nullptr;
  with_caches_held([&] {
    b = pop();
    if (b == nullptr) return;
    std::lock_guard lock(r.mu);
    reclaim_credits(cls, r);
    count_handed_out(r);
  });
  return uncache(b);
}

void CachingHostAllocator::Impl::count_handed_out(ClassRecord& r) {
  const std::int64_t slack = r.slack.load(std::memory_order_relaxed);
  if (slack > 0) {
    r.slack.store(slack - 1, std::memory_order_relaxed);
  } else {
    ++r.peak_out;
  }
}

void CachingHostAllocator::Impl::reclaim_credits(std::uint32_t cls, ClassRecord& r) {
  std::int64_t credits = 0;
  for (auto& tc : caches) {
    credits += tc->slots[cls].credit();
    tc->slots[cls].set_credit(0);
  }
  r.slack.fetch_add(credits, std::memory_order_relaxed);
}

// Only classes a thread cache may hold can have credits. A credit earned
// after the reclaim comes from a free that overlaps the caller's allocate,
// so counting the hand-out before it is still a true order of events.
bool CachingHostAllocator::Impl::needs_credits(std::uint32_t cls) const {
  if (config.thread_cache == 0 || classes.size(cls) > ThreadCache::kMaxBlock) return false;
  return records[cls].slack.load(std::memory_order_relaxed) <= 0;
}

void CachingHostAllocator::Impl::reclaim_credits_if_needed(std::uint32_t cls) {
  if (!needs_credits(cls)) return;
  ClassRecord& r = records[cls];
  with_caches_held([&] {
    std::lock_guard lock(r.mu);
    reclaim_credits(cls, r);
  });
}

Block* CachingHostAllocator::Impl::take_central(BlockPool& pool, std::uint32_t cls) {
  FreeList& fl = pool.classes[cls];
  if (needs_credits(cls)) {
    {
      // An empty list hands nothing out: no reclaim (its heavy fence) for it.
      std::lock_guard lock(fl.mu);
      if (fl.blocks.empty()) return nullptr;
    }
    reclaim_credits_if_needed(cls);
  }
  std::lock_guard lock(fl.mu);
  if (fl.blocks.empty()) return nullptr;
  Block* b = fl.blocks.back();
  fl.blocks.pop_back();
  count_free(pool, -static_cast<std::int64_t>(b->size));
  ClassRecord& r = records[cls];
  std::lock_guard stats(r.mu);
  r.active_requests.increase(1);
  r.active_bytes.increase(static_cast<std::int64_t>(b->size));
  count_handed_out(r);
  return b;
}

void* CachingHostAllocator::Impl::backend_allocate_or_retry(std::size_t size, std::size_t rounded, trace::Span& span) {
  if (void* p = backend->allocate(rounded)) return p;
  // Out of pinned memory: what events have freed and what the cache holds
  // may be enough once handed back.
  process_events(default_pool, -1);
  empty_cache();
  if (void* p = backend->allocate(rounded)) return p;
  on_out_of_memory(size, rounded, span);
  std::int64_t reserved, active = 0;
  {
    std::lock_guard lock(slow_mu);
    reserved = allocated_bytes.current;
  }
  for (auto& r : records) {
    std::lock_guard lock(r.mu);
    active += r.active_bytes.current;
  }
  throw OutOfMemoryError("glassbox host allocator: out of pinned memory allocating " + std::to_string(size) +
                         " bytes (rounded to " + std::to_string(rounded) + ") from the " + backend->name() +
                         " backend; reserved " + std::to_string(reserved) + " bytes, cached " +
                         std::to_string(default_free_bytes.load()) + ", active " + std::to_string(active) +
                         "; empty_cache() was already tried and the allocation retried once. Free pinned "
                         "buffers, or lower max_cached_bytes in GLASSBOX_HOST_ALLOC_CONF");
}

Block* CachingHostAllocator::Impl::create_block(std::size_t size, std::uint32_t cls, BlockPool& pool) {
  const std::size_t rounded = classes.size(cls);
  nvtx::ScopedRange range(backend_alloc_range(), nvtx::Category::host_allocator);
  trace::Span span("glassbox.host_allocator.slow_path");
  span.set_attribute("glassbox.size", size).set_attribute("glassbox.rounded_size", rounded);
  span.set_attribute("glassbox.bucket", classes.bucket(cls));
  auto t0 = std::chrono::steady_clock::now();
  void* ptr = backend_allocate_or_retry(size, rounded, span);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  m.backend_alloc_seconds.observe(took.count());

  reclaim_credits_if_needed(cls);
  auto* b = new Block;
  b->ptr = ptr;
  b->size = rounded;
  b->cls = cls;
  b->pool = pool.id;
  b->created = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(pool.blocks_mu);
    pool.blocks.insert(b);
    pool.by_ptr.emplace(ptr, b);
  }
  // The totals and the class change together, under slow_mu (see stats()).
  std::lock_guard slow(slow_mu);
  allocations.increase(1);
  allocated_bytes.increase(static_cast<std::int64_t>(rounded));
  host_alloc_time.record(took.count() * 1e6);
  ClassRecord& r = records[cls];
  std::lock_guard lock(r.mu);
  r.allocations.increase(1);
  r.allocated_bytes.increase(static_cast<std::int64_t>(rounded));
  r.active_requests.increase(1);
  r.active_bytes.increase(static_cast<std::int64_t>(rounded));
  count_handed_out(r);
  tracks.reserved_changed(static_cast<std::int64_t>(rounded));
  return b;
}

// The cached pair's other half: an owner's free into its own cache, inline
// and with no call but tail calls, so that it saves no register; each
// uncommon case goes on in one of them from where this left. A null context
// has tag 0, and free_slow() returns on it.
void CachingHostAllocator::free(void* ctx) {
  Impl& a = *impl_;
  Block* b = block_of(ctx);
  const std::uintptr_t tag = tag_of(ctx);
  LocalState& local = tl_local;
  if (tag == 0 || local.cache_owner != a.free_owner.load(std::memory_order_relaxed) ||
      b->owner.load(std::memory_order_relaxed) != &local) [[unlikely]]
    return a.free_slow(b);
  ThreadCache& tc = *local.cache;
  ThreadCache::Slot& slot = tc.slots[ThreadCache::class_of_tag(tag)];
  bump(slot.freed, 1);
  switch (a.settle_own(b)) {
    case Impl::Settled::switched:
      return a.free_after_switch(b);
    case Impl::Settled::on_streams:
      return a.free_own_with_streams(b, tc, slot);
    case Impl::Settled::off_streams:
      break;
  }
  if (!a.keep_in_slot(tc, slot, b, false)) [[unlikely]]
    return a.free_settled(b, nullptr);
}

void CachingHostAllocator::Impl::free_slow(Block* b) {
  if (b == nullptr) return;         // free(nullptr)
  const void* me = thread_token();  // next to local_cache(): one thread-pointer load for both
  ThreadCache* tc = local_cache();
  if (tc != nullptr) {
    bump(tc->slots[b->cls].freed, 1);
  } else {
    class_counts(b->cls).freed.inc();
  }
  if (settle_free(b, me)) return free_with_streams(b);
  free_settled(b, tc);
}

void CachingHostAllocator::Impl::free_after_switch(Block* b) {
  if (on_streams_after_switch(b)) return free_with_streams(b);
  free_settled(b, local_cache());
}

// A freed block on no stream: into `tc` (the calling thread's cache, or
// null) when it may go there, else onto its pool's shared lists.
void CachingHostAllocator::Impl::free_settled(Block* b, ThreadCache* tc) {
  if (tc != nullptr && keep_cached(*tc, b)) return;
  push_central(pool_of(b), b);
}

bool CachingHostAllocator::Impl::settle_free(Block* b, const void* me) {
  constexpr std::uint8_t on_streams = Block::kHandedOut | Block::kOnStreams;
  if (!owners_only_mine(b, me)) [[unlikely]] {
    note_foreign_use(b);
    return b->use.exchange(0, std::memory_order_acq_rel) == on_streams;
  }
  const Settled settled = settle_own(b);
  return settled == Settled::switched ? on_streams_after_switch(b) : settled == Settled::on_streams;
}

bool CachingHostAllocator::Impl::on_streams_after_switch(Block* b) {
  // A record may have set kOnStreams between the load and the store; it
  // added its stream in the same step, under the block's lock.
  std::lock_guard lock(b->lock);
  return !b->streams.empty();
}

void CachingHostAllocator::Impl::note_foreign_use(const Block* b) {
  if (record_mode.load(std::memory_order_acquire) == kShared) [[likely]]
    return;
  if (b->owner.load(std::memory_order_relaxed) == thread_token()) return;
  std::uint8_t expected = kOwnersOnly;
  if (record_mode.compare_exchange_strong(expected, kSwitching, std::memory_order_acq_rel)) {
    free_owner.store(kNoOwner, std::memory_order_relaxed);
    detail::heavy_fence();    // the owners' frees in flight (settle_own)
    with_caches_held([] {});  // the owners' records in flight (record_own)
    record_mode.store(kShared, std::memory_order_release);
    return;
  }
  while (record_mode.load(std::memory_order_acquire) != kShared) std::this_thread::yield();
}

// Thread-local scratch: a free with streams allocates nothing once warm.
thread_local std::vector<StreamId> tl_freed_streams;

void CachingHostAllocator::Impl::free_with_streams(Block* b) {
  TakenStreams taken;
  {
    std::lock_guard lock(b->lock);
    taken = take_streams(*b, tl_freed_streams);
  }
  free_from_streams(b, tl_freed_streams, taken);
}

// An owner's free that settled without a record from another thread
// (settle_own: none can add a stream now, nor will). Snapshots are then the
// block's only other readers (for_each_block), and they hold every thread
// cache: the owner's own cache lock keeps them out with plain stores, where
// the block's lock costs an exchange at every such free.
//
// The record path's common case, one caller's stream that has run its work
// by the free, goes on here without the general path's calls and vectors:
// every call and line it touches beside the driver's own costs the pair
// (bench/RESULTS.md, session 32), so a stream found done puts the block
// straight back into the slot the free came from. Anything else
// (capturing, busy, another thread querying, a failed check) goes on as
// any free with streams.
void CachingHostAllocator::Impl::free_own_with_streams(Block* b, ThreadCache& tc, ThreadCache::Slot& slot) {
  if (!tc.lock.owner_try_lock()) return free_with_streams(b);  // a snapshot or a drain holds the caches
  if (b->streams.size() != 1 || b->captured || b->streams_outlive) [[unlikely]] {
    const TakenStreams taken = take_streams(*b, tl_freed_streams);
    tc.lock.owner_unlock();
    return free_from_streams(b, tl_freed_streams, taken);
  }
  const StreamId stream = b->streams.front();
  b->streams.clear();
  b->count_events(1);
  tc.lock.owner_unlock();
  bool capturing = false, done = false, asked = false;
  try {
    capturing = backend->is_capturing(stream);
    done = !capturing && streams_done({&stream, 1}, &tc);
    asked = true;
  } catch (...) {
    // queue_events() asks again, and handles what that throws.
  }
  if (!done) return queue_events(b, {&stream, 1}, capturing, asked);
  b->count_events(-1);
  if (!keep_in_slot(tc, slot, b, false)) [[unlikely]]
    free_settled(b, nullptr);
}

CachingHostAllocator::Impl::TakenStreams CachingHostAllocator::Impl::take_streams(Block& b,
                                                                                  std::vector<StreamId>& streams) {
  b.streams.copy_to(streams);
  b.streams.clear();
  b.count_events(static_cast<int>(streams.size()));
  // One stream only: a block is in one group at a time.
  return {b.captured, b.streams_outlive && streams.size() == 1};
}

void CachingHostAllocator::Impl::free_from_streams(Block* b, std::span<const StreamId> streams, TakenStreams taken) {
  if (taken.deferrable && !taken.captured && !backend->is_capturing(streams.front())) {
    return defer_event(pool_of(b), b, streams.front());
  }
  queue_events(b, streams, taken.captured);
}

// One thread of the process queries at a time; the others record events.
// From a few threads on, queries at every free cost more than the events
// they save; they appear to wait on each other in the driver (H200 host,
// same run: 4 threads 4.7x PyTorch with a query at every free, 7.2x with
// events alone; 1 thread 4.0x against 2.2x). A throttle, not a guard: a
// load and a store rather than an exchange, a read-modify-write at every
// free of the one-thread pair (two threads may now and then query at once).
inline bool CachingHostAllocator::Impl::streams_done(std::span<const StreamId> streams, ThreadCache* tc) {
  alignas(64) static constinit std::atomic<bool> querying{false};  // its own line: every querying thread writes it
  if (!config.idle_stream_check || querying.load(std::memory_order_relaxed)) return false;
  querying.store(true, std::memory_order_relaxed);
  thread_local IdleStreamGate gate;
  bool done = true;
  for (StreamId s : streams) {
    IdleStreamGate::Entry* asks = gate.should_ask(id, s);
    if (asks == nullptr) {
      done = false;
      break;
    }
    done = backend->stream_done(s);
    asks->answered(done);
    if (!done) {
      m.streams_busy.inc();
      break;
    }
    done_queries.add(tc, 1);
  }
  querying.store(false, std::memory_order_relaxed);
  return done;
}

// Events are recorded outside every lock: recording may block on a driver
// lock that a thread holding one of ours waits behind.
void CachingHostAllocator::Impl::queue_events(Block* b, std::span<const StreamId> streams, bool captured, bool asked) {
  thread_local std::vector<EventGroup> events;
  events.clear();
  std::exception_ptr failure;
  bool done = false;
  try {
    // On a capturing stream the record would be captured into the graph, and
    // no poll of it could ever succeed (nor may the stream be queried): a
    // block one of whose streams captures now is used during capture.
    if (!asked) {
      captured =
          captured || std::any_of(streams.begin(), streams.end(), [&](StreamId s) { return backend->is_capturing(s); });
      done = !captured && streams_done(streams, tl_local.cache_owner == id ? tl_local.cache : nullptr);
    }
    if (!captured && !done) {
      for (StreamId s : streams) {
        const EventId e = backend->record_event(s);
        events.push_back(just_recorded(e, b, backend->stream_serial(s)));
      }
    }
  } catch (...) {
    failure = std::current_exception();
    // Some stream's use of the block cannot be tracked: it may never be
    // reused safely. The events that were recorded still drain normally.
    {
      std::lock_guard lock(b->lock);
      b->count_events(1 - static_cast<int>(streams.size() - events.size()));  // keep one for good
    }
    retire(b, m.unrecyclable_record_failed);
  }
  if (done) return release_done(b, streams.size());
  BlockPool& pool = pool_of(b);
  EventShard& shard = pool.own_shard();
  waiting_count(pool, shard, *b).fetch_add(1, std::memory_order_relaxed);
  if (captured) {
    // No event recorded during capture says when a graph replay is done
    // with the block: it stays out of circulation for good.
    return retire(b, m.unrecyclable_captured);
  }
  {
    std::lock_guard lock(shard.mu);
    for (const EventGroup& e : events) shard.events.push_front(e);
    shard.pending.fetch_add(static_cast<std::int64_t>(events.size()), std::memory_order_relaxed);
  }
  m.pending_events.add(static_cast<std::int64_t>(events.size()));
  tracks.pending_changed(pool, static_cast<std::int64_t>(events.size()));
  if (config.background_thread) background_cv.notify_one();
  if (failure) std::rethrow_exception(failure);
}

// Every use of the block ended before its free, and each of its streams has
// run all its work since: an event recorded now would be complete at once.
// The count goes back without the block's lock (Block::count_events): no
// event of the block is queued, so this thread is its count's one writer.
void CachingHostAllocator::Impl::release_done(Block* b, std::size_t streams) {
  b->count_events(-static_cast<int>(streams));
  free_settled(b, local_cache());
}

void CachingHostAllocator::Impl::retire(Block* b, metrics::Counter& reason) {
  bool first;
  {
    std::lock_guard lock(b->lock);
    first = !std::exchange(b->retired, true);
  }
  if (first) reason.inc();
}

void CachingHostAllocator::Impl::push_central(BlockPool& pool, Block* b, bool stamped, bool from_thread_cache) {
  // Read now: once on the list and unlocked, empty_cache() may free the block.
  const auto size = static_cast<std::int64_t>(b->size);
  {
    FreeList& fl = pool.classes[b->cls];
    std::lock_guard lock(fl.mu);
    if (!stamped) b->freed_tick = tick.fetch_add(1, std::memory_order_relaxed);
    fl.blocks.push_back(b);
    ClassRecord& r = records[b->cls];
    std::lock_guard stats(r.mu);
    r.active_requests.decrease(1);
    r.active_bytes.decrease(size);
    if (!from_thread_cache) r.slack.fetch_add(1, std::memory_order_relaxed);
  }
  count_free(pool, size);
  if (config.background_thread && over_cap()) background_cv.notify_one();
}

void CachingHostAllocator::Impl::note_cached(std::size_t bytes) {
  thread_cached_bytes.fetch_add(static_cast<std::int64_t>(bytes));
  if (config.background_thread && over_cap()) background_cv.notify_one();
}

void CachingHostAllocator::Impl::count_free(const BlockPool& pool, std::int64_t bytes) {
  if (&pool == &default_pool) {
    default_free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    tracks.private_free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  tracks.shared_lists_changed();
}

BlockPool& CachingHostAllocator::Impl::pool_of(const Block* b) {
  if (b->pool == PoolId{}) return default_pool;
  std::shared_lock lock(instance_mu);
  return private_pools.at(b->pool)->blocks;
}

std::pair<BlockPool*, bool> CachingHostAllocator::Impl::pool_for_current_stream() {
  std::shared_lock lock(instance_mu);
  StreamId stream = backend->current_stream();
  bool capturing = backend->is_capturing(stream);
  for (auto& [pool_id, filter] : captures) {
    if (!filter(stream)) continue;
    if (!capturing) {
      std::call_once(warned_private_outside_capture, [&, id = pool_id] {
        warn("host allocator is allocating to private pool " + pool_text(id) +
             " but the current stream is not capturing; private pools are meant for CUDA graph capture");
      });
    }
    return {&private_pools.at(pool_id)->blocks, capturing};
  }
  return {&default_pool, capturing};
}

// As PyTorch: `ctx` when it is one of our blocks, else the block at `ptr`
// (a caller may have wrapped the context in one of its own); null if neither.
Block* CachingHostAllocator::Impl::find_block_slow(void* ptr, Block* b) {
  if (b == nullptr) return find_by_ptr(ptr);
  // Read before the lookup: a block forgotten after it leaves the memo stale.
  const std::uint64_t epoch = blocks_forgotten.load(std::memory_order_acquire);
  if (any_pool([&](BlockPool& pool) { return pool.blocks.count(b) != 0; })) {
    remember_block(b, epoch);
    return b;
  }
  return find_by_ptr(ptr);
}

void CachingHostAllocator::Impl::remember_block(const Block* b, std::uint64_t epoch) noexcept {
  KnownBlocks& k = tl_known_blocks;
  if (k.allocator != id || k.epoch != epoch) {
    k.slots.fill(nullptr);
    k.allocator = id;
    k.epoch = epoch;
  }
  k.slot(b) = b;
}

thread_local constinit KnownBlocks tl_known_blocks;

Block* CachingHostAllocator::Impl::find_by_ptr(void* ptr) {
  Block* b = nullptr;
  any_pool([&](BlockPool& pool) {
    auto it = pool.by_ptr.find(ptr);
    if (it != pool.by_ptr.end()) b = it->second;
    return b != nullptr;
  });
  return b;
}

// An owner's record, the record path's common case, makes no call of its
// own in either entry point but the backend's stream check.
[[gnu::always_inline]] inline CachingHostAllocator::RecordOutcome CachingHostAllocator::Impl::record(void* ptr,
                                                                                                     void* ctx,
                                                                                                     StreamId stream,
                                                                                                     StreamLife life) {
  Block* b = find_block(ptr, ctx);
  if (b == nullptr) return RecordOutcome::unknown_memory;
  // A captured use reads the block at every replay of the graph. Captures
  // that allocate to no private pool are not looked for here (as PyTorch),
  // which keeps the record path free of a driver call; free() looks.
  const bool capturing = !captures_empty.load(std::memory_order_relaxed) && backend->is_capturing(stream);
  const bool outlives = life == StreamLife::outlives_allocator || stream_outlives(stream);
  if (RecordOutcome outcome; record_own(b, stream, capturing, outlives, outcome)) [[likely]]
    return outcome;
  return record_shared(b, stream, capturing, outlives);
}

// Under the owner's cache lock, with record_mode read inside it, no other
// thread writes the block: a foreign record or free first switches the
// mode, and the switch holds every cache once (note_foreign_use), so it
// waits for a record_own in flight, and one that takes the lock after it
// finds the mode switched. Snapshots hold every cache too.
[[gnu::always_inline]] inline bool CachingHostAllocator::Impl::record_own(Block* b, StreamId stream, bool capturing,
                                                                          bool outlives, RecordOutcome& outcome) {
  LocalState& local = tl_local;
  if (local.cache_owner != id || !owners_only_mine(b, &local)) return false;
  ThreadCache& tc = *local.cache;
  if (!tc.lock.owner_try_lock()) return false;
  if (record_mode.load(std::memory_order_relaxed) != kOwnersOnly) [[unlikely]] {
    tc.lock.owner_unlock();
    return false;
  }
  const std::uint8_t use = b->use.load(std::memory_order_relaxed);
  const bool handed_out = (use & Block::kHandedOut) != 0;
  if (handed_out) [[likely]] {
    try {
      add_stream(*b, stream, capturing, outlives);  // a second stream's may throw (bad_alloc)
    } catch (...) {
      tc.lock.owner_unlock();  // a remote would wait for it for good
      throw;
    }
    b->use.store(use | Block::kOnStreams, std::memory_order_relaxed);
  }
  tc.lock.owner_unlock();
  if (!handed_out) [[unlikely]]
    m.record_after_free.inc();
  outcome = handed_out ? RecordOutcome::recorded : RecordOutcome::freed;
  return true;
}

CachingHostAllocator::RecordOutcome CachingHostAllocator::Impl::record_shared(Block* b, StreamId stream, bool capturing,
                                                                              bool outlives) {
  note_foreign_use(b);
  std::lock_guard lock(b->lock);
  // Against free()'s exchange: set kOnStreams only while the block is handed
  // out. The streams are added after, still under the lock, which a free
  // that saw kOnStreams takes before it reads them.
  std::uint8_t use = b->use.load(std::memory_order_relaxed);
  do {
    if ((use & Block::kHandedOut) == 0) {
      m.record_after_free.inc();
      return RecordOutcome::freed;
    }
  } while (!b->use.compare_exchange_weak(use, use | Block::kOnStreams, std::memory_order_acq_rel));
  add_stream(*b, stream, capturing, outlives);
  return RecordOutcome::recorded;
}

namespace {
// Cold, and out of line: record_stream's own body stays the record's.
[[noreturn, gnu::noinline, gnu::cold]] void throw_record_error(void* ptr, bool freed) {
  std::ostringstream m;
  m << "glassbox host allocator: record_stream(" << ptr << ") on memory that "
    << (freed ? "was freed (before this call, or by a free() racing it)"
              : "is no allocation of this allocator (never was, or freed and returned to the system)")
    << "; a stream may only use a block between allocate() and free()";
  throw UsageError(m.str());
}
}  // namespace

bool CachingHostAllocator::record_stream(void* ptr, void* ctx, StreamId stream, StreamLife life) {
  const RecordOutcome outcome = impl_->record(ptr, ctx, stream, life);
  if (outcome == RecordOutcome::recorded) [[likely]]
    return true;
  if (outcome == RecordOutcome::unknown_memory) impl_->m.record_unknown.inc();
  throw_record_error(ptr, outcome == RecordOutcome::freed);
}

CachingHostAllocator::RecordOutcome CachingHostAllocator::try_record_stream(void* ptr, void* ctx, StreamId stream,
                                                                            StreamLife life) {
  return impl_->record(ptr, ctx, stream, life);
}

void CachingHostAllocator::begin_allocate_to_pool(PoolId id, std::function<bool(StreamId)> filter) {
  Impl& a = *impl_;
  std::unique_lock lock(a.instance_mu);
  for (auto& [pool_id, _] : a.captures) {
    if (pool_id == id) throw Error("begin_allocate_to_pool: already allocating to pool " + pool_text(id));
  }
  auto it = a.private_pools.find(id);
  if (it == a.private_pools.end()) {
    a.private_pools.emplace(id, std::make_unique<PrivatePool>(id));
  } else {
    it->second->use_count++;
    a.freeable_pools.erase(id);
  }
  a.captures.emplace_back(id, std::move(filter));
  a.captures_empty.store(false, std::memory_order_relaxed);
  a.update_hit_owner();
}

void CachingHostAllocator::end_allocate_to_pool(PoolId id) {
  Impl& a = *impl_;
  std::unique_lock lock(a.instance_mu);
  auto it = std::find_if(a.captures.begin(), a.captures.end(), [&](const auto& c) { return c.first == id; });
  if (it == a.captures.end()) throw Error("end_allocate_to_pool: not allocating to pool " + pool_text(id));
  a.captures.erase(it);
  a.captures_empty.store(a.captures.empty(), std::memory_order_relaxed);
  a.update_hit_owner();
}

void CachingHostAllocator::release_pool(PoolId id) {
  Impl& a = *impl_;
  std::unique_lock lock(a.instance_mu);
  auto it = a.private_pools.find(id);
  if (it == a.private_pools.end()) throw Error("release_pool: no private pool " + pool_text(id));
  // An allocate() may hold the pool while it is active: freed under it, the
  // pool would be written after its memory went back.
  if (std::any_of(a.captures.begin(), a.captures.end(), [&](const auto& c) { return c.first == id; })) {
    throw UsageError("release_pool: pool " + pool_text(id) +
                     " is still being allocated to; call end_allocate_to_pool first");
  }
  if (--it->second->use_count == 0) a.freeable_pools.emplace(id, it->second.get());
}

}  // namespace glassbox::host_allocator
