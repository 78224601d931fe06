#include <chrono>
#include <cstdio>
#include <thread>
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "torch/timing.hpp"
namespace gha = glassbox::host_allocator;
namespace gs = glassbox::sim;
gha::CachingHostAllocator& A() {
  static gha::CachingHostAllocator a(std::make_shared<gha::SimHostBackend>(), gha::HostAllocatorOptions{});
  return a;
}
gs::SimStream& S() {
  thread_local gs::SimStream s;
  return s;
}
void* pair() {
  auto& a = A();
  auto x = a.allocate(64 << 10);
  a.record_stream(x.ptr, x.ctx, gha::SimHostBackend::id(S()));
  a.free(x.ctx);
  return x.ptr;
}
double loop_ns(long n) {
  for (int i = 0; i < 50000; ++i) pair();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) glassbox::compare::keep(pair());
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
int main() {
  for (int r = 0; r < 3; ++r) {
    std::printf("main-thread loop: %.1f ns\n", loop_ns(3000000));
    double fresh = 0;
    std::thread([&] { fresh = loop_ns(3000000); }).join();
    std::printf("fresh-thread loop: %.1f ns\n", fresh);
    long calls = glassbox::compare::calibrate(pair);
    double rate = glassbox::compare::median_calls_per_second(pair, 1, calls);
    std::printf("harness 1 thread: %.1f ns\n", 1e9 / rate);
  }
}
