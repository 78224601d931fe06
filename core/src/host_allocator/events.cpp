// Pending events: polled in the seed's order, shard by shard, in allocate()
// or on a background thread.
#include <algorithm>
#include <chrono>
#include <optional>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

namespace {

// Puts an entry back where the walk found it should go: the back (the oldest
// end, seen first next time) or the front (behind the rest of this walk).
void put_back(EventShard& shard, EventGroup entry, bool at_back) {
  std::lock_guard lock(shard.mu);
  if (at_back) {
    shard.events.push_back(entry);
  } else {
    shard.events.push_front(entry);
  }
}

std::optional<EventGroup> pop_oldest(EventShard& shard) {
  std::lock_guard lock(shard.mu);
  if (shard.events.empty()) return std::nullopt;
  auto entry = shard.events.back();
  shard.events.pop_back();
  return entry;
}

bool group_has_size(const Block* b, std::int64_t size) {
  for (; b != nullptr; b = b->group_next) {
    if (static_cast<std::size_t>(size) == b->size) return true;
  }
  return false;
}

}  // namespace

std::uint32_t BlockPool::next_event_shard() noexcept {
  static std::atomic<std::uint32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kEventShards + 1;
}

thread_local constinit std::uint32_t tl_event_shard = 0;

EventGroup just_recorded(EventId event, Block* head, std::uint64_t stream_serial) noexcept {
  static std::atomic<std::uint32_t> threads{0};
  thread_local const std::uint32_t recorder = threads.fetch_add(1, std::memory_order_relaxed) + 1;
  thread_local std::uint64_t records = 0;
  return EventGroup{event, head, stream_serial, recorder, ++records};
}

// size == -1: first one query for many (release_by_probe); then, unless it
// freed a block of class `wanted`, walk from the oldest event and stop at the first that has not
// completed (later ones are younger: most likely not complete either), or
// at the first block of class `wanted` to become free: the allocate() asking
// takes it, and the younger events wait for the next poll rather than cost a
// query each now (on the record path: the event the last free() recorded,
// often not complete yet, was queried by every allocate()).
// size >= 0: look only at events covering blocks of that size, skipping the
// rest, and stop once one block becomes free or every event has been looked at.
// The block of class `wanted` is returned instead of going to the free list,
// from whose back the allocate() asking would take it next anyway: the
// hand-over saves two trips through the list's and the class's locks.
Block* CachingHostAllocator::Impl::process_shard(BlockPool& pool, EventShard& shard, std::int64_t size,
                                                 std::uint32_t wanted, bool fill_cache) {
  Block* kept = nullptr;
  if (size == -1) {
    // A pending probe is younger than the oldest, which may be complete;
    // but walking to it costs a query per block, which the probe's raised
    // lag saves (batches(): the blocks come back a cache's worth at once).
    const ProbeResult probed = release_by_probe(pool, shard, wanted, fill_cache, kept);
    if (probed == ProbeResult::pending || kept != nullptr) return kept;
  }
  std::size_t max_events = 0;
  if (size != -1) {
    std::lock_guard lock(shard.mu);
    max_events = shard.events.size();
  }
  for (std::size_t seen = 0;; ++seen) {
    auto entry = pop_oldest(shard);
    if (!entry) return kept;
    if (size != -1 && (seen > max_events || !group_has_size(entry->head, size))) {
      put_back(shard, *entry, false);
      if (seen > max_events) return kept;
      continue;
    }
    const EventPoll poll = backend->query_event(entry->event);
    if (poll.status == EventPoll::pending) {
      put_back(shard, *entry, size == -1);
      if (size == -1) return kept;
      continue;
    }
    bool backlog_gone = false;
    const bool available =
        release_polled(pool, shard, std::span(&*entry, 1), poll, wanted, fill_cache, kept, backlog_gone);
    if ((available && size != -1) || kept != nullptr || backlog_gone) return kept;
  }
}

