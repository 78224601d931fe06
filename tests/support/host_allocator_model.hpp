#pragma once
// A reference model of the caching host allocator's rules (with the calling
// thread's cache, or none with thread_cache:0), written as plainly as possible, and a harness that drives the allocator
// and the model with the same random operations (allocate, use on a stream, free, step a stream, empty_cache, capture
// begin/end). After every step the model predicts which pointer allocate() returns (a cached block or a new one) and
// every stat and metric; no block may be handed out while a stream it was used
// on has not passed its event. The sim backend captures events recorded on a
// capturing stream and fails their polls, as CUDA does, so a model that let
// one be recorded would see event errors. Shared by the property test and the
// fuzzer.
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "metric_value.hpp"

namespace glassbox::testing {

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
using gha::SimHostBackend;
using gs::SimStream;

/// The allocator did something the model did not predict.
class ModelMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void expect(bool ok, std::string_view what) {
  if (!ok) throw ModelMismatch(std::string(what));
}

template <class A, class B>
void expect_equal(const A& allocator, const B& model, std::string_view what) {
  if (allocator == model) return;
  std::ostringstream m;
  m << what << ": allocator " << allocator << ", model " << model;
  throw ModelMismatch(m.str());
}

constexpr int kStreams = 3;
constexpr int kCaptureStream = 2;
const gha::PoolId kPrivate{7, 0};

struct ModelBlock {
  void* ptr;
  std::size_t size;
  int pool;  // 0 default, 1 private
  bool allocated = true;
  bool captured = false;
  std::vector<int> streams;
  int event_count = 0;
  std::vector<std::pair<int, std::uint64_t>> unsafe_until;  // (stream, position) last free must wait for
};

struct ModelEvent {
  int stream;
  std::uint64_t position;
  int block;
  std::uint64_t seq;  // the order the harness's one thread recorded it in
};

// The shared query's state, one per pool (the harness's one thread polls
// its own shard only).
struct ModelProbe {
  int lag = 1;
};

// What a shared query found.
enum class ModelProbeResult { none, pending, released };

// The allocator's rules, written as plainly as possible. The harness runs on
// one thread: its cache is the only one.
class Model {
 public:
  std::map<int, ModelBlock> blocks;
  std::map<std::pair<int, std::size_t>, std::vector<int>> free_lists;  // (pool, size) -> LIFO
  // The thread's cache, default pool only: size -> LIFO of at most
  // thread_cache blocks (every size the harness asks for is cacheable).
  int thread_cache = 0;
  std::map<std::size_t, std::vector<int>> cached;
  std::deque<ModelEvent> events[2];  // per pool, newest at front
  bool private_exists = false;
  bool private_released = false;
  std::map<std::size_t, std::int64_t> active_peak;  // per size, blocks handed out (in no list, no cache)

  ModelProbe probes[2];
  std::int64_t covered_events = 0;  // released by a probe's query, with none of their own
  int last_released[2] = {-1, -1};  // the stream of the event a poll released last

