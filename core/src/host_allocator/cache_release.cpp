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
    ClassRecord& r = records[b->cls];  // then slow_mu, as in create_block
    std::lock_guard lock(r.mu);
    r.allocations.decrease(1);
    r.allocated_bytes.decrease(static_cast<std::int64_t>(b->size));
    std::lock_guard slow(slow_mu);
    allocations.decrease(1);
    allocated_bytes.decrease(static_cast<std::int64_t>(b->size));
    host_free_time.record(took.count());
  }
  delete b;
}

// Takes every free block off the pool's lists (and out of its block table)
// under the locks, then returns the memory with no lock held.
void CachingHostAllocator::Impl::free_pool_blocks(BlockPool& pool) {
  std::vector<Block*> doomed;
  for (auto& fl : pool.classes) {
    std::scoped_lock lock(fl.mu, pool.blocks_mu);
    for (Block* b : fl.blocks) {
      pool.blocks.erase(b);
      pool.by_ptr.erase(b->ptr);
      central_free_bytes.fetch_sub(static_cast<std::int64_t>(b->size), std::memory_order_relaxed);
    }
    doomed.insert(doomed.end(), fl.blocks.begin(), fl.blocks.end());
    fl.blocks.clear();
  }
  for (Block* b : doomed) deallocate(b);
}

void CachingHostAllocator::Impl::empty_cache() {
  nvtx::ScopedRange range(empty_cache_range(), nvtx::Category::host_allocator);
  process_events(default_pool, -1);
  for_each_cache([this](ThreadCache& tc) { drain_cache(tc); });
  free_pool_blocks(default_pool);
  std::unique_lock lock(instance_mu);
  for (auto it = freeable_pools.begin(); it != freeable_pools.end();) {
    BlockPool& pool = it->second->blocks;
    process_events(pool, -1);
    free_pool_blocks(pool);
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

void CachingHostAllocator::empty_cache() { impl_->empty_cache(); }

// Frees the least recently freed blocks of the shared free lists until the
// cached bytes are within max_cached_bytes. One trimmer at a time; a free
// that finds one running leaves the work to it.
void CachingHostAllocator::Impl::trim_to_cap() {
  std::unique_lock guard(trim_mu, std::try_to_lock);
  if (!guard.owns_lock()) return;
  const auto cap = static_cast<std::int64_t>(config.max_cached_bytes);
  // The class is copied too: until found on its list again under the lock, a
  // candidate may have been freed by empty_cache() and must not be read.
  std::vector<std::tuple<std::uint64_t, std::uint32_t, Block*>> candidates;
  for (auto& fl : default_pool.classes) {
    std::lock_guard lock(fl.mu);
    for (Block* b : fl.blocks) candidates.emplace_back(b->freed_tick, b->cls, b);
  }
  std::sort(candidates.begin(), candidates.end());
  for (auto [tick_value, cls, b] : candidates) {
    if (central_free_bytes.load() <= cap) break;
    FreeList& fl = default_pool.classes[cls];
    {
      std::scoped_lock lock(fl.mu, default_pool.blocks_mu);
      auto it = std::find(fl.blocks.begin(), fl.blocks.end(), b);
      if (it == fl.blocks.end()) continue;  // taken meanwhile
      fl.blocks.erase(it);
      default_pool.blocks.erase(b);
      default_pool.by_ptr.erase(b->ptr);
      central_free_bytes.fetch_sub(static_cast<std::int64_t>(b->size));
    }
    deallocate(b);
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
    for (auto& [event, block] : pool.events) backend->release_event(event);
    m.pending_events.add(-static_cast<std::int64_t>(pool.events.size()));
    for (Block* b : pool.blocks) {
      backend->deallocate(b->ptr, b->size);
      delete b;
    }
  };
  release_all(default_pool);
  for (auto& entry : private_pools) release_all(entry.second->blocks);
}

}  // namespace glassbox::host_allocator
