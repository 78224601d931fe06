// Property test: thousands of random operation sequences (allocate, use on a
// stream, free, step a stream, empty_cache, capture begin/end) run against the
// allocator and against a small reference model of its rules. After every
// step the model predicts which pointer allocate() returns (a cached block or
// a new one) and every stat and metric; and no block is ever handed out while
// a stream it was used on has not passed its event.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

#include "glassbox/backend/sim_host_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"

namespace gb = glassbox::backend;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
using gb::SimHostBackend;
using gb::SimStream;

namespace {

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
};

// The allocator's rules with thread caches off, written as plainly as possible.
class Model {
 public:
  std::map<int, ModelBlock> blocks;
  std::map<std::pair<int, std::size_t>, std::vector<int>> free_lists;  // (pool, size) -> LIFO
  std::deque<ModelEvent> events[2];                                    // per pool, newest at front
  bool private_exists = false;
  bool private_released = false;
  std::map<std::size_t, std::int64_t> active_peak;  // per size, blocks out of free lists

  // Oldest first, stopping at the first event its stream has not passed.
  void process(int pool, const std::vector<std::uint64_t>& completed) {
    auto& q = events[pool];
    while (!q.empty()) {
      ModelEvent e = q.back();
      if (completed[static_cast<std::size_t>(e.stream)] < e.position) return;
      q.pop_back();
      ModelBlock& b = blocks.at(e.block);
      if (--b.event_count == 0) free_lists[{pool, b.size}].push_back(e.block);
    }
  }
  int take(int pool, std::size_t size) {
    auto& fl = free_lists[{pool, size}];
    if (fl.empty()) return -1;
    int id = fl.back();
    fl.pop_back();
    return id;
  }
  void free_all(int pool) {
    for (auto& [key, ids] : free_lists) {
      if (key.first != pool) continue;
      for (int id : ids) blocks.erase(id);
      ids.clear();
    }
  }
  std::int64_t out_of_lists(std::size_t size) const {
    std::int64_t n = 0;
    for (auto& [id, b] : blocks) n += b.size == size;
    for (auto& [key, ids] : free_lists) n -= key.second == size ? static_cast<std::int64_t>(ids.size()) : 0;
    return n;
  }
  void note_peaks() {
    for (auto& [id, b] : blocks) active_peak[b.size] = std::max(active_peak[b.size], out_of_lists(b.size));
  }
};

class Harness {
 public:
  explicit Harness(std::uint32_t seed) : rng_(seed) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse("thread_cache:0");
    o.registry = &registry_;
    o.warn = [](const std::string&) {};
    allocator_ = std::make_unique<gha::CachingHostAllocator>(backend_, o);
  }

  void run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFailure(); ++i) {
      step();
      check();
    }
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
    model_.process(pool, completed());
    int id = model_.take(pool, size);
    std::size_t allocations_before = backend_->allocations();
    gha::HostAllocation a;
    {
      std::optional<gb::SimStreamGuard> guard;
      if (capturing_) guard.emplace(streams_[kCaptureStream]);
      a = allocator_->allocate(request);
    }
    if (id >= 0) {
      ModelBlock& b = model_.blocks.at(id);
      ASSERT_EQ(a.ptr, b.ptr) << "allocator and model chose different cached blocks";
      for (auto [s, pos] : b.unsafe_until) {
        ASSERT_GE(streams_[static_cast<std::size_t>(s)].completed(), pos) << "block reused before its stream passed";
      }
      b.allocated = true;
      b.captured = capturing_;
      b.unsafe_until.clear();
    } else {
      ASSERT_EQ(backend_->allocations(), allocations_before + 1) << "model expected a new block";
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
    ASSERT_TRUE(allocator_->record_stream(a.ptr, a.ctx, SimHostBackend::id(streams_[static_cast<std::size_t>(s)])));
    auto& st = model_.blocks.at(id).streams;
    if (std::find(st.begin(), st.end(), s) == st.end()) st.push_back(s);
  }

  void free_one() {
    if (held_.empty()) return;
    std::size_t i = static_cast<std::size_t>(pick(0, static_cast<int>(held_.size()) - 1));
    auto [id, a] = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    allocator_->free(a.ctx);
    ModelBlock& b = model_.blocks.at(id);
    b.allocated = false;
    if (b.streams.empty()) {
      model_.free_lists[{b.pool, b.size}].push_back(id);
    } else if (b.captured) {
      b.event_count += static_cast<int>(b.streams.size());  // never drains
    } else {
      b.event_count += static_cast<int>(b.streams.size());
      for (int s : b.streams) {
        std::uint64_t pos = streams_[static_cast<std::size_t>(s)].submitted();
        model_.events[b.pool].push_front({s, pos, id});
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
    std::int64_t bytes = 0, active = 0, pending_blocks = 0, free_blocks = 0, default_free = 0;
    for (auto& [id, b] : model_.blocks) {
      bytes += static_cast<std::int64_t>(b.size);
      active += b.allocated;
    }
    for (auto& [key, ids] : model_.free_lists) {
      free_blocks += static_cast<std::int64_t>(ids.size());
      if (key.first == 0) default_free += static_cast<std::int64_t>(ids.size());
    }
    pending_blocks = static_cast<std::int64_t>(model_.blocks.size()) - active - free_blocks;
    std::int64_t events = static_cast<std::int64_t>(model_.events[0].size() + model_.events[1].size());

    ASSERT_EQ(st.allocations.current, static_cast<std::int64_t>(model_.blocks.size()));
    ASSERT_EQ(st.allocated_bytes.current, bytes);
    ASSERT_EQ(st.pending_events, events);
    ASSERT_EQ(st.cached_blocks, default_free);
    ASSERT_EQ(backend_->live_blocks(), model_.blocks.size());
    ASSERT_EQ(backend_->live_events(), static_cast<std::size_t>(events));
    for (const auto& c : st.classes) {
      ASSERT_EQ(c.active_requests.current, model_.out_of_lists(c.block_size)) << "size " << c.block_size;
      ASSERT_EQ(c.active_requests.peak, model_.active_peak[c.block_size]) << "size " << c.block_size;
    }
    auto snap = registry_.snapshot();
    auto sum = [&](const std::string& name, const std::string& state = "") {
      double total = 0;
      for (auto& f : snap) {
        if (f.name != name) continue;
        for (auto& s : f.series) {
          bool match = state.empty() || std::find(s.labels.begin(), s.labels.end(),
                                                  std::pair<std::string, std::string>{"state", state}) != s.labels.end();
          if (match) total += s.value;
        }
      }
      return static_cast<std::int64_t>(total);
    };
    ASSERT_EQ(sum("glassbox_host_memory_reserved_bytes"), bytes);
    ASSERT_EQ(sum("glassbox_host_pending_events"), events);
    ASSERT_EQ(sum("glassbox_host_blocks", "active"), active);
    ASSERT_EQ(sum("glassbox_host_blocks", "free"), free_blocks);
    ASSERT_EQ(sum("glassbox_host_blocks", "pending_event"), pending_blocks);
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::mt19937 rng_;
  gm::Registry registry_;
  std::shared_ptr<SimHostBackend> backend_ = std::make_shared<SimHostBackend>();
  std::unique_ptr<gha::CachingHostAllocator> allocator_;
  std::array<SimStream, kStreams> streams_;
  Model model_;
  std::vector<std::pair<int, gha::HostAllocation>> held_;
  bool capturing_ = false;
  int next_id_ = 0;
};

}  // namespace

TEST(HostAllocatorModel, RandomSequencesMatchTheReferenceModel) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Harness(seed).run(200);
    if (HasFailure()) return;
  }
}