  // First one query for many (probe); then, unless it freed a block of
  // `wanted` bytes or was still pending, oldest first, stopping at the first
  // event its stream has not passed, or once a block of `wanted` bytes
  // became free (0: none wanted). An allocate()'s poll (`refill`) puts the
  // other blocks it frees into the thread's cache where they fit.
  void process(int pool, const std::vector<std::uint64_t>& completed, std::size_t wanted = 0, bool refill = false) {
    int kept_by_probe = -1;
    const ModelProbeResult probed = probe(pool, completed, wanted, refill, kept_by_probe);
    if (kept_by_probe >= 0) return free_lists[{pool, wanted}].push_back(kept_by_probe);
    if (probed == ModelProbeResult::pending) return;
    auto& q = events[pool];
    while (!q.empty()) {
      ModelEvent e = q.back();
      if (completed[static_cast<std::size_t>(e.stream)] < e.position) return;
      q.pop_back();
      int kept = -1;
      release(pool, e, wanted, refill, kept);
      if (kept >= 0) return free_lists[{pool, wanted}].push_back(kept);
    }
  }
  // The shared query: of the oldest event's stream, the event with `lag`
  // younger ones in front of it among the newest 128 (or the youngest there
  // is but one). Complete: it and every older one of the stream are
  // released, and the lag steps down by an eighth and one (down to 1).
  // Pending: back at the front, and the lag grows by half and one (up to
  // 64); at 64 already, found none, so that the walk goes on. `kept`: the
  // block of `wanted` bytes it freed, if any.
  ModelProbeResult probe(int pool, const std::vector<std::uint64_t>& completed, std::size_t wanted, bool refill,
                         int& kept) {
    auto& q = events[pool];
    ModelProbe& p = probes[pool];
    if (q.size() < 2) return ModelProbeResult::none;
    const ModelEvent oldest = q.back();
    std::ptrdiff_t at = -1;
    int younger = 0;
    for (std::size_t i = 0; i < std::min<std::size_t>(128, q.size() - 1); ++i) {
      if (q[i].stream != oldest.stream || q[i].seq <= oldest.seq) continue;
      at = static_cast<std::ptrdiff_t>(i);
      if (younger++ == p.lag) break;
    }
    if (at < 0) return ModelProbeResult::none;
    const int lag = younger - 1;
    const ModelEvent probe = q[static_cast<std::size_t>(at)];
    q.erase(q.begin() + at);
    if (completed[static_cast<std::size_t>(probe.stream)] < probe.position) {
      q.push_front(probe);
      if (lag >= 64) return ModelProbeResult::none;
      p.lag = std::min(lag + 1 + lag / 2, 64);
      return ModelProbeResult::pending;
    }
    p.lag = std::max(lag - 1 - lag / 8, 1);
    std::vector<ModelEvent> covered{probe};
    for (auto it = q.begin(); it != q.end();) {
      if (it->stream == probe.stream && it->seq < probe.seq) {
        covered.push_back(*it);
        it = q.erase(it);
      } else {
        ++it;
      }
    }
    covered_events += static_cast<std::int64_t>(covered.size()) - 1;
    for (const ModelEvent& e : covered) release(pool, e, wanted, refill, kept);
    return ModelProbeResult::released;
  }
  // One event seen complete: its block is free once its last event is.
  // The first free block of `wanted` bytes is kept for the caller.
  void release(int pool, const ModelEvent& e, std::size_t wanted, bool refill, int& kept) {
    last_released[pool] = e.stream;
    ModelBlock& b = blocks.at(e.block);
    if (--b.event_count > 0) return;
    if (kept < 0 && b.size == wanted) {
      kept = e.block;
    } else if (refill) {
      put_free(pool, b.size, e.block);
    } else {
      free_lists[{pool, b.size}].push_back(e.block);
    }
  }
  // Blocks of `size` in the default pool waiting on events (or never to be
  // reused): while fewer than a cache's worth wait beyond the probe's lag
  // (no lag without a cache), and the newest and oldest events are of one
  // stream, the stream of the event released last, allocate() makes a new
  // block rather than poll.
  bool batches(std::size_t size) const {
    const auto& q = events[0];
    if (q.empty() || q.front().stream != q.back().stream || q.back().stream != last_released[0]) return false;
    int waiting = 0;
    for (auto& [id, b] : blocks) waiting += b.pool == 0 && b.size == size && !b.allocated && b.event_count > 0;
    return waiting < std::max(thread_cache, 1) + (thread_cache > 0 ? probes[0].lag : 0);
  }
  // A block freed with no stream to wait for: the thread's cache if it has
  // room, else the shared list.
  void put_free(int pool, std::size_t size, int id) {
    auto& tc = cached[size];
    if (pool == 0 && static_cast<int>(tc.size()) < thread_cache) {
      tc.push_back(id);
    } else {
      free_lists[{pool, size}].push_back(id);
    }
  }
  int take_cached(int pool, std::size_t size) {
    auto& tc = cached[size];
    if (pool != 0 || tc.empty()) return -1;
    int id = tc.back();
    tc.pop_back();
    return id;
  }
  int take(int pool, std::size_t size) {
    auto& fl = free_lists[{pool, size}];
    if (fl.empty()) return -1;
    int id = fl.back();
    fl.pop_back();
    return id;
  }
  void free_all(int pool) {
    if (pool == 0) {
      for (auto& [size, ids] : cached) {
        for (int id : ids) free_lists[{0, size}].push_back(id);
        ids.clear();
      }
    }
    for (auto& [key, ids] : free_lists) {
      if (key.first != pool) continue;
      for (int id : ids) blocks.erase(id);
      ids.clear();
    }
  }
  std::int64_t in_cache(std::size_t size) const {
    auto it = cached.find(size);
    return it == cached.end() ? 0 : static_cast<std::int64_t>(it->second.size());
  }
  std::int64_t out_of_lists(std::size_t size) const {
    std::int64_t n = 0;
    for (auto& [id, b] : blocks) n += b.size == size;
    for (auto& [key, ids] : free_lists) n -= key.second == size ? static_cast<std::int64_t>(ids.size()) : 0;
    return n;
  }
  void note_peaks() {
    for (auto& [id, b] : blocks) {
      active_peak[b.size] = std::max(active_peak[b.size], out_of_lists(b.size) - in_cache(b.size));
    }
  }
};

class ModelHarness {
 public:
  /// `pick(lo, hi)` chooses every operation and operand: a seeded generator in
  /// the unit test, the fuzzer's input bytes in the fuzz target.
  /// `conf`: the allocator's config (GLASSBOX_HOST_ALLOC_CONF syntax).
  explicit ModelHarness(std::function<int(int, int)> pick, const char* conf = "thread_cache:0")
      : pick_(std::move(pick)) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    model_.thread_cache = o.config.thread_cache;
    o.registry = &registry_;
    o.warn = [](const std::string&) {};
    allocator_ = std::make_unique<gha::CachingHostAllocator>(backend_, o);
  }

