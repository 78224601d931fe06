// Counter tracks in the trace file: the pinned bytes of a host allocator and
// the handles a pool lends, written as "C" events a Perfetto timeline draws
// under the spans.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "glassbox/exporters/trace_file_exporter.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "glassbox/trace/counter_track.hpp"
#include "glassbox/trace/sampler.hpp"
#include "glassbox/trace/span.hpp"
#include "trace_file_reader.hpp"

using namespace std::chrono_literals;
using glassbox::testing::read_trace_file;
namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
namespace gm = glassbox::metrics;
namespace gha = glassbox::host_allocator;

namespace {

class TraceFileCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = glassbox::testing::test_trace_path("glassbox-counters-");
    ge::TraceFileOptions o;
    o.path = path;
    o.resource = ge::Resource::make("counters-test", "");
    ge::BatchOptions b;
    b.schedule_delay = 10ms;
    b.registry = &registry;
    processor = std::make_shared<ge::TraceFileProcessor>(o, b);
    gt::set_counter_sink(processor);
  }
  void TearDown() override {
    gt::set_counter_sink(nullptr);
    std::filesystem::remove(path);
  }
  glassbox::testing::TraceFile close() {
    processor->shutdown(5s);
    return read_trace_file(path, static_cast<std::uint64_t>(::getpid()));
  }
  std::unique_ptr<gha::CachingHostAllocator> allocator() {
    gha::HostAllocatorOptions o;
    o.config = {};
    o.config.thread_cache = 0;  // every free goes to the shared lists: cached at once
    o.registry = &registry;
    return std::make_unique<gha::CachingHostAllocator>(std::make_shared<gha::SimHostBackend>(), o);
  }

  std::string path;
  gm::Registry registry;
  std::shared_ptr<ge::TraceFileProcessor> processor;
};

}  // namespace

TEST_F(TraceFileCountersTest, PinnedBytesFollowAllocateFreeAndEmptyCache) {
  auto a = allocator();
  constexpr std::int64_t kSize = 4 << 20;  // a size class of its own: not rounded up
  auto block = a->allocate(kSize);
  std::this_thread::sleep_for(2ms);
  a->free(block.ctx);
  std::this_thread::sleep_for(2ms);
  a->empty_cache();
  auto t = close();

  const auto& reserved = t.counter("glassbox.host.reserved_bytes #");
  const auto& active = t.counter("glassbox.host.active_bytes #");
  const auto& cached = t.counter("glassbox.host.cached_bytes #");
  ASSERT_FALSE(reserved.empty());
  ASSERT_FALSE(active.empty());
  ASSERT_FALSE(cached.empty());
  auto peak = [](const auto& points) {
    std::int64_t m = 0;
    for (const auto& p : points) m = std::max(m, p.value);
    return m;
  };
  EXPECT_EQ(peak(reserved), kSize);
  EXPECT_EQ(peak(active), kSize);
  EXPECT_EQ(peak(cached), kSize);  // between the free and empty_cache()
  EXPECT_EQ(reserved.back().value, 0);
  EXPECT_EQ(active.back().value, 0);
  EXPECT_EQ(cached.back().value, 0);
}

TEST_F(TraceFileCountersTest, HandlesInUseFollowThreadsAndTheLastValueIsWritten) {
  auto state = std::make_shared<glassbox::sim::FakeHandleState>();
  state->device_count = 1;
  using Pool = glassbox::handle_pool::DeviceThreadHandlePool<glassbox::sim::FakeHandleFactory>;
  auto pool = Pool::create(glassbox::sim::FakeHandleFactory("fake", state), registry);
  // The track's first sample (0) goes out as the pool makes it; this
  // thread's handle and two short threads' follow within the millisecond,
  // coalesced: the file must still end at this thread's 1.
  pool->reserve(0);
  for (int i = 0; i < 2; ++i) std::thread([&] { pool->reserve(0); }).join();
  auto t = close();
  const auto& in_use = t.counter("glassbox.handles_in_use{library=fake,device=0}");
  ASSERT_FALSE(in_use.empty());
  EXPECT_EQ(in_use.back().value, 1);
  EXPECT_EQ(processor->counter_samples_dropped(), 0u);
}

TEST_F(TraceFileCountersTest, CounterEventsSitBesideSpansInAValidFile) {
  gt::set_sampler(gt::always_on());
  gt::set_span_processor(processor);
  auto a = allocator();
  {
    gt::Span step("step");
    a->free(a->allocate(4096).ctx);
  }
  auto t = close();
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  EXPECT_TRUE(std::any_of(t.slices.begin(), t.slices.end(), [](const auto& s) { return s.name == "step"; }));
  EXPECT_FALSE(t.counter("glassbox.host.reserved_bytes #").empty());
}
