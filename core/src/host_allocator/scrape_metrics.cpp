// The allocator's metric series, and how they follow at scrape time from the
// per-class counts that the hot path keeps.
#include <array>
#include <utility>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

namespace {

constexpr const char* kUnrecyclableHelp =
    "Blocks kept out of reuse for good: used during graph capture, or an event of theirs could not be recorded or "
    "failed its poll";
constexpr const char* kUsageErrorsHelp =
    "Calls that misused the host allocator and threw UsageError, by error: record_stream on a block already freed "
    "(or freed by a racing thread), or on memory that is no allocation of it";

metrics::Counter unrecyclable(metrics::Registry& r, std::string_view reason) {
  return r.counter("glassbox_host_blocks_unrecyclable_total", kUnrecyclableHelp, {"reason"}).with({reason});
}

metrics::Counter stream_queries(metrics::Registry& r, std::string_view outcome) {
  return r
      .counter("glassbox_host_stream_queries_total",
               "Stream queries made at frees: done (the stream had run all its work) or busy; a free whose every "
               "stream answered done reused its block with no event",
               {"outcome"})
      .with({outcome});
}

metrics::Counter usage_error(metrics::Registry& r, std::string_view error) {
  return r.counter("glassbox_host_usage_errors_total", kUsageErrorsHelp, {"error"}).with({error});
}

}  // namespace

Metrics::Metrics(metrics::Registry& r)
    : registry(r),
      requested_bytes(r.counter("glassbox_host_requested_bytes_total", "Bytes asked of the host allocator").with()),
      rounded_bytes(r.counter("glassbox_host_rounded_bytes_total",
                              "Bytes handed out after rounding to a size class (minus requested = waste)")
                        .with()),
      reserved_bytes(r.gauge("glassbox_host_memory_reserved_bytes", "Pinned host bytes held, cached or in use").with()),
      cached_bytes(r.up_down_counter("glassbox_host_memory_cached_bytes", "Pinned host bytes in free blocks").with()),
      pending_events(r.up_down_counter("glassbox_host_pending_events",
                                       "Events recorded on freed blocks and not yet seen complete (the backlog)")
                         .with()),
      deferred_blocks(r.up_down_counter("glassbox_host_deferred_blocks",
                                        "Blocks freed on long-lived streams whose shared event is not recorded yet")
                          .with()),
      group_events(r.counter("glassbox_host_group_events_total",
                             "Events recorded once for a group of blocks freed on one long-lived stream")
                       .with()),
      group_blocks(r.counter("glassbox_host_group_blocks_total",
                             "Blocks covered by those events (over group_events_total: blocks per event)")
                       .with()),
      covered_events(r.counter("glassbox_host_covered_events_total",
                               "Events seen complete through a later event of their thread on their stream, with "
                               "no query of their own")
                         .with()),
      streams_done(stream_queries(r, "done")),
      streams_busy(stream_queries(r, "busy")),
      backend_alloc_seconds(r.histogram("glassbox_host_backend_alloc_seconds",
                                        "Time to get a new pinned block from the backend (the slow path)", {},
                                        metrics::exponential_buckets(1e-6, 4, 12))
                                .with()),
      unrecyclable_captured(unrecyclable(r, "captured")),
      unrecyclable_record_failed(unrecyclable(r, "event_record_failed")),
      unrecyclable_query_failed(unrecyclable(r, "event_query_failed")),
      event_errors(r.counter("glassbox_host_event_errors_total",
                             "Event polls that failed, by the backend's error: each such event was dropped and its "
                             "block kept out of reuse for good",
                             {"error"})),
      oom(r.counter("glassbox_host_oom_total",
                    "allocate() calls that threw OutOfMemoryError (after emptying the cache and retrying)")
              .with()),
      record_after_free(usage_error(r, "record_stream_after_free")),
      record_unknown(usage_error(r, "record_stream_unknown_memory")) {}

ClassMetrics* Metrics::resolve(unsigned bucket) {
  std::lock_guard lock(mu);
  auto& slot = by_bucket[bucket];
  if (!slot) {
    const std::string b = std::to_string(bucket);
    auto& blocks = registry.up_down_counter("glassbox_host_blocks", "Pinned blocks by state", {"bucket", "state"});
    slot = std::make_unique<ClassMetrics>(ClassMetrics{
        registry.counter("glassbox_host_alloc_requests_total", "allocate() calls", {"bucket"}).with({b}),
        registry.counter("glassbox_host_alloc_cache_hits_total", "allocate() calls served from a cache", {"bucket"})
            .with({b}),
        blocks.with({b, "active"}),
        blocks.with({b, "free"}),
        blocks.with({b, "pending_event"}),
        registry.up_down_counter("glassbox_host_memory_active_bytes", "Pinned bytes in blocks in use", {"bucket"})
            .with({b}),
    });
  }
  return slot.get();
}