  /// One random operation, then a comparison of every stat and metric with
  /// the model's; throws ModelMismatch at the first difference.
  void step_and_check() {
    step();
    check();
  }

 private:
  std::vector<std::uint64_t> completed() const {
    std::vector<std::uint64_t> c;
    for (auto& s : streams_) c.push_back(s.completed());
    return c;
  }

  void step() {
    int op = pick(0, 99);
    if (op < 35) return allocate();
    if (op < 55) return use_on_stream();
    if (op < 80) return free_one();
    if (op < 92) return streams_[static_cast<std::size_t>(pick(0, kStreams - 1))].step(), void();
    if (op < 95) return empty_cache();
    return toggle_capture();
  }

  void allocate() {
    static const std::size_t sizes[] = {1, 100, 4096, 5000, 65536};
    std::size_t request = sizes[pick(0, 4)];
    std::size_t size = allocator_->round_size(request);
    int pool = capturing_ ? 1 : 0;
    // A cache hit polls nothing; a miss polls for a block of its size.
    int id = model_.take_cached(pool, size);
    if (id < 0) {
      if (pool != 0 || !model_.batches(size)) model_.process(pool, completed(), size, true);
      id = model_.take(pool, size);
    }
    std::size_t allocations_before = backend_->allocations();
    gha::HostAllocation a;
    {
      std::optional<gha::SimStreamGuard> guard;
      if (capturing_) guard.emplace(streams_[kCaptureStream]);
      a = allocator_->allocate(request);
    }
    if (id >= 0) {
      ModelBlock& b = model_.blocks.at(id);
      expect_equal(a.ptr, b.ptr, "cached block chosen");
      for (auto [s, pos] : b.unsafe_until) {
        expect(streams_[static_cast<std::size_t>(s)].completed() >= pos, "block reused before its stream passed");
      }
      b.allocated = true;
      b.captured = capturing_;
      b.unsafe_until.clear();
    } else {
      expect_equal(backend_->allocations(), allocations_before + 1, "new blocks (model expected one)");
      id = next_id_++;
      model_.blocks.emplace(id, ModelBlock{a.ptr, size, pool, true, capturing_, {}, 0, {}});
    }
    held_.push_back({id, a});
    model_.note_peaks();
  }