bool CachingHostAllocator::Impl::release_polled(BlockPool& pool, EventShard& shard, std::span<const EventGroup> polled,
                                                EventPoll poll, std::uint32_t wanted, bool fill_cache, Block*& kept,
                                                bool& backlog_gone) {
  bool available = false;
  for (const EventGroup& entry : polled) {
    backend->release_event(entry.event);
    available = release_group(pool, shard, entry, poll, wanted, fill_cache, kept) || available;
  }
  shard.note_released(polled.back());
  // Last: once the backlog reads zero, every block it held is reusable.
  const auto n = static_cast<std::int64_t>(polled.size());
  backlog_gone = shard.pending.fetch_sub(n, std::memory_order_release) == n;
  m.pending_events.add(-n);
  tracks.pending_changed(pool, -n);
  return available;
}

namespace {

struct Probe {
  EventGroup event;
  int lag;  // the younger events of its thread and stream in front of it
};

// Under the shard's lock. Takes the event to query for the oldest one's
// thread and stream off the queue (while it is queried no other poller may
// release it): the one with `lag` younger events of theirs in front of it,
// or as many as there are but one (the next to the oldest), among the
// newest kProbeScan events. None if there is none younger there.
std::optional<Probe> take_probe(EventShard& shard, std::size_t scan) {
  auto& events = shard.events;
  if (events.size() < 2) return std::nullopt;
  const EventGroup& oldest = events.back();
  auto probe = events.end();
  int younger = 0;
  const auto end = events.begin() + static_cast<std::ptrdiff_t>(std::min(scan, events.size() - 1));
  for (auto it = events.begin(); it != end; ++it) {
    if (!same_source(*it, oldest) || it->seq <= oldest.seq) continue;
    probe = it;
    if (younger++ == shard.probe_lag) break;
  }
  if (probe == events.end()) return std::nullopt;
  Probe taken{*probe, younger - 1};
  events.erase(probe);
  return taken;
}

}  // namespace

// A shared query. The oldest event's thread recorded it and every younger
// event of theirs on its stream in program order, so once one of the younger
// completed, every older one of theirs on that stream has: those are
// released with the probe and none costs a query (on the record path, each
// free records an event and the next allocate queried it: the query was
// half of the driver's cost). The probe leaves `probe_lag` younger events
// in front of it (the newest, recorded by the free just before, has rarely
// completed): the lag tracks how many records the GPU is behind. When the
// probe had not completed it grows by half plus one (up to kMaxProbeLag),
// so a stream far behind costs few queries for nothing; when it had, it steps
// down by an eighth (at least one, down to 1), so that one late event does
// not hold it high for long, and a GPU steadily L records behind finds it
// at L most of the time rather than swinging below (a halving lag failed
// every other probe there). A probe that failed is released as the walk
// releases one (its blocks retired, the error counted).
CachingHostAllocator::Impl::ProbeResult CachingHostAllocator::Impl::release_by_probe(BlockPool& pool, EventShard& shard,
                                                                                     std::uint32_t wanted,
                                                                                     bool fill_cache, Block*& kept) {
  std::optional<Probe> probe;
  {
    std::lock_guard lock(shard.mu);
    probe = take_probe(shard, kProbeScan);
  }
  if (!probe) return ProbeResult::none;
  const EventPoll poll = backend->query_event(probe->event.event);
  thread_local std::vector<EventGroup> covered;
  covered.assign(1, probe->event);
  {
    std::lock_guard lock(shard.mu);
    if (poll.status == EventPoll::pending) {
      shard.events.push_front(probe->event);
      // At the deepest lag already, the walk goes on from the oldest: no
      // deeper lag will wait for it, and the pool must not grow for good.
      if (probe->lag >= kMaxProbeLag) return ProbeResult::none;
      shard.probe_lag = std::min(probe->lag + 1 + probe->lag / 2, kMaxProbeLag);
      return ProbeResult::pending;
    }
    if (poll.status == EventPoll::complete) {
      shard.probe_lag = std::max(probe->lag - 1 - probe->lag / 8, 1);
      // Those another poller took meanwhile are its own to release.
      std::erase_if(shard.events, [&](const EventGroup& e) {
        if (!same_source(e, probe->event) || e.seq > probe->event.seq) return false;
        covered.push_back(e);
        return true;
      });
    }
  }
  m.covered_events.inc(covered.size() - 1);
  bool backlog_gone = false;
  release_polled(pool, shard, covered, poll, wanted, fill_cache, kept, backlog_gone);
  return ProbeResult::released;
}

