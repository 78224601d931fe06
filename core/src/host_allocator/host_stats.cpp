// stats(), resets, and the Stat arithmetic.
#include <algorithm>
#include <mutex>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

void Stat::increase(std::int64_t n) noexcept {
  current += n;
  allocated += n;
  peak = std::max(peak, current);
}

void Stat::decrease(std::int64_t n) noexcept {
  current -= n;
  freed += n;
}

void DurationStat::record(double us) noexcept {
  min_us = count == 0 ? us : std::min(min_us, us);
  max_us = std::max(max_us, us);
  total_us += us;
  ++count;
}

namespace {

void add_into(Stat& total, const Stat& s) {
  total.current += s.current;
  total.peak += s.peak;  // class peaks need not coincide: an upper bound
  total.allocated += s.allocated;
  total.freed += s.freed;
}

// A thread-cached block is active in the class record but free to the user.
void take_out_cached(Stat& s, std::int64_t n) {
  s.current -= n;
  s.freed += n;
}

}  // namespace

// Adds class `cls` to `out`; the caller holds every thread cache and the
// class's lock. A block out of the shared lists and in no thread cache is
// active to the user (pending ones too, as with thread_cache:0).
void CachingHostAllocator::Impl::add_class_stats(std::uint32_t cls, HostStats& out) const {
  const ClassRecord& r = records[cls];
  if (r.allocations.allocated == 0 && r.allocations.current == 0) return;
  const std::int64_t size = static_cast<std::int64_t>(classes.size(cls));
  const std::int64_t in_threads = cached_in_threads(cls);
  ClassStats cs{classes.size(cls), r.allocations, r.allocated_bytes, r.active_requests, r.active_bytes, 0, 0};
  take_out_cached(cs.active_requests, in_threads);
  take_out_cached(cs.active_bytes, in_threads * size);
  cs.active_requests.peak = r.peak_out;
  cs.active_bytes.peak = r.peak_out * size;
  if (ClassCounts* cc = r.counts.load(std::memory_order_acquire)) {
    const ClassTotals t = sum_totals(cls, *cc);
    cs.requests = static_cast<std::int64_t>(t.requests() - r.requests_base);
    cs.cache_hits = static_cast<std::int64_t>(t.hits - r.hits_base);
  }
  add_into(out.active_requests, cs.active_requests);
  add_into(out.active_bytes, cs.active_bytes);
  out.cached_blocks += cs.allocations.current - cs.active_requests.current;
  out.cached_bytes += cs.allocated_bytes.current - cs.active_bytes.current;
  out.classes.push_back(cs);
}

// Every thread cache held, and slow_mu, which create_block and deallocate
// hold while they change a class's blocks: no block comes or goes, so the
// classes, each read under its lock, add up to the totals, and each class's
// active and cached blocks to the blocks it holds.
HostStats CachingHostAllocator::stats() const { return impl_->stats(); }

HostStats CachingHostAllocator::Impl::stats() {
  Impl& a = *this;
  HostStats out;
  a.with_caches_held([&] {
    std::lock_guard lock(a.slow_mu);
    for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
      std::lock_guard class_lock(a.records[c].mu);
      a.add_class_stats(c, out);
    }
    out.allocations = a.allocations;
    out.allocated_bytes = a.allocated_bytes;
    out.num_host_alloc = a.allocations.allocated;
    out.num_host_free = a.allocations.freed;
    out.host_alloc_time = a.host_alloc_time;
    out.host_free_time = a.host_free_time;
  });
  out.pending_events = a.default_pool.pending();
  std::shared_lock lock(a.instance_mu);
  for (auto& entry : a.private_pools) out.pending_events += entry.second->blocks.pending();
  return out;
}

void CachingHostAllocator::reset_accumulated_stats() {
  Impl& a = *impl_;
  auto reset = [](Stat& s) { s.allocated = s.freed = 0; };
  for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
    ClassRecord& r = a.records[c];
    ClassCounts* cc = r.counts.load(std::memory_order_acquire);
    const ClassTotals t = cc != nullptr ? a.totals(c, *cc) : ClassTotals{};
    std::lock_guard lock(r.mu);
    for (Stat* s : {&r.allocations, &r.allocated_bytes, &r.active_requests, &r.active_bytes}) reset(*s);
    r.requests_base = t.requests();
    r.hits_base = t.hits;
  }
  std::lock_guard lock(a.slow_mu);
  reset(a.allocations);
  reset(a.allocated_bytes);
  a.host_alloc_time = {};
  a.host_free_time = {};
}

// The handed-out peaks restart from the exact count, so the caches are held
// and their credits (peak_out's slack) go with the old peak.
void CachingHostAllocator::reset_peak_stats() {
  Impl& a = *impl_;
  a.with_caches_held([&] {
    for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
      ClassRecord& r = a.records[c];
      std::lock_guard lock(r.mu);
      for (Stat* s : {&r.allocations, &r.allocated_bytes}) s->peak = s->current;
      for (auto& tc : a.caches) tc->slots[c].set_credit(0);
      r.slack.store(0, std::memory_order_relaxed);
      r.peak_out = r.active_requests.current - a.cached_in_threads(c);
    }
  });
  std::lock_guard lock(a.slow_mu);
  a.allocations.peak = a.allocations.current;
  a.allocated_bytes.peak = a.allocated_bytes.current;
}

}  // namespace glassbox::host_allocator