  void use_on_stream() {
    if (held_.empty()) return;
    auto& [id, a] = held_[static_cast<std::size_t>(pick(0, static_cast<int>(held_.size()) - 1))];
    int s = pick(0, kStreams - 1);
    streams_[static_cast<std::size_t>(s)].enqueue([] {});
    expect(allocator_->record_stream(a.ptr, a.ctx, SimHostBackend::id(streams_[static_cast<std::size_t>(s)])),
           "record_stream of a held block");
    ModelBlock& b = model_.blocks.at(id);
    if (std::find(b.streams.begin(), b.streams.end(), s) == b.streams.end()) b.streams.push_back(s);
    if (capturing_ && s == kCaptureStream) b.captured = true;  // a captured use: every replay reads it
  }

  void free_one() {
    if (held_.empty()) return;
    std::size_t i = static_cast<std::size_t>(pick(0, static_cast<int>(held_.size()) - 1));
    auto [id, a] = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    ModelBlock& b = model_.blocks.at(id);
    // Whether the free asked its streams, and each said it had run all its
    // work, is the allocator's guess (IdleStreamGate); read off its counts,
    // and checked against the streams: then the block is free at once.
    const std::int64_t done_before = stream_queries("done"), busy_before = stream_queries("busy");
    std::vector<bool> stream_idle;
    for (int s : b.streams) stream_idle.push_back(streams_[static_cast<std::size_t>(s)].idle());
    allocator_->free(a.ctx);
    const bool freed_at_once = !b.streams.empty() && stream_queries("busy") == busy_before &&
                               stream_queries("done") - done_before == static_cast<std::int64_t>(b.streams.size());
    b.allocated = false;
    const bool stream_capturing =
        capturing_ && std::find(b.streams.begin(), b.streams.end(), kCaptureStream) != b.streams.end();
    if (freed_at_once) {
      expect(std::all_of(stream_idle.begin(), stream_idle.end(), [](bool idle) { return idle; }),
             "freed with no event while a stream of the block had work queued");
      expect(!b.captured && !stream_capturing, "a block used during capture freed with no event");
    }
    if (b.streams.empty() || freed_at_once) {
      model_.put_free(b.pool, b.size, id);
    } else if (b.captured || stream_capturing) {
      b.event_count += static_cast<int>(b.streams.size());  // no event recorded: never drains
      ++retired_captured_;
    } else {
      b.event_count += static_cast<int>(b.streams.size());
      for (int s : b.streams) {
        std::uint64_t pos = streams_[static_cast<std::size_t>(s)].submitted();
        model_.events[b.pool].push_front({s, pos, id, ++records_});
        b.unsafe_until.emplace_back(s, pos);
      }
    }
    b.streams.clear();
  }

  void empty_cache() {
    allocator_->empty_cache();
    model_.process(0, completed());
    model_.free_all(0);
    if (model_.private_exists && model_.private_released) {
      model_.process(1, completed());
      model_.free_all(1);
      bool any = std::any_of(model_.blocks.begin(), model_.blocks.end(), [](auto& kv) { return kv.second.pool == 1; });
      if (!any) model_.private_exists = false;
    }
  }

  void toggle_capture() {
    SimStream& s = streams_[kCaptureStream];
    if (!capturing_) {
      s.begin_capture();
      allocator_->begin_allocate_to_pool(kPrivate, [id = SimHostBackend::id(s)](gha::StreamId x) { return x == id; });
      model_.private_exists = true;
      model_.private_released = false;
    } else {
      allocator_->end_allocate_to_pool(kPrivate);
      allocator_->release_pool(kPrivate);
      s.end_capture();
      model_.private_released = true;
    }
    capturing_ = !capturing_;
  }

