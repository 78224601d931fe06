// Giving memory back: empty_cache(), the cached-bytes cap, and teardown.
#include <algorithm>
#include <chrono>
#include <tuple>

#include "allocator_impl.hpp"
#include "glassbox/nvtx/range.hpp"

namespace glassbox::host_allocator {

namespace {
const nvtx::RegisteredName& backend_free_range() {
  static const nvtx::RegisteredName name("glassbox.host_allocator.backend_free");
  return name;
}
const nvtx::RegisteredName& empty_cache_range() {
  static const nvtx::RegisteredName name("glassbox.host_allocator.empty_cache");
  return name;
}
}  // namespace

// Forgets a block that is on no list any more and returns its memory.
void CachingHostAllocator::Impl::deallocate(Block* b) {
  nvtx::ScopedRange range(backend_free_range(), nvtx::Category::host_allocator);
  auto t0 = std::chrono::steady_clock::now();
  backend->deallocate(b->ptr, b->size);
  std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
  {
    std::lock_guard slow(slow_mu);  // with the class, as in create_block
    allocations.decrease(1);
    allocated_bytes.decrease(static_cast<std::int64_t>(b->size));
    host_free_time.record(took.count());
    ClassRecord& r = records[b->cls];
    std::lock_guard lock(r.mu);
    r.allocations.decrease(1);
    r.allocated_bytes.decrease(static_cast<std::int64_t>(b->size));
  }
  delete b;
}

// Off the shared lists and out of the reserved bytes together, so that the
// active track (reserved less cached) does not jump while the block waits
// for deallocate().
void CachingHostAllocator::Impl::count_doomed(const BlockPool& pool, const Block& b) {
  const auto size = static_cast<std::int64_t>(b.size);
  tracks.reserved_bytes.fetch_sub(size, std::memory_order_relaxed);
  count_free(pool, -size);
  tracks.reserved.changed();
}

void CachingHostAllocator::Impl::take_free_blocks(BlockPool& pool, std::vector<Block*>& doomed) {
  for (auto& fl : pool.classes) {
    std::scoped_lock lock(fl.mu, pool.blocks_mu);
    for (Block* b : fl.blocks) {
      forget(pool, b);
      count_doomed(pool, *b);
    }
    doomed.insert(doomed.end(), fl.blocks.begin(), fl.blocks.end());
    fl.blocks.clear();
  }
}

// Memory goes back to the backend with no lock held: cudaFreeHost waits for
// the whole device.
void CachingHostAllocator::Impl::empty_cache() {
  nvtx::ScopedRange range(empty_cache_range(), nvtx::Category::host_allocator);
  process_events(default_pool, -1);
  for_each_cache([this](ThreadCache& tc) { drain_cache(tc); });
  std::vector<Block*> doomed;
  take_free_blocks(default_pool, doomed);
  {
    std::unique_lock lock(instance_mu);
    for (auto it = freeable_pools.begin(); it != freeable_pools.end();) {
      BlockPool& pool = it->second->blocks;
      process_events(pool, -1);
      take_free_blocks(pool, doomed);
      bool empty;
      {
        std::lock_guard bl(pool.blocks_mu);
        empty = pool.blocks.empty();
      }
      if (empty) {
        private_pools.erase(it->first);
        it = freeable_pools.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Block* b : doomed) deallocate(b);
}

void CachingHostAllocator::empty_cache() { impl_->empty_cache(); }

// Brings the cached bytes, shared lists and thread caches together, within
// max_cached_bytes. Runs in allocate() before it makes a block, in
// process_events() and on the background thread; never in free(), never
// under a lock once it returns memory. One trimmer at a time: a caller that
// finds one running leaves the work to it.
void CachingHostAllocator::Impl::trim_to_cap() {
  if (!over_cap()) return;
  std::vector<Block*> doomed;
  {
    std::unique_lock guard(trim_mu, std::try_to_lock);
    if (!guard.owns_lock()) return;
    take_over_cap(doomed);
    if (over_cap()) {
      // The rest is in thread caches, idle threads' included: they go to the
      // shared lists, keeping their free ticks, and the oldest go from there.
      for_each_cache([this](ThreadCache& tc) { drain_cache(tc); });
      take_over_cap(doomed);
    }
  }
  for (Block* b : doomed) deallocate(b);
}

void CachingHostAllocator::Impl::take_over_cap(std::vector<Block*>& doomed) {
  // The class is copied too: until found on its list again under the lock, a
  // candidate may have been freed by empty_cache() and must not be read.
  std::vector<std::tuple<std::uint64_t, std::uint32_t, Block*>> candidates;
  for (auto& fl : default_pool.classes) {
    std::lock_guard lock(fl.mu);
    for (Block* b : fl.blocks) candidates.emplace_back(b->freed_tick, b->cls, b);
  }
  std::sort(candidates.begin(), candidates.end());
  for (auto [tick_value, cls, b] : candidates) {
    if (!over_cap()) break;
    FreeList& fl = default_pool.classes[cls];
    std::scoped_lock lock(fl.mu, default_pool.blocks_mu);
    auto it = std::find(fl.blocks.begin(), fl.blocks.end(), b);
    if (it == fl.blocks.end()) continue;  // taken meanwhile
    fl.blocks.erase(it);
    forget(default_pool, b);
    count_doomed(default_pool, *b);
    doomed.push_back(b);
  }
}

CachingHostAllocator::Impl::~Impl() {
  // Per-bucket series keep their last values; the cached and reserved totals
  // leave the shared registry with this allocator's blocks.
  m.registry.remove_collector(collector_id);
  publish();
  std::int64_t cached = 0, reserved = 0;
  for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
    ClassCounts* cc = records[c].counts.load();
    if (cc == nullptr) continue;
    cached += cc->published.free * static_cast<std::int64_t>(classes.size(c));
    reserved += cc->published.held * static_cast<std::int64_t>(classes.size(c));
  }
  m.cached_bytes.add(-cached);
  m.reserved_bytes.sub(static_cast<double>(reserved));
  if (background.joinable()) {
    background_active = false;
    background_cv.notify_all();
    background.join();
  }
  for_each_cache([](ThreadCache& tc) {
    for (auto& slot : tc.slots) slot.count = 0;  // their blocks go below, with the pool's
  });
  auto release_all = [this](BlockPool& pool) {
    for (EventShard& shard : pool.shards) {
      for (const EventGroup& g : shard.events) backend->release_event(g.event);
      m.pending_events.add(-static_cast<std::int64_t>(shard.events.size()));
      m.deferred_blocks.add(-shard.deferred.load(std::memory_order_relaxed));
    }
    for (Block* b : pool.blocks) {
      backend->deallocate(b->ptr, b->size);
      delete b;
    }
  };
  release_all(default_pool);
  for (auto& entry : private_pools) release_all(entry.second->blocks);
}

}  // namespace glassbox::host_allocator
