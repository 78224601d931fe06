// Per-thread caches of free blocks: found through a thread-local list keyed
// by allocator id (an allocator may die before the thread, or the thread
// before the allocator), drained into the shared lists at thread exit and by
// empty_cache().
#include <algorithm>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

// Outside the anonymous namespace: CachingHostAllocator befriends it by
// this name, so that it may name the private Impl.
struct LocalCacheEntry {
  std::uint64_t allocator_id;
  std::weak_ptr<CachingHostAllocator::Impl> allocator;
  std::shared_ptr<ThreadCache> cache;
};

namespace {

struct LocalCaches {
  std::vector<LocalCacheEntry> entries;
  ~LocalCaches();
};

thread_local constinit bool tl_exited = false;
thread_local LocalCaches tl_caches;

LocalCaches::~LocalCaches() {
  tl_exited = true;
  tl_local = {};
  for (auto& e : entries) {
    if (auto a = e.allocator.lock()) a->retire_cache(*e.cache);
  }
}

}  // namespace

thread_local constinit LocalState tl_local [[gnu::tls_model("initial-exec")]];

ThreadCache* CachingHostAllocator::Impl::find_local_cache() {
  if (config.thread_cache == 0 || tl_exited) return nullptr;
  auto& entries = tl_caches.entries;
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.allocator_id == id; });
  if (it == entries.end()) {
    std::erase_if(entries, [](const auto& e) { return e.allocator.expired(); });
    auto tc = std::make_shared<ThreadCache>();
    {
      std::lock_guard lock(caches_mu);
      caches.push_back(tc);
    }
    entries.push_back({id, weak_from_this(), tc});
    it = entries.end() - 1;
  }
  tl_local = {id, it->cache.get()};
  return tl_local.cache;
}

// Moves a cache's blocks to the shared free lists. Caller holds caches_mu
// and either is the cache's owner or holds tc.lock on the remote side.
// Each block keeps the tick it was freed at (keep_cached), so the trim's
// least-recently-freed order holds across caches.
void CachingHostAllocator::Impl::drain_cache(ThreadCache& tc) {
  for (auto& slot : tc.slots) {
    const int credits = slot.credit();  // the blocks leave, the credits stay
    while (slot.count > 0) {
      push_central(default_pool, uncache(slot.blocks[--slot.count]), true, true);
    }
    slot.set_credit(credits);
  }
}

// On the owner thread, at its exit: remote holders hold caches_mu, so this
// needs no fence to keep them out. The cache's counts move to the cells in
// the same critical section, so a scrape sees them in exactly one place.
void CachingHostAllocator::Impl::retire_cache(ThreadCache& tc) {
  std::lock_guard lock(caches_mu);
  drain_cache(tc);
  for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
    const ThreadCache::Slot& slot = tc.slots[c];
    if (slot.credit() != 0) {  // the cache goes: its credits stay in the record (ClassRecord::peak_out)
      std::lock_guard record_lock(records[c].mu);
      records[c].slack.fetch_add(slot.credit(), std::memory_order_relaxed);
    }
    const std::uint64_t hits = slot.hits.load(std::memory_order_relaxed);
    const std::uint64_t freed = slot.freed.load(std::memory_order_relaxed);
    if (hits == 0 && freed == 0) continue;
    ClassCounts& cc = class_counts(c);
    cc.hits.inc(hits);
    cc.freed.inc(freed);
  }
  requested_bytes.retire(tc);
  done_queries.retire(tc);
  std::erase_if(caches, [&](const auto& c) { return c.get() == &tc; });
}

}  // namespace glassbox::host_allocator