  void check() {
    auto st = allocator_->stats();
    std::int64_t bytes = 0, active = 0, pending_blocks = 0, free_blocks = 0;
    for (auto& [id, b] : model_.blocks) {
      bytes += static_cast<std::int64_t>(b.size);
      active += b.allocated;
    }
    for (auto& [key, ids] : model_.free_lists) free_blocks += static_cast<std::int64_t>(ids.size());
    for (auto& [size, ids] : model_.cached) free_blocks += static_cast<std::int64_t>(ids.size());
    pending_blocks = static_cast<std::int64_t>(model_.blocks.size()) - active - free_blocks;
    std::int64_t events = static_cast<std::int64_t>(model_.events[0].size() + model_.events[1].size());

    expect_equal(st.allocations.current, static_cast<std::int64_t>(model_.blocks.size()), "allocations");
    expect_equal(st.allocated_bytes.current, bytes, "allocated bytes");
    expect_equal(st.pending_events, events, "pending events");
    expect_equal(st.cached_blocks, free_blocks, "cached blocks");  // every pool, as cached_bytes
    expect_equal(backend_->live_blocks(), model_.blocks.size(), "backend live blocks");
    expect_equal(backend_->live_events(), static_cast<std::size_t>(events), "backend live events");
    for (const auto& c : st.classes) {
      const std::string size = "size " + std::to_string(c.block_size);
      expect_equal(c.active_requests.current, model_.out_of_lists(c.block_size) - model_.in_cache(c.block_size),
                   size + " active requests");
      expect_equal(c.active_requests.peak, model_.active_peak[c.block_size], size + " active requests peak");
    }
    auto sum = [&](const std::string& name, const std::string& state = "") {
      gm::LabelPairs labels;
      if (!state.empty()) labels.emplace_back("state", state);
      return static_cast<std::int64_t>(metric_sum(registry_, name, labels));
    };
    expect_equal(sum("glassbox_host_memory_reserved_bytes"), bytes, "reserved bytes metric");
    expect_equal(sum("glassbox_host_pending_events"), events, "pending events metric");
    expect_equal(sum("glassbox_host_blocks", "active"), active, "active blocks metric");
    expect_equal(sum("glassbox_host_blocks", "free"), free_blocks, "free blocks metric");
    expect_equal(sum("glassbox_host_blocks", "pending_event"), pending_blocks, "pending blocks metric");
    gm::LabelPairs captured{{"reason", "captured"}};
    expect_equal(static_cast<std::int64_t>(metric_sum(registry_, "glassbox_host_blocks_unrecyclable_total", captured)),
                 retired_captured_, "blocks used during capture");
    expect_equal(sum("glassbox_host_event_errors_total"), std::int64_t{0}, "failed event polls");
    expect_equal(sum("glassbox_host_covered_events_total"), model_.covered_events, "events covered by a probe");
  }

  int pick(int lo, int hi) { return pick_(lo, hi); }
  std::int64_t stream_queries(const char* outcome) {
    return static_cast<std::int64_t>(
        metric_sum(registry_, "glassbox_host_stream_queries_total", {{"outcome", outcome}}));
  }

  std::function<int(int, int)> pick_;
  gm::Registry registry_;
  std::shared_ptr<SimHostBackend> backend_ = std::make_shared<SimHostBackend>();
  std::unique_ptr<gha::CachingHostAllocator> allocator_;
  std::array<SimStream, kStreams> streams_;
  Model model_;
  std::vector<std::pair<int, gha::HostAllocation>> held_;
  bool capturing_ = false;
  int next_id_ = 0;
  std::uint64_t records_ = 0;
  std::int64_t retired_captured_ = 0;
};

}  // namespace glassbox::testing
