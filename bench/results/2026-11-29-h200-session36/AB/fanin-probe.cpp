// Session 36: a probe for the H200 host's two fan-in speeds (bench/RESULTS.md).
// The engine benchmark program (bench/bench_engine.cpp's benchmarks, the same
// flags and random interleaving) plus BM_FanInProbe, which times the same
// fan-in and reports, per process, what could explain a slow one:
//   near      the share of AddBackward nodes within 1 KiB of the one built
//             before it (1.0: the graph carved in order; ~0: scattered);
//   chase_ns  one dependent load over an 8 MiB random cycle (the host's
//             memory latency at that moment, whatever the graph);
//   cpu       the vCPU the thread ran on at the end.
// Build (development machine, from the repository root; one command):
//   g++ -O2 -std=c++20 -I core/include -I instrumentation/include -I build/core/include -I bench
//     bench/results/2026-11-29-h200-session36/AB/fanin-probe.cpp build/lib/libglassbox_core.a
//     build/lib/libglassbox_instrumentation.a -lbenchmark -lpthread -ldl -o .gpu-tmp/ab/fanin-probe
#include <benchmark/benchmark.h>
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "engine_glassbox.hpp"
#include "glassbox/autograd/node.hpp"

namespace {
namespace ga = glassbox::autograd;
using glassbox::bench::engine::Glassbox;

// Follows the AddBackward chain from the root: its first edge is the sum before it.
double near_share(const ga::Tensor& root) {
  std::size_t near = 0, total = 0;
  const ga::Node* n = root.grad_fn().get();
  while (n != nullptr && !n->next_edges().empty()) {
    const ga::Node* prev = n->next_edges()[0].function.get();
    if (prev == nullptr || prev->next_edges().size() != 2) break;
    auto d = reinterpret_cast<std::intptr_t>(n) - reinterpret_cast<std::intptr_t>(prev);
    near += (d < 1024 && d > -1024) ? 1 : 0;
    ++total;
    n = prev;
  }
  return total == 0 ? 0.0 : static_cast<double>(near) / static_cast<double>(total);
}

double chase_ns() {
  constexpr std::size_t kSlots = (8 << 20) / 64;
  struct alignas(64) Line {
    std::size_t next;
  };
  std::vector<Line> lines(kSlots);
  std::vector<std::size_t> order(kSlots);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937_64{42});
  for (std::size_t i = 0; i < kSlots; ++i) lines[order[i]].next = order[(i + 1) % kSlots];
  std::size_t at = 0;
  constexpr int kSteps = 1 << 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) at = lines[at].next;
  std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - t0;
  benchmark::DoNotOptimize(at);
  return took.count() / kSteps;
}

void BM_FanInProbe(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  double wall_ns = 0.0, near = 0.0;
  for (auto _ : state) {
    Glassbox::Tensor x = Glassbox::leaf();
    Glassbox::Tensor y = glassbox::bench::engine::fan_in<Glassbox>(x, n);
    near += near_share(y);
    auto start = std::chrono::steady_clock::now();
    Glassbox::backward(y);
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count() * 1e-9);
    wall_ns += took.count();
  }
  const auto iters = static_cast<double>(state.iterations());
  state.counters["ns_per_node"] = wall_ns / (iters * static_cast<double>(n));
  state.counters["near"] = near / iters;
  state.counters["chase_ns"] = chase_ns();
  state.counters["cpu"] = sched_getcpu();
}
BENCHMARK(BM_FanInProbe)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return glassbox::bench::engine::run_benchmarks<Glassbox>(argc, argv); }
