#include <chrono>
#include <cstdio>
#include <cstring>
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
  static gs::SimStream s;
  return s;
}  // one stream for all threads
void* pair() {
  auto& a = A();
  auto x = a.allocate(64 << 10);
  a.record_stream(x.ptr, x.ctx, gha::SimHostBackend::id(S()));
  a.free(x.ctx);
  return x.ptr;
}
void* plain() {
  auto& a = A();
  auto x = a.allocate(64 << 10);
  a.free(x.ctx);
  return x.ptr;
}
double loop_ns(void* (*f)(), long n) {
  for (int i = 0; i < 50000; ++i) f();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) glassbox::compare::keep(f());
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
int main(int argc, char**) {
  for (int r = 0; r < 3; ++r) std::printf("main loop: %.1f ns\n", loop_ns(pair, 3000000));
  if (argc > 1) {
    std::thread([] { loop_ns(plain, 100000); }).join();
    std::printf("-- a thread did cached pairs only\n");
  } else {
    std::thread([] { loop_ns(pair, 100000); }).join();
    std::printf("-- a thread did record pairs\n");
  }
  for (int r = 0; r < 3; ++r) std::printf("main loop: %.1f ns\n", loop_ns(pair, 3000000));
}
