// Pending events: polled in the seed's order, shard by shard, in allocate()
// or on a background thread.
#include <chrono>
#include <optional>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

namespace {

// Puts an entry back where the walk found it should go: the back (the oldest
// end, seen first next time) or the front (behind the rest of this walk).
void put_back(EventShard& shard, std::pair<EventId, Block*> entry, bool at_back) {
  std::lock_guard lock(shard.mu);
  if (at_back) {
    shard.events.push_back(entry);
  } else {
    shard.events.push_front(entry);
  }
}

std::optional<std::pair<EventId, Block*>> pop_oldest(EventShard& shard) {
  std::lock_guard lock(shard.mu);
  if (shard.events.empty()) return std::nullopt;
  auto entry = shard.events.back();
  shard.events.pop_back();
  return entry;
}

}  // namespace

std::uint32_t BlockPool::next_event_shard() noexcept {
  static std::atomic<std::uint32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kEventShards + 1;
}

thread_local constinit std::uint32_t tl_event_shard = 0;

// size == -1: walk from the oldest event and stop at the first that has not
// completed (later ones are younger: most likely not complete either), or
// at the first block of class `wanted` to become free: the allocate() asking
// takes it, and the younger events wait for the next poll rather than cost a
// query each now (on the record path: the event the last free() recorded,
// often not complete yet, was queried by every allocate()).
// size >= 0: look only at blocks of that size, skipping the rest, and stop
// once one block becomes free or every event has been looked at.
// The block of class `wanted` is returned instead of going to the free list,
// from whose back the allocate() asking would take it next anyway: the
// hand-over saves two trips through the list's and the class's locks.
Block* CachingHostAllocator::Impl::process_shard(BlockPool& pool, EventShard& shard, std::int64_t size,
                                                 std::uint32_t wanted) {
  Block* kept = nullptr;
  std::size_t max_events = 0;
  if (size != -1) {
    std::lock_guard lock(shard.mu);
    max_events = shard.events.size();
  }
  for (std::size_t seen = 0;; ++seen) {
    auto entry = pop_oldest(shard);
    if (!entry) return kept;
    Block* b = entry->second;
    if (size != -1) {
      if (seen > max_events) {
        put_back(shard, *entry, false);
        return kept;
      }
      if (static_cast<std::size_t>(size) != b->size) {
        put_back(shard, *entry, false);
        continue;
      }
    }
    const EventPoll poll = backend->query_event(entry->first);
    if (poll.status == EventPoll::pending) {
      put_back(shard, *entry, size == -1);
      if (size == -1) return kept;
      continue;
    }
    backend->release_event(entry->first);
    bool available = false;
    if (poll.status == EventPoll::complete) {
      std::lock_guard lock(b->lock);
      available = --b->event_count == 0;
    } else {
      // The event will never complete, and its stream may still use the
      // block: dropped, and its count never drains, so the rest of the queue
      // moves on without it.
      m.event_errors.with({poll.error}).inc();
      retire(b, m.unrecyclable_query_failed);
    }
    if (available) {
      records[b->cls].pending_blocks.fetch_sub(1, std::memory_order_relaxed);
      if (b->cls != wanted) {
        push_central(pool, b);
      } else {
        kept = b;
      }
    }
    // Last: once the backlog reads zero, every block it held is reusable.
    const bool backlog_gone = shard.pending.fetch_sub(1, std::memory_order_release) == 1;
    m.pending_events.add(-1);
    tracks.pending_changed(pool, -1);
    if ((available && size != -1) || kept != nullptr || backlog_gone) return kept;
  }
}

// The calling thread's shard first: the blocks it freed are the ones it
// most likely asks for again.
Block* CachingHostAllocator::Impl::process_events(BlockPool& pool, std::int64_t size, std::uint32_t wanted) {
  EventShard& own = pool.own_shard();
  if (Block* b = process_shard(pool, own, size, wanted)) return b;
  return process_other_shards(pool, size, wanted);
}

Block* CachingHostAllocator::Impl::process_other_shards(BlockPool& pool, std::int64_t size, std::uint32_t wanted) {
  const EventShard& own = pool.own_shard();
  for (EventShard& shard : pool.shards) {
    if (&shard == &own || shard.pending.load(std::memory_order_relaxed) == 0) continue;
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

// Polls the default pool every 100 us while events are pending, and trims
// to the cap; sleeps on a condition variable while neither is needed.
void CachingHostAllocator::Impl::start_background_thread() {
  std::call_once(background_started, [this] {
    background_active = true;
    background = std::thread([this] {
      std::unique_lock lock(background_mu);
      while (background_active) {
        if (default_pool.pending() == 0 && !over_cap()) {
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
