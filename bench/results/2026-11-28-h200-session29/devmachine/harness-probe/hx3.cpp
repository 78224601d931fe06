// Does a driver-sized memory footprint between our steps inflate our own work?
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/forwarding_host_backend.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"
#include "torch/timing.hpp"
namespace gha = glassbox::host_allocator;
namespace gs = glassbox::sim;
static std::vector<char> buf(4 << 20);
static std::size_t K = 0;  // bytes touched per call
static std::size_t off = 0;
inline void touch() {
  // A footprint that moves, as a driver's would across its structures.
  for (std::size_t i = 0; i < K; i += 64) {
    buf[(off + i) % buf.size()]++;
  }
  off += K;
}
struct Touching : gha::ForwardingHostBackend<gha::SimHostBackend> {
  bool stream_done(gha::StreamId s) noexcept override {
    touch();
    return inner.stream_done(s);
  }
};
void* pair_on(gha::CachingHostAllocator& a, gs::SimStream& s) {
  auto x = a.allocate(64 << 10);
  a.record_stream(x.ptr, x.ctx, gha::SimHostBackend::id(s));
  a.free(x.ctx);
  return x.ptr;
}
template <class F>
double ns(F f, long n) {
  for (int i = 0; i < 50000; ++i) f();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) glassbox::compare::keep(f());
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
int main() {
  std::thread([] {}).join();  // a multi-threaded process, as any with CUDA
  gha::CachingHostAllocator a(std::make_shared<Touching>(), gha::HostAllocatorOptions{});
  gs::SimStream s;
  for (std::size_t k : {0ul, 4096ul, 16384ul, 32768ul, 65536ul, 262144ul, 1048576ul}) {
    K = k;
    double t = ns(
        [] {
          touch();
          return (void*)nullptr;
        },
        1000000);
    double p = ns([&] { return pair_on(a, s); }, 1000000);
    std::printf("footprint %7zu B: touch alone %7.1f ns, pair %7.1f ns, pair - touch %6.1f ns\n", k, t, p, p - t);
  }
}
