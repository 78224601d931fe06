// What glassbox's NVTX ranges look like to a tool: NVTX loads the capture
// library (NVTX_INJECTION64_PATH) as it would Nsight Systems, and these tests
// read back what it recorded.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/nvtx/domain.hpp"
#include "glassbox/nvtx/range.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "glassbox/trace/counter_track.hpp"
#include "nvtx_capture.h"

namespace {

using Event = glassbox_nvtx_event;
using glassbox::nvtx::Category;
using Pool = glassbox::handle_pool::DeviceThreadHandlePool<glassbox::sim::FakeHandleFactory>;

constexpr std::string_view kDomain = "glassbox";
constexpr std::string_view kCublasCreate = "glassbox.handle_pool.create:cublas";

std::uint64_t this_thread_id() { return static_cast<std::uint64_t>(::syscall(SYS_gettid)); }

std::uint32_t id_of(Category c) { return static_cast<std::uint32_t>(c); }

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "no dlerror";
}

const char* kind_name(int kind) {
  switch (kind) {
    case GLASSBOX_NVTX_DOMAIN_CREATE:
      return "domain_create";
    case GLASSBOX_NVTX_REGISTER_STRING:
      return "register_string";
    case GLASSBOX_NVTX_NAME_CATEGORY:
      return "name_category";
    case GLASSBOX_NVTX_PUSH:
      return "push";
    case GLASSBOX_NVTX_POP:
      return "pop";
    case GLASSBOX_NVTX_START:
      return "start";
    case GLASSBOX_NVTX_END:
      return "end";
    case GLASSBOX_NVTX_MARK:
      return "mark";
    default:
      return "?";
  }
}

class NvtxCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("NVTX_INJECTION64_PATH");
    ASSERT_NE(path, nullptr) << "NVTX_INJECTION64_PATH is not set, so no NVTX tool records glassbox's ranges. "
                                "Run this through ctest (ctest -R nvtx_ranges), or set it to the path of "
                                "libglassbox_nvtx_capture.so.";
    ASSERT_TRUE(glassbox::nvtx::compiled_in()) << "glassbox was built without the NVTX3 headers";
    // glassbox's first NVTX call (creating its domain) is what makes NVTX load the tool.
    ASSERT_NE(glassbox::nvtx::domain(), nullptr) << "NVTX gave glassbox no domain: " << path << " did not attach";
    lib_ = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(lib_, nullptr) << "NVTX did not load " << path << ": " << dl_error();
    count_ = symbol<glassbox_nvtx_capture_count_fn>("glassbox_nvtx_capture_count");
    get_ = symbol<glassbox_nvtx_capture_get_fn>("glassbox_nvtx_capture_get");
    clear_ = symbol<glassbox_nvtx_capture_clear_fn>("glassbox_nvtx_capture_clear");
    ASSERT_TRUE(count_ && get_ && clear_) << path << " lacks the nvtx_capture.h functions: " << dl_error();
    clear_();
  }

  void TearDown() override {
    if (lib_ != nullptr) dlclose(lib_);  // balances the RTLD_NOLOAD open; NVTX keeps its own
  }

  template <class Keep>
  std::vector<Event> recorded_if(Keep keep) const {
    std::vector<Event> out;
    Event e{};
    for (std::size_t i = 0; get_(i, &e) != 0; ++i) {
      if (keep(e)) out.push_back(e);
    }
    return out;
  }

  std::vector<Event> recorded(int kind, std::string_view message) const {
    return recorded_if([&](const Event& e) { return e.kind == kind && e.message == message; });
  }

  /// Everything recorded, one event a line, for failure messages.
  std::string dump() const {
    std::ostringstream os;
    for (const Event& e : recorded_if([](const Event&) { return true; })) {
      os << "\n  " << kind_name(e.kind) << " domain=" << e.domain << " message=" << e.message
         << " category=" << e.category << " thread=" << e.thread_id << " range=" << e.range_id;
    }
    return os.str();
  }

  std::size_t count() const { return count_(); }

 private:
  template <class Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(lib_, name));
  }

  void* lib_ = nullptr;
  glassbox_nvtx_capture_count_fn count_ = nullptr;
  glassbox_nvtx_capture_get_fn get_ = nullptr;
  glassbox_nvtx_capture_clear_fn clear_ = nullptr;
};

// Checks `pop` closes `push`, on the same thread and in the same domain.
void expect_closes(const Event& pop, const Event& push) {
  EXPECT_EQ(pop.kind, GLASSBOX_NVTX_POP);
  EXPECT_NE(pop.range_id, 0u);
  EXPECT_EQ(pop.range_id, push.range_id);
  EXPECT_EQ(pop.thread_id, push.thread_id);
  EXPECT_STREQ(pop.domain, push.domain);
}

