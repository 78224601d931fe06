#include <chrono>
#include <cstdio>
#include <thread>
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "torch/timing.hpp"
namespace gha = glassbox::host_allocator;
namespace gs = glassbox::sim;
int main(int argc, char**) {
  if (argc > 1) std::thread([] {}).join();
  gha::CachingHostAllocator a(std::make_shared<gha::SimHostBackend>(), gha::HostAllocatorOptions{});
  gs::SimStream s;
  long n = 40000000;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    auto x = a.allocate(64 << 10);
    a.record_stream(x.ptr, x.ctx, gha::SimHostBackend::id(s));
    a.free(x.ctx);
    glassbox::compare::keep(x.ptr);
  }
  std::printf("%s: %.1f ns\n", argc > 1 ? "MT" : "ST",
              std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
}
