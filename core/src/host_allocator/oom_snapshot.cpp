// What an out-of-memory leaves behind: the counter, the span event, the
// observers' call and the JSON snapshot of every block (format: see
// OutOfMemoryInfo). Core has no JSON library, so a few helpers write it.
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "allocator_impl.hpp"

namespace glassbox::host_allocator {

namespace {

// A JSON string: quotes, backslashes and control characters escaped.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// One block as read under its lock.
struct BlockView {
  std::string pool;
  unsigned bucket = 0;
  std::size_t size = 0;
  const char* state = "free";
  bool thread_cached = false;
  std::size_t requested = 0;
  std::vector<StreamId> streams;
  int pending_events = 0;
  double age_seconds = 0;
};

struct BucketTotals {
  std::size_t block_size = 0;
  std::int64_t blocks = 0, bytes = 0, active = 0, pending_event = 0, retired = 0, free = 0, thread_cached = 0;
  std::int64_t requested_bytes = 0, requests = 0, cache_hits = 0;
};

const char* state_of(const Block& b) {
  if (b.retired) return "retired";
  if ((b.use.load(std::memory_order_relaxed) & Block::kHandedOut) != 0) return "active";
  return b.event_count.load(std::memory_order_relaxed) > 0 ? "pending_event" : "free";
}

// The caller holds b.lock.
BlockView view_of(const Block& b, unsigned bucket, bool thread_cached, std::chrono::steady_clock::time_point now) {
  BlockView v;
  v.pool = std::to_string(b.pool.first) + "," + std::to_string(b.pool.second);
  v.bucket = bucket;
  v.size = b.size;
  v.state = state_of(b);
  v.thread_cached = thread_cached;
  v.requested = b.requested.load(std::memory_order_relaxed);
  b.streams.copy_to(v.streams);
  v.pending_events = b.event_count.load(std::memory_order_relaxed);
  v.age_seconds = std::chrono::duration<double>(now - b.created).count();
  return v;
}

std::string block_json(const BlockView& v) {
  std::ostringstream o;
  o << "{\"pool\":" << quoted(v.pool) << ",\"bucket\":" << v.bucket << ",\"size\":" << v.size
    << ",\"state\":" << quoted(v.state) << ",\"thread_cached\":" << (v.thread_cached ? "true" : "false")
    << ",\"requested_bytes\":" << v.requested << ",\"streams\":[";
  for (std::size_t i = 0; i < v.streams.size(); ++i) o << (i ? "," : "") << quoted(hex(v.streams[i]));
  o << "],\"pending_events\":" << v.pending_events << ",\"age_seconds\":" << v.age_seconds << "}";
  return o.str();
}

std::string bucket_json(unsigned bucket, const BucketTotals& t) {
  std::ostringstream o;
  o << "{\"bucket\":" << bucket << ",\"block_size\":" << t.block_size << ",\"blocks\":" << t.blocks
    << ",\"bytes\":" << t.bytes << ",\"active\":" << t.active << ",\"pending_event\":" << t.pending_event
    << ",\"retired\":" << t.retired << ",\"free\":" << t.free << ",\"thread_cached\":" << t.thread_cached
    << ",\"requested_bytes\":" << t.requested_bytes << ",\"requests\":" << t.requests
    << ",\"cache_hits\":" << t.cache_hits << "}";
  return o.str();
}

void add_to(BucketTotals& t, const BlockView& v) {
  t.block_size = v.size;
  ++t.blocks;
  t.bytes += static_cast<std::int64_t>(v.size);
  const std::string_view s = v.state;
  if (s == "active") {
    ++t.active;
    t.requested_bytes += static_cast<std::int64_t>(v.requested);
  }
  t.pending_event += s == "pending_event";
  t.retired += s == "retired";
  t.free += s == "free";
  t.thread_cached += v.thread_cached;
}

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace

// Every pool's blocks, each under its lock, with the thread caches held so
// that no block moves in or out of one meanwhile. Lock order: instance_mu,
// caches_mu and the caches, each pool's blocks_mu, then the block's lock.
template <class Fn>
void CachingHostAllocator::Impl::for_each_block(Fn fn) {
  std::shared_lock instances(instance_mu);
  with_caches_held([&] {
    std::set<const Block*> cached;
    for (auto& tc : caches) {
      for (auto& slot : tc->slots) cached.insert(slot.blocks, slot.blocks + slot.count);
    }
    auto read_pool = [&](BlockPool& pool) {
      std::lock_guard lock(pool.blocks_mu);
      for (Block* b : pool.blocks) {
        std::lock_guard block_lock(b->lock);
        fn(*b, cached.contains(b));
      }
    };
    read_pool(default_pool);
    for (auto& entry : private_pools) read_pool(entry.second->blocks);
  });
}

std::string CachingHostAllocator::Impl::write_oom_snapshot(std::size_t size, std::size_t rounded,
                                                           const HostStats& stats) {
  std::vector<BlockView> blocks;
  const auto now = std::chrono::steady_clock::now();
  for_each_block([&](const Block& b, bool thread_cached) {
    blocks.push_back(view_of(b, classes.bucket(b.cls), thread_cached, now));
  });
  std::map<unsigned, BucketTotals> buckets;
  for (const BlockView& v : blocks) add_to(buckets[v.bucket], v);
  for (const ClassStats& cs : stats.classes) {
    BucketTotals& t = buckets[classes.bucket(classes.index(cs.block_size))];
    t.block_size = cs.block_size;
    t.requests = cs.requests;
    t.cache_hits = cs.cache_hits;
  }
  std::ostringstream o;
  o << "{\"version\":1,\"time_unix_ns\":" << unix_now_ns() << ",\"request\":{\"size\":" << size
    << ",\"rounded_size\":" << rounded << ",\"backend\":" << quoted(backend->name())
    << "},\"config\":" << quoted(config.to_string()) << ",\"buckets\":[";
  const char* sep = "";
  for (const auto& [bucket, t] : buckets) o << std::exchange(sep, ",") << bucket_json(bucket, t);
  o << "],\"blocks\":[";
  sep = "";
  for (const BlockView& v : blocks) o << std::exchange(sep, ",") << block_json(v);
  o << "]}\n";
  // Written aside and renamed: a reader never sees half a snapshot.
  const std::string tmp = config.oom_snapshot + ".tmp";
  std::ofstream file(tmp);
  file << o.str();
  file.close();
  if (!file || std::rename(tmp.c_str(), config.oom_snapshot.c_str()) != 0) {
    warn("host allocator: could not write the out-of-memory snapshot to " + config.oom_snapshot);
    return {};
  }
  return config.oom_snapshot;
}

void CachingHostAllocator::Impl::on_out_of_memory(std::size_t size, std::size_t rounded, trace::Span& span) {
  m.oom.inc();
  OutOfMemoryInfo info{size, rounded, stats(), {}};
  if (!config.oom_snapshot.empty()) info.snapshot_path = write_oom_snapshot(size, rounded, info.stats);
  span.add_event("glassbox.host_allocator.oom", {{"glassbox.size", static_cast<std::int64_t>(size)},
                                                 {"glassbox.rounded_size", static_cast<std::int64_t>(rounded)},
                                                 {"glassbox.oom_snapshot", info.snapshot_path}});
  std::vector<std::function<void(const OutOfMemoryInfo&)>> observers;
  {
    std::lock_guard lock(oom_mu);
    observers = oom_observers;
  }
  for (auto& observer : observers) {
    try {
      observer(info);
    } catch (const std::exception& e) {
      warn(std::string("host allocator: an out-of-memory observer threw: ") + e.what());
    } catch (...) {
      warn("host allocator: an out-of-memory observer threw");
    }
  }
}

}  // namespace glassbox::host_allocator