TEST_F(NvtxCapture, DomainIsCreatedOnceAndNamesHandlePoolCategory) {
  auto domains = recorded(GLASSBOX_NVTX_DOMAIN_CREATE, kDomain);
  EXPECT_EQ(domains.size(), 1u) << dump();
  auto named = recorded(GLASSBOX_NVTX_NAME_CATEGORY, "handle_pool");
  ASSERT_EQ(named.size(), 1u) << dump();
  EXPECT_EQ(named[0].domain, kDomain);
  EXPECT_EQ(named[0].category, id_of(Category::handle_pool));
}

TEST_F(NvtxCapture, HandleCreationIsANamedRangeOnTheCallingThread) {
  glassbox::metrics::Registry registry;
  auto pool = Pool::create(glassbox::sim::FakeHandleFactory("cublas"), registry);
  auto first = pool->reserve(0);

  auto pushes = recorded(GLASSBOX_NVTX_PUSH, kCublasCreate);
  ASSERT_EQ(pushes.size(), 1u) << dump();
  EXPECT_EQ(pushes[0].domain, kDomain);
  EXPECT_EQ(pushes[0].category, id_of(Category::handle_pool));
  EXPECT_EQ(pushes[0].thread_id, this_thread_id());
  auto pops = recorded(GLASSBOX_NVTX_POP, kCublasCreate);
  ASSERT_EQ(pops.size(), 1u) << dump();
  expect_closes(pops[0], pushes[0]);
  // The name reaches NVTX as a string registered once, not copied per push.
  EXPECT_EQ(recorded(GLASSBOX_NVTX_REGISTER_STRING, kCublasCreate).size(), 1u) << dump();

  std::size_t before = count();
  EXPECT_EQ(pool->reserve(0), first);
  EXPECT_EQ(count(), before) << "the thread's cached handle should cost no NVTX call:" << dump();
  EXPECT_EQ(pool->counts(0).created, 1u);
}

TEST_F(NvtxCapture, NewThreadCreatesItsOwnHandleInItsOwnRange) {
  glassbox::metrics::Registry registry;
  auto pool = Pool::create(glassbox::sim::FakeHandleFactory("cublas"), registry);
  auto mine = pool->reserve(0);
  Pool::handle_type theirs = 0;
  std::uint64_t worker = 0;
  std::thread([&] {
    theirs = pool->reserve(0);
    worker = this_thread_id();
  }).join();

  EXPECT_NE(theirs, mine);
  EXPECT_EQ(pool->counts(0).created, 2u);
  ASSERT_NE(worker, this_thread_id());
  auto pushes = recorded(GLASSBOX_NVTX_PUSH, kCublasCreate);
  auto pops = recorded(GLASSBOX_NVTX_POP, kCublasCreate);
  ASSERT_EQ(pushes.size(), 2u) << dump();
  ASSERT_EQ(pops.size(), 2u) << dump();
  EXPECT_EQ(pushes[0].thread_id, this_thread_id());
  EXPECT_EQ(pushes[1].thread_id, worker);
  EXPECT_EQ(pushes[1].domain, kDomain);
  EXPECT_EQ(pushes[1].category, id_of(Category::handle_pool));
  expect_closes(pops[0], pushes[0]);
  expect_closes(pops[1], pushes[1]);
}

TEST_F(NvtxCapture, ScopedRangesNestOnOneThread) {
  static const glassbox::nvtx::RegisteredName outer_name("glassbox.test.outer");
  {
    glassbox::nvtx::ScopedRange outer(outer_name, Category::autograd);
    glassbox::nvtx::ScopedRange inner("glassbox.test.inner", Category::cudnn);
  }

  auto got = recorded_if([](const Event& e) { return e.kind == GLASSBOX_NVTX_PUSH || e.kind == GLASSBOX_NVTX_POP; });
  ASSERT_EQ(got.size(), 4u) << dump();
  EXPECT_EQ(got[0].kind, GLASSBOX_NVTX_PUSH);
  EXPECT_STREQ(got[0].message, "glassbox.test.outer");
  EXPECT_EQ(got[0].category, id_of(Category::autograd));
  EXPECT_EQ(got[1].kind, GLASSBOX_NVTX_PUSH);
  EXPECT_STREQ(got[1].message, "glassbox.test.inner");
  EXPECT_EQ(got[1].category, id_of(Category::cudnn));
  expect_closes(got[2], got[1]);
  expect_closes(got[3], got[0]);
  for (const Event& e : got) {
    EXPECT_EQ(e.domain, kDomain);
    EXPECT_EQ(e.thread_id, this_thread_id());
  }
}

