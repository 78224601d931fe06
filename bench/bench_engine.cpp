// The backward engine against the shapes of issue 5's libtorch anchors. Each
// benchmark builds its graph outside the timed region and times backward
// only (manual time), reporting ns_per_node: backward time per chain node,
// per fan-in branch, or per reentrant (checkpoint) node. cpu_ns_per_node is
// the calling thread's CPU time for the same (CPU graphs run on that thread
// only), which stays meaningful when other processes share the cores.
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/ops.hpp"

namespace ga = glassbox::autograd;
using ga::Tensor;
using ga::TensorList;

namespace {

constexpr float kFactor = 1.0001F;

Tensor scalar_leaf() {
  Tensor x = Tensor::ones(ga::Shape{1});
  x.set_requires_grad(true);
  return x;
}

Tensor chain(const Tensor& x, std::int64_t n) {
  Tensor y = x;
  for (std::int64_t i = 0; i < n; ++i) y = y * kFactor;
  return y;
}

// acc = x*f + x*f + ...: n branches whose gradients all meet in x's buffer.
Tensor fan_in(const Tensor& x, std::int64_t n) {
  Tensor acc = x * kFactor;
  for (std::int64_t i = 1; i < n; ++i) acc = acc + x * kFactor;
  return acc;
}

// Each node recomputes its step and backpropagates through it with a nested execute.
Tensor reentrant_chain(const Tensor& x, std::int64_t n) {
  Tensor y = x;
  for (std::int64_t i = 0; i < n; ++i) {
    y = ga::checkpoint([](const TensorList& in) { return TensorList{in[0] * kFactor}; }, {y})[0];
  }
  return y;
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <Tensor (*Build)(const Tensor&, std::int64_t)>
void time_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  double wall_ns = 0.0;
  double cpu_ns = 0.0;
  for (auto _ : state) {
    Tensor x = scalar_leaf();
    Tensor y = Build(x, n);
    double cpu_start = thread_cpu_ns();
    auto start = std::chrono::steady_clock::now();
    ga::backward({y});
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    cpu_ns += thread_cpu_ns() - cpu_start;
    state.SetIterationTime(took.count() * 1e-9);
    wall_ns += took.count();
    benchmark::DoNotOptimize(x.grad().item());
  }
  auto nodes = static_cast<double>(state.iterations() * n);
  state.counters["ns_per_node"] = wall_ns / nodes;
  state.counters["cpu_ns_per_node"] = cpu_ns / nodes;
}

void BM_ChainBackward(benchmark::State& state) { time_backward<chain>(state); }
void BM_FanInBackward(benchmark::State& state) { time_backward<fan_in>(state); }
void BM_ReentrantChain(benchmark::State& state) { time_backward<reentrant_chain>(state); }

// Throughput of forward + backward when every thread runs its own chain:
// items are graph nodes (one forward op and its backward node each).
void BM_ChainForwardBackwardThreads(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    Tensor x = scalar_leaf();
    ga::backward({chain(x, n)});
    benchmark::DoNotOptimize(x.grad().item());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

BENCHMARK(BM_ChainBackward)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FanInBackward)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReentrantChain)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ChainForwardBackwardThreads)
    ->Arg(1000)
    ->Threads(1)
    ->Threads(2)
    ->Threads(8)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