bool CachingHostAllocator::Impl::release_group(BlockPool& pool, EventShard& shard, const EventGroup& group,
                                               EventPoll poll, std::uint32_t wanted, bool fill_cache, Block*& kept) {
  // The event will never complete, and its stream may still use the
  // blocks: dropped, and their counts never drain, so the rest of the queue
  // moves on without them.
  if (poll.status == EventPoll::failed) m.event_errors.with({poll.error}).inc();
  ThreadCache* tc = fill_cache ? local_cache() : nullptr;
  bool any = false;
  for (Block* b = group.head; b != nullptr;) {
    // Read first: once free, the block may be handed out and grouped again.
    Block* next = std::exchange(b->group_next, nullptr);
    bool available = false;
    if (poll.status == EventPoll::complete) {
      std::lock_guard lock(b->lock);
      b->count_events(-1);
      available = b->event_count.load(std::memory_order_relaxed) == 0;
    } else {
      retire(b, m.unrecyclable_query_failed);
    }
    if (available) {
      any = true;
      waiting_count(pool, shard, *b).fetch_sub(1, std::memory_order_relaxed);
      if (kept == nullptr && b->cls == wanted) {
        kept = b;
      } else if (tc == nullptr || !keep_cached(*tc, b)) {
        push_central(pool, b);
      }
    }
    b = next;
  }
  return any;
}

// Free with no event: the block waits in its stream's open group, and the
// event recorded for the group later covers it (record_stream says why).
void CachingHostAllocator::Impl::defer_event(BlockPool& pool, Block* b, StreamId stream) {
  EventShard& shard = pool.own_shard();
  waiting_count(pool, shard, *b).fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(shard.mu);
    auto it =
        std::find_if(shard.open.begin(), shard.open.end(), [&](const OpenGroup& g) { return g.stream == stream; });
    if (it == shard.open.end()) it = shard.open.insert(it, OpenGroup{stream, nullptr, 0});
    b->group_next = it->head;
    it->head = b;
    ++it->blocks;
    it->uncacheable = it->uncacheable || b->pool != PoolId{} || b->size > ThreadCache::kMaxBlock;
    shard.deferred.fetch_add(1, std::memory_order_relaxed);
  }
  m.deferred_blocks.add(1);
  if (config.background_thread) background_cv.notify_one();
}

// Groups of at least `min_blocks`, those a thread cache cannot take, and
// those that have not grown since the last call left them open: a thread
// that left a stream for another leaves its group short for good, and its
// blocks would wait unused while they count as waiting in batches(), so that
// the other stream's polls shared each query among fewer blocks.
void CachingHostAllocator::Impl::record_open_groups(BlockPool& pool, EventShard& shard, int min_blocks) {
  thread_local std::vector<OpenGroup> full;
  full.clear();
  {
    std::lock_guard lock(shard.mu);
    auto kept = shard.open.begin();  // those left open move up, in their order
    for (OpenGroup& g : shard.open) {
      if (g.blocks < min_blocks && !g.uncacheable && g.blocks != g.blocks_at_last_miss) {
        g.blocks_at_last_miss = g.blocks;
        *kept++ = g;
      } else {
        full.push_back(g);
      }
    }
    shard.open.erase(kept, shard.open.end());
  }
  for (const OpenGroup& g : full) record_group(pool, shard, g);
}

