// stats(), resets, and the Stat arithmetic.
#include <algorithm>

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

HostStats CachingHostAllocator::stats() const {
  Impl& a = *impl_;
  HostStats out;
  std::array<std::int64_t, SizeClasses::kCount> tc_blocks{}, tc_bytes{};
  a.for_each_cache([&](ThreadCache& tc) {
    for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
      if (tc.slots[c].count == 0) continue;  // also skips indices the policy never uses
      tc_blocks[c] += tc.slots[c].count;
      tc_bytes[c] += tc.slots[c].count * static_cast<std::int64_t>(a.classes.size(c));
    }
  });
  for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
    ClassRecord& r = a.records[c];
    ClassStats cs;
    {
      std::lock_guard lock(r.mu);
      if (r.allocations.allocated == 0 && r.allocations.current == 0) continue;
      cs = {a.classes.size(c), r.allocations, r.allocated_bytes, r.active_requests, r.active_bytes, 0, 0};
    }
    take_out_cached(cs.active_requests, tc_blocks[c]);
    take_out_cached(cs.active_bytes, tc_bytes[c]);
    if (ClassCounts* cc = r.counts.load(std::memory_order_acquire)) {
      const ClassTotals t = a.totals(c, *cc);
      std::lock_guard lock(r.mu);
      cs.requests = static_cast<std::int64_t>(t.requests() - r.requests_base);
      cs.cache_hits = static_cast<std::int64_t>(t.hits - r.hits_base);
    }
    add_into(out.active_requests, cs.active_requests);
    add_into(out.active_bytes, cs.active_bytes);
    {
      std::lock_guard lock(a.default_pool.classes[c].mu);
      out.cached_blocks += static_cast<std::int64_t>(a.default_pool.classes[c].blocks.size()) + tc_blocks[c];
    }
    out.classes.push_back(cs);
  }
  out.cached_bytes = a.central_free_bytes.load();
  for (auto b : tc_bytes) out.cached_bytes += b;
  {
    std::lock_guard lock(a.slow_mu);
    out.allocations = a.allocations;
    out.allocated_bytes = a.allocated_bytes;
    out.num_host_alloc = a.allocations.allocated;
    out.num_host_free = a.allocations.freed;
    out.host_alloc_time = a.host_alloc_time;
    out.host_free_time = a.host_free_time;
  }
  out.pending_events = a.default_pool.pending.load();
  std::shared_lock lock(a.instance_mu);
  for (auto& entry : a.private_pools) out.pending_events += entry.second->blocks.pending.load();
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

void CachingHostAllocator::reset_peak_stats() {
  Impl& a = *impl_;
  for (auto& r : a.records) {
    std::lock_guard lock(r.mu);
    for (Stat* s : {&r.allocations, &r.allocated_bytes, &r.active_requests, &r.active_bytes}) s->peak = s->current;
  }
  std::lock_guard lock(a.slow_mu);
  a.allocations.peak = a.allocations.current;
  a.allocated_bytes.peak = a.allocated_bytes.current;
}

}  // namespace glassbox::host_allocator
