// Fault injection into the caching host allocator: thousands of random
// operations with backend allocations, event records and event queries failing
// at random points. After every operation the allocator's stats and metrics
// must equal the sim backend's ground truth (live blocks, bytes, events); every
// error the caller sees must say what failed (a failed query is no error of the
// caller's: its event is dropped and counted); and at the end, once everything
// is freed and the streams have run, nothing may be left but the blocks whose
// event record or query failed (counted as unrecyclable by design).
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "host_allocator_configs.hpp"
#include "metric_value.hpp"

namespace gs = glassbox::sim;
namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;
using gha::SimHostBackend;
using glassbox::testing::metric_sum;
using glassbox::testing::metric_value;
using gs::SimStream;

namespace {

struct FaultCounts {
  int out_of_memory = 0;    // allocate() threw OutOfMemoryError
  int retried = 0;          // a failed backend allocation that the retry after empty_cache absorbed
  int record_failures = 0;  // free() threw BackendError
  int query_failures = 0;   // event polls that failed (their events dropped)
};

class FaultRun {
 public:
  explicit FaultRun(std::uint32_t seed, const char* conf) : rng_(seed) {
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(conf);
    o.registry = &registry_;
    o.warn = [](const std::string&) {};
    allocator_ = std::make_unique<gha::CachingHostAllocator>(backend_, o);
  }

  FaultCounts run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFailure(); ++i) {
      step();
      check_ground_truth();
    }
    drain();
    faults_.query_failures = static_cast<int>(metric_sum(registry_, "glassbox_host_event_errors_total"));
    return faults_;
  }

 private:
  void step() {
    int op = pick(0, 99);
    if (op < 35) return allocate();
    if (op < 55) return use_on_stream();
    if (op < 85) return free_one();
    if (op < 97) return streams_[static_cast<std::size_t>(pick(0, 2))].step(), void();
    allocator_->empty_cache();
  }

  void allocate() {
    static constexpr std::array<std::size_t, 5> kSizes = {64, 4096, 5000, 65536, 1 << 20};
    std::size_t size = kSizes[static_cast<std::size_t>(pick(0, 4))];
    int armed_allocations = pick(0, 9) == 0 ? pick(1, 2) : 0;  // 2 also defeats the retry
    bool armed_query = pick(0, 19) == 0;
    backend_->fail_allocations = armed_allocations;
    backend_->fail_queries = armed_query ? 1 : 0;
    try {
      held_.push_back(allocator_->allocate(size));
      faults_.retried += armed_allocations - backend_->fail_allocations.load();
    } catch (const glassbox::OutOfMemoryError& e) {
      ++faults_.out_of_memory;
      EXPECT_NE(std::string(e.what()).find("allocating " + std::to_string(size) + " bytes"), std::string::npos)
          << e.what();
    }
    backend_->fail_allocations = 0;  // unconsumed faults do not leak into the next step
    backend_->fail_queries = 0;
  }

  void use_on_stream() {
    if (held_.empty()) return;
    auto& a = held_[static_cast<std::size_t>(pick(0, static_cast<int>(held_.size()) - 1))];
    SimStream& s = streams_[static_cast<std::size_t>(pick(0, 2))];
    s.enqueue([] {});
    EXPECT_TRUE(allocator_->record_stream(a.ptr, a.ctx, SimHostBackend::id(s)));
  }

  void free_one() {
    if (held_.empty()) return;
    std::size_t i = static_cast<std::size_t>(pick(0, static_cast<int>(held_.size()) - 1));
    gha::HostAllocation a = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    backend_->fail_records = pick(0, 9) == 0 ? 1 : 0;
    try {
      allocator_->free(a.ctx);
    } catch (const glassbox::BackendError& e) {
      ++faults_.record_failures;
      EXPECT_NE(std::string(e.what()).find("event record failed"), std::string::npos) << e.what();
    }
    backend_->fail_records = 0;
  }

  // The sim backend is ground truth: what it holds is what was really allocated.
  void check_ground_truth() {
    auto st = allocator_->stats();
    auto bytes = static_cast<std::int64_t>(backend_->live_bytes());
    ASSERT_EQ(st.allocations.current, static_cast<std::int64_t>(backend_->live_blocks()));
    ASSERT_EQ(st.allocated_bytes.current, bytes);
    ASSERT_EQ(st.pending_events, static_cast<std::int64_t>(backend_->live_events()));
    ASSERT_EQ(metric_value(registry_, "glassbox_host_memory_reserved_bytes"), static_cast<double>(bytes));
    ASSERT_EQ(metric_value(registry_, "glassbox_host_pending_events"), static_cast<double>(backend_->live_events()));
    ASSERT_EQ(metric_sum(registry_, "glassbox_host_blocks", {{"state", "active"}}), static_cast<double>(held_.size()));
    ASSERT_EQ(metric_value(registry_, "glassbox_host_blocks_unrecyclable_total", {{"reason", "event_record_failed"}}),
              faults_.record_failures);
  }

  // Frees everything, lets the streams run, and empties the cache (which
  // first polls every event): what is left has leaked, but for the blocks
  // whose event record or query failed, kept out on purpose as their reuse
  // is unsafe (each counted once, whatever failed).
  void drain() {
    for (auto& a : held_) allocator_->free(a.ctx);
    held_.clear();
    for (auto& s : streams_) s.run_until_blocked();
    allocator_->empty_cache();
    const auto kept_out = static_cast<std::int64_t>(metric_sum(registry_, "glassbox_host_blocks_unrecyclable_total"));
    EXPECT_GE(kept_out, faults_.record_failures);
    EXPECT_EQ(backend_->live_events(), 0u);
    EXPECT_EQ(backend_->live_blocks(), static_cast<std::size_t>(kept_out));
    EXPECT_EQ(allocator_->stats().allocations.current, kept_out);
    EXPECT_EQ(metric_sum(registry_, "glassbox_host_blocks", {{"state", "pending_event"}}), kept_out);
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::mt19937 rng_;
  gm::Registry registry_;
  std::shared_ptr<SimHostBackend> backend_ = std::make_shared<SimHostBackend>();
  std::unique_ptr<gha::CachingHostAllocator> allocator_;
  std::array<SimStream, 3> streams_;
  std::vector<gha::HostAllocation> held_;
  FaultCounts faults_;
};

}  // namespace

// Under the default config (thread caches on) and with thread caches off.
class HostAllocatorFaults : public ::testing::TestWithParam<const char*> {};

TEST_P(HostAllocatorFaults, RandomFaultsKeepStatsEqualToTheBackendAndLeakNothing) {
  FaultCounts total;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    FaultRun r(seed, GetParam());
    FaultCounts f = r.run(1000);
    total.out_of_memory += f.out_of_memory;
    total.retried += f.retried;
    total.record_failures += f.record_failures;
    total.query_failures += f.query_failures;
    if (HasFailure()) return;
  }
  // Every kind of fault was really exercised, not just armed.
  EXPECT_GT(total.out_of_memory, 0);
  EXPECT_GT(total.retried, 0);
  EXPECT_GT(total.record_failures, 0);
  EXPECT_GT(total.query_failures, 0);
  std::printf("faults survived: %d out-of-memory, %d absorbed by the retry, %d event records, %d event queries\n",
              total.out_of_memory, total.retried, total.record_failures, total.query_failures);
}

INSTANTIATE_TEST_SUITE_P(Configs, HostAllocatorFaults, glassbox::testing::thread_cache_configs(),
                         glassbox::testing::config_name);
