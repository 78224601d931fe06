// A shared library holding glassbox, for dlopen_test.cpp, as glassbox_torch's
// Python module holds it when `import glassbox_torch` loads it. Runs the hot
// paths that read glassbox's thread_locals on the calling thread.
#include <memory>

#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/context.hpp"

namespace gha = glassbox::host_allocator;
namespace gm = glassbox::metrics;

/// 0 when every step did what it should on this thread; else the step that did not.
extern "C" [[gnu::visibility("default")]] int glassbox_dlopen_module_run() {
  gm::Registry registry;
  gha::HostAllocatorOptions options;
  options.registry = &registry;
  gha::CachingHostAllocator allocator(std::make_shared<gha::SimHostBackend>(), options);
  auto first = allocator.allocate(4096);
  allocator.free(first.ctx);
  auto second = allocator.allocate(4096);  // the block just freed, from this thread's cache
  allocator.free(second.ctx);
  if (second.ptr != first.ptr) return 1;
  std::int64_t hits = 0;
  for (const auto& c : allocator.stats().classes) hits += c.cache_hits;
  if (hits != 1) return 2;
  gm::Counter counter = registry.counter("dlopen_module_runs_total", "runs").with();
  counter.inc(3);
  if (counter.value() != 3) return 3;
  if (glassbox::trace::current_context().valid()) return 4;
  return 0;
}