TEST_F(NvtxCapture, StartedRangeEndsOnAnotherThread) {
  static const glassbox::nvtx::RegisteredName name("glassbox.test.handoff");
  glassbox::nvtx::RangeId handed_off = glassbox::nvtx::start_range(name, Category::exporter);
  glassbox::nvtx::RangeId kept = glassbox::nvtx::start_range(name, Category::exporter);
  std::uint64_t ender = 0;
  std::thread([&] {
    glassbox::nvtx::end_range(handed_off);
    ender = this_thread_id();
  }).join();
  glassbox::nvtx::end_range(kept);

  EXPECT_NE(handed_off, 0u);
  EXPECT_NE(handed_off, kept);
  auto starts = recorded(GLASSBOX_NVTX_START, "glassbox.test.handoff");
  auto ends = recorded(GLASSBOX_NVTX_END, "glassbox.test.handoff");
  ASSERT_EQ(starts.size(), 2u) << dump();
  ASSERT_EQ(ends.size(), 2u) << dump();
  EXPECT_EQ(starts[0].range_id, handed_off);
  EXPECT_EQ(starts[0].thread_id, this_thread_id());
  EXPECT_EQ(starts[0].domain, kDomain);
  EXPECT_EQ(starts[0].category, id_of(Category::exporter));
  EXPECT_EQ(ends[0].range_id, handed_off);
  EXPECT_EQ(ends[0].thread_id, ender);
  EXPECT_NE(ender, this_thread_id());
  EXPECT_EQ(ends[0].domain, kDomain);
  EXPECT_EQ(ends[1].range_id, kept);
  EXPECT_EQ(ends[1].thread_id, this_thread_id());
}

// A state's execute is a range named after its device and state, pushed on
// the calling thread around everything the closure queues.
TEST_F(NvtxCapture, EveryCudnnStateExecuteIsARangeNamedAfterItsState) {
  namespace gc = glassbox::cudnn;
  using glassbox::sim::SimStream;
  constexpr std::string_view kExecute = "glassbox.cudnn.execute[device=1,state=3]";
  glassbox::metrics::Registry registry;
  gc::CudnnStates<gc::SimCudnnBackend> states(
      gc::SimCudnnBackend({.device_count = 2, .state_streams = SimStream::Mode::manual}, registry), {}, registry);
  SimStream caller;
  gc::CudnnWrapper<gc::SimCudnnBackend> wrapper(states, 1, &caller);
  for (int round = 0; round < 2; ++round) {
    wrapper.with_cudnn_state(3, [](gc::CudnnState<gc::SimCudnnBackend>&) {
      glassbox::nvtx::ScopedRange call("glassbox.test.cudnn_call", Category::cudnn);
    });
  }

  auto got = recorded_if([](const Event& e) { return e.kind == GLASSBOX_NVTX_PUSH || e.kind == GLASSBOX_NVTX_POP; });
  ASSERT_EQ(got.size(), 8u) << dump();
  for (std::size_t i = 0; i < got.size(); i += 4) {
    EXPECT_EQ(got[i].kind, GLASSBOX_NVTX_PUSH);
    EXPECT_EQ(got[i].message, kExecute);
    EXPECT_EQ(got[i].category, id_of(Category::cudnn));
    EXPECT_EQ(got[i].domain, kDomain);
    EXPECT_EQ(got[i].thread_id, this_thread_id());
    EXPECT_STREQ(got[i + 1].message, "glassbox.test.cudnn_call");
    expect_closes(got[i + 2], got[i + 1]);
    expect_closes(got[i + 3], got[i]);
  }
  EXPECT_EQ(recorded(GLASSBOX_NVTX_REGISTER_STRING, kExecute).size(), 1u) << "registered once per state:" << dump();
}

// The backward engine: one range per node, named after it, on the thread that ran it.
TEST_F(NvtxCapture, AutogradNodeRangesAreNamedAfterTheNodeOnItsThread) {
  namespace ga = glassbox::autograd;
  glassbox::metrics::Registry registry;
  ga::Engine engine(ga::EngineOptions{&registry});
  ga::Tensor x = ga::Tensor::ones(ga::Shape{1});
  x.set_requires_grad(true);
  ga::backward({ga::to(ga::to(x, 0) * 2.0F, ga::kCpu)}, {}, ga::BackwardOptions{false, &engine});
  auto on_device = recorded(GLASSBOX_NVTX_PUSH, "MulScalarBackward");
  ASSERT_EQ(on_device.size(), 1u) << dump();
  EXPECT_EQ(on_device[0].category, id_of(Category::autograd));
  EXPECT_STREQ(on_device[0].domain, kDomain.data());
  EXPECT_NE(on_device[0].thread_id, this_thread_id()) << "device 0's node runs on device 0's worker";
  auto on_cpu = recorded(GLASSBOX_NVTX_PUSH, "AccumulateGrad");
  ASSERT_EQ(on_cpu.size(), 1u) << dump();
  EXPECT_EQ(on_cpu[0].thread_id, this_thread_id()) << "CPU nodes run on the caller";
  EXPECT_EQ(recorded(GLASSBOX_NVTX_POP, "AccumulateGrad").size(), 1u) << dump();
}