// Under caches_mu, so that no exiting thread moves its counts meanwhile.
ClassTotals CachingHostAllocator::Impl::totals(std::uint32_t cls, const ClassCounts& cc) {
  std::lock_guard lock(caches_mu);
  return sum_totals(cls, cc);
}

ClassTotals CachingHostAllocator::Impl::sum_totals(std::uint32_t cls, const ClassCounts& cc) const {
  ClassTotals t;
  t.freed = cc.freed.value();
  for (auto& tc : caches) t.freed += tc->slots[cls].freed.load(std::memory_order_relaxed);
  t.hits = cc.hits.value();
  for (auto& tc : caches) t.hits += tc->slots[cls].hits.load(std::memory_order_relaxed);
  t.misses = cc.misses.value();
  return t;
}

std::int64_t CachingHostAllocator::Impl::cached_in_threads(std::uint32_t cls) const {
  std::int64_t n = 0;
  for (auto& tc : caches) n += tc->slots[cls].count;
  return n;
}

// Blocks by state, read at one moment: the caller holds every thread cache
// (their counts cannot change) and this holds the class record's lock, under
// which a block enters or leaves the shared lists (active_requests) or the
// backend (allocations). A block's pending count rises only while it is out
// of the lists and falls before it goes back, so pending <= out - cached in
// threads. The hot path's counters (requests - freed) are not used for the
// states: free() bumps `freed` before it queues the block's events, so they
// would show a block neither active nor pending in between.
ClassView CachingHostAllocator::Impl::view(std::uint32_t cls, const ClassCounts& cc) {
  ClassRecord& r = records[cls];
  ClassView v;
  const ClassTotals t = sum_totals(cls, cc);
  v.requests = static_cast<std::int64_t>(t.requests());
  v.hits = static_cast<std::int64_t>(t.hits);
  const std::int64_t in_threads = cached_in_threads(cls);
  std::lock_guard lock(r.mu);
  const std::int64_t out = r.active_requests.current;
  v.held = r.allocations.current;
  // Read under r.mu, after `out`: a block that stops waiting leaves `out`
  // only under r.mu, after it left the count, so no block counts twice.
  v.pending = default_pool.waiting(cls) + r.private_waiting.load(std::memory_order_relaxed);
  v.active = out - in_threads - v.pending;
  v.free = v.held - out + in_threads;
  return v;
}

// Adds to each series what changed since the last scrape: several allocators
// may share one registry, so no allocator may set a series outright.
void CachingHostAllocator::Impl::publish() {
  std::lock_guard lock(publish_mu);
  std::array<ClassView, SizeClasses::kCount> views;
  with_caches_held([&] {
    for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
      if (ClassCounts* cc = records[c].counts.load(std::memory_order_acquire)) views[c] = view(c, *cc);
    }
  });
  std::int64_t cached_bytes = 0;
  std::int64_t reserved_bytes = 0;
  std::int64_t rounded_bytes = 0;
  for (std::uint32_t c = 0; c < SizeClasses::kCount; ++c) {
    ClassCounts* cc = records[c].counts.load(std::memory_order_acquire);
    if (cc == nullptr) continue;
    const ClassView& now = views[c];
    const ClassView was = std::exchange(cc->published, now);
    const auto size = static_cast<std::int64_t>(classes.size(c));
    ClassMetrics& s = *cc->series;
    s.requests.inc(static_cast<std::uint64_t>(now.requests - was.requests));
    s.hits.inc(static_cast<std::uint64_t>(now.hits - was.hits));
    s.active_blocks.add(now.active - was.active);
    s.free_blocks.add(now.free - was.free);
    s.pending_blocks.add(now.pending - was.pending);
    s.active_bytes.add((now.active - was.active) * size);
    cached_bytes += (now.free - was.free) * size;
    reserved_bytes += (now.held - was.held) * size;
    rounded_bytes += (now.requests - was.requests) * size;
  }
  m.cached_bytes.add(cached_bytes);
  m.reserved_bytes.add(static_cast<double>(reserved_bytes));
  m.rounded_bytes.inc(static_cast<std::uint64_t>(rounded_bytes));
  std::lock_guard caches_lock(caches_mu);  // no exiting thread moves its counts meanwhile
  m.requested_bytes.inc(requested_bytes.growth(caches));
  m.streams_done.inc(done_queries.growth(caches));
}

}  // namespace glassbox::host_allocator