// Outside every lock, as queue_events. A stream that captures now would
// capture the record, and no poll of it would succeed: its group stays open
// until the capture ends (its blocks were last used before it began, or
// free() would have found the stream capturing).
void CachingHostAllocator::Impl::record_group(BlockPool& pool, EventShard& shard, const OpenGroup& group) {
  EventId event = 0;
  bool recorded = false;
  try {
    if (!backend->is_capturing(group.stream)) {
      event = backend->record_event(group.stream);
      recorded = true;
    }
  } catch (...) {
    // The stream's use of these blocks cannot be tracked: none may be
    // reused; each keeps its count for good and is counted once.
    for (Block* b = group.head; b != nullptr; b = std::exchange(b->group_next, nullptr)) {
      retire(b, m.unrecyclable_record_failed);
    }
    shard.deferred.fetch_sub(group.blocks, std::memory_order_relaxed);
    m.deferred_blocks.add(-group.blocks);
    return;
  }
  const EventGroup entry =
      recorded ? just_recorded(event, group.head, backend->stream_serial(group.stream)) : EventGroup{};
  {
    std::lock_guard lock(shard.mu);
    if (!recorded) {
      shard.open.push_back(group);
      return;
    }
    shard.events.push_front(entry);
    shard.pending.fetch_add(1, std::memory_order_relaxed);
    shard.deferred.fetch_sub(group.blocks, std::memory_order_relaxed);
  }
  m.deferred_blocks.add(-group.blocks);
  m.group_events.inc();
  m.group_blocks.inc(static_cast<std::uint64_t>(group.blocks));
  m.pending_events.add(1);
  tracks.pending_changed(pool, 1);
}

// Every open group first (min 1 block): a poll must see every block freed
// before it. Then the calling thread's shard: the blocks it freed are the
// ones it most likely asks for again.
Block* CachingHostAllocator::Impl::process_events(BlockPool& pool, std::int64_t size, std::uint32_t wanted) {
  for (EventShard& shard : pool.shards) {
    if (shard.deferred.load(std::memory_order_relaxed) > 0) record_open_groups(pool, shard, 1);
  }
  EventShard& own = pool.own_shard();
  if (Block* b = process_shard(pool, own, size, wanted)) return b;
  return process_other_shards(pool, size, wanted);
}

// A shard with open groups and nothing in flight has a thread that has not
// run out of blocks since it freed them, or is gone: its groups are
// recorded here, or they could wait for good.
Block* CachingHostAllocator::Impl::process_other_shards(BlockPool& pool, std::int64_t size, std::uint32_t wanted) {
  const EventShard& own = pool.own_shard();
  for (EventShard& shard : pool.shards) {
    if (&shard == &own) continue;
    if (shard.pending.load(std::memory_order_relaxed) == 0) {
      if (shard.deferred.load(std::memory_order_relaxed) == 0) continue;
      record_open_groups(pool, shard, 1);
    }
    if (Block* b = process_shard(pool, shard, size, wanted)) return b;
  }
  return nullptr;
}

void CachingHostAllocator::process_events() {
  impl_->process_events(impl_->default_pool, -1);
  impl_->trim_to_cap();
}

void CachingHostAllocator::process_events_for_size(std::size_t size) {
  if (size == 0) return;
  Impl& a = *impl_;
  if (Block* b = a.process_events(a.default_pool, static_cast<std::int64_t>(round_size(size)), a.classes.index(size))) {
    a.push_central(a.default_pool, b);
  }
}

// Polls the default pool every 100 us while events are pending or blocks
// wait in open groups (recording those first), and trims
// to the cap; sleeps on a condition variable while neither is needed.
void CachingHostAllocator::Impl::start_background_thread() {
  std::call_once(background_started, [this] {
    background_active = true;
    background = std::thread([this] {
      std::unique_lock lock(background_mu);
      while (background_active) {
        if (default_pool.pending() == 0 && default_pool.deferred() == 0 && !over_cap()) {
          background_cv.wait_for(lock, std::chrono::milliseconds(10));
          continue;
        }
        lock.unlock();
        process_events(default_pool, -1);
        trim_to_cap();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        lock.lock();
      }
    });
  });
}

}  // namespace glassbox::host_allocator