// A sim allocator whose frees all go to the shared lists (no thread cache).
std::unique_ptr<glassbox::host_allocator::CachingHostAllocator> sim_allocator(glassbox::metrics::Registry& registry) {
  namespace gha = glassbox::host_allocator;
  gha::HostAllocatorOptions o;
  o.config = gha::HostAllocatorConfig::parse("thread_cache:0");
  o.registry = &registry;
  return std::make_unique<gha::CachingHostAllocator>(std::make_shared<gha::SimHostBackend>(), o);
}

}  // namespace

// The host allocator: a range around every backend allocation and free, and
// around empty_cache; none on a cached allocate/free pair.
TEST_F(NvtxCapture, HostAllocatorBackendCallsAndEmptyCacheAreRanges) {
  glassbox::metrics::Registry registry;
  auto allocator_owner = sim_allocator(registry);
  auto& allocator = *allocator_owner;
  allocator.free(allocator.allocate(4096).ctx);  // new block: one backend_alloc
  allocator.free(allocator.allocate(4096).ctx);  // cached: no range
  allocator.empty_cache();                       // empty_cache around one backend_free

  auto got = recorded_if([](const Event& e) { return e.kind == GLASSBOX_NVTX_PUSH || e.kind == GLASSBOX_NVTX_POP; });
  ASSERT_EQ(got.size(), 6u) << dump();
  EXPECT_STREQ(got[0].message, "glassbox.host_allocator.backend_alloc");
  expect_closes(got[1], got[0]);
  EXPECT_STREQ(got[2].message, "glassbox.host_allocator.empty_cache");
  EXPECT_STREQ(got[3].message, "glassbox.host_allocator.backend_free");
  expect_closes(got[4], got[3]);
  expect_closes(got[5], got[2]);
  for (const Event& e : got) {
    if (e.kind == GLASSBOX_NVTX_PUSH) {
      EXPECT_EQ(e.category, id_of(Category::host_allocator));
    }
  }
}

namespace {

// The id of the last counter registered under a name starting with `prefix`
// (the newest allocator's; earlier tests may have made others), 0 if none.
std::uint64_t last_counter(const std::vector<Event>& registered, std::string_view prefix) {
  std::uint64_t id = 0;
  for (const Event& e : registered) {
    if (std::string_view(e.message).starts_with(prefix)) id = e.counter_id;
  }
  return id;
}

}  // namespace

// The counter tracks reach a tool as NVTX counters (the counters extension):
// one per track, registered in glassbox's domain, sampled with its values.
TEST_F(NvtxCapture, PinnedBytesAndHandlesInUseAreNvtxCounters) {
  glassbox::metrics::Registry registry;
  auto allocator_owner = sim_allocator(registry);
  auto& allocator = *allocator_owner;
  auto pool = Pool::create(glassbox::sim::FakeHandleFactory("cublas"), registry);
  pool->reserve(0);
  constexpr std::int64_t kSize = 4 << 20;
  auto block = allocator.allocate(kSize);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  allocator.free(block.ctx);
  glassbox::trace::flush_counter_tracks();

  auto registered = recorded_if([](const Event& e) { return e.kind == GLASSBOX_NVTX_COUNTER_REGISTER; });
  const std::uint64_t reserved = last_counter(registered, "glassbox.host.reserved_bytes #");
  const std::uint64_t cached = last_counter(registered, "glassbox.host.cached_bytes #");
  const std::uint64_t handles = last_counter(registered, "glassbox.handles_in_use{library=cublas,device=0}");
  ASSERT_NE(reserved, 0u) << dump();
  ASSERT_NE(cached, 0u) << dump();
  ASSERT_NE(handles, 0u) << dump();
  for (const Event& e : registered) EXPECT_EQ(e.domain, kDomain);
  auto samples_of = [&](std::uint64_t id) {
    std::vector<std::int64_t> out;
    for (const Event& e : recorded_if([&](const Event& e) { return e.kind == GLASSBOX_NVTX_COUNTER_SAMPLE; })) {
      if (e.counter_id == id) out.push_back(e.value);
    }
    return out;
  };
  ASSERT_FALSE(samples_of(reserved).empty()) << dump();
  EXPECT_EQ(samples_of(reserved).back(), kSize);
  EXPECT_EQ(samples_of(cached).back(), kSize);  // freed: on the shared list
  ASSERT_FALSE(samples_of(handles).empty()) << dump();
  EXPECT_EQ(samples_of(handles).back(), 1);
}
