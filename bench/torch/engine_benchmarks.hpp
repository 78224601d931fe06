#pragma once
// The backward engine benchmarks, written once for any autograd library, so
// glassbox (bench/bench_engine.cpp) and libtorch (bench/torch/engine_torch.cpp)
// run the same graph shapes under the same timing method and the same names.
//
// The backward-only benchmarks build their graph outside the timed region and
// time backward alone (manual time), reporting ns_per_node: backward time per
// chain node, per fan-in branch, or per reentrant (checkpoint) node.
// cpu_ns_per_node is the calling thread's CPU time for the same (CPU graphs
// run on that thread only), which stays meaningful when other processes share
// the cores. BM_ChainForwardBackwardThreads is throughput: every thread builds
// and runs its own chain, items are nodes (one forward op and its backward).
// BM_HostScaling* use no library: the host's own scaling, as references.
//
// A library is a type with:
//   using Tensor = ...;                          // t * float and t + t
//   static Tensor leaf();                        // one element, 1.0, requires grad
//   static Tensor checkpoint_step(const Tensor&) // x * kFactor under reentrant checkpointing
//   static void backward(const Tensor& root);
//   static float grad_value(const Tensor& leaf);
#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace glassbox::bench::engine {

inline constexpr float kFactor = 1.0001F;

template <class Lib>
using Build = typename Lib::Tensor (*)(const typename Lib::Tensor&, std::int64_t);

template <class Lib>
typename Lib::Tensor chain(const typename Lib::Tensor& x, std::int64_t n) {
  typename Lib::Tensor y = x;
  for (std::int64_t i = 0; i < n; ++i) y = y * kFactor;
  return y;
}

// acc = x*f + x*f + ...: n branches whose gradients all meet in x's buffer.
template <class Lib>
typename Lib::Tensor fan_in(const typename Lib::Tensor& x, std::int64_t n) {
  typename Lib::Tensor acc = x * kFactor;
  for (std::int64_t i = 1; i < n; ++i) acc = acc + x * kFactor;
  return acc;
}

// Each node recomputes its step and backpropagates through it with a nested backward.
template <class Lib>
typename Lib::Tensor reentrant_chain(const typename Lib::Tensor& x, std::int64_t n) {
  typename Lib::Tensor y = x;
  for (std::int64_t i = 0; i < n; ++i) y = Lib::checkpoint_step(y);
  return y;
}

inline double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <class Lib, Build<Lib> build>
void time_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  double wall_ns = 0.0;
  double cpu_ns = 0.0;
  for (auto _ : state) {
    typename Lib::Tensor x = Lib::leaf();
    typename Lib::Tensor y = build(x, n);
    double cpu_start = thread_cpu_ns();
    auto start = std::chrono::steady_clock::now();
    Lib::backward(y);
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    cpu_ns += thread_cpu_ns() - cpu_start;
    state.SetIterationTime(took.count() * 1e-9);
    wall_ns += took.count();
    benchmark::DoNotOptimize(Lib::grad_value(x));
  }
  auto nodes = static_cast<double>(state.iterations() * n);
  state.counters["ns_per_node"] = wall_ns / nodes;
  state.counters["cpu_ns_per_node"] = cpu_ns / nodes;
}

template <class Lib>
void chain_forward_backward(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    typename Lib::Tensor x = Lib::leaf();
    Lib::backward(chain<Lib>(x, n));
    benchmark::DoNotOptimize(Lib::grad_value(x));
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// No library, no memory: what eight threads of work in registers get
// against one on the host (clocks as more cores run, vCPUs sharing physical
// cores with neighbours), each thread on `Chains` chains of dependent integer
// steps. One chain (BM_HostScalingReference) leaves a core's execution units
// idle between dependent steps; four (BM_HostScalingThroughput) keep them
// busy, as the engine's work does (a node is some thousand instructions of
// loads, stores and calls): two vCPUs on one physical core, or clocks that
// fall as more cores run, cost the four and may not cost the one.
// References for BM_ChainForwardBackwardThreads' 8-vs-1 ratio, not bounds
// on it: work that touches memory can scale better or worse. Registered on
// both sides, so that each side's process runs the same neighbours: on the
// H100 host, glassbox's single-thread benchmarks ran up to half again as
// slow after an 8-thread one in the same process, this one included, and
// PyTorch's did not (bench/RESULTS.md, session 16; for the engine rows,
// session 21 found why: MultiThreadedProcess below). Items are steps.
template <int Chains>
void host_scaling_chains(benchmark::State& state) {
  constexpr int kSteps = 4096;
  constexpr std::uint64_t kSeeds[] = {0x9E3779B97F4A7C15ULL, 0xBF58476D1CE4E5B9ULL, 0x94D049BB133111EBULL,
                                      0x2545F4914F6CDD1DULL};
  static_assert(Chains >= 1 && Chains <= 4, "one seed per chain");
  std::uint64_t x[Chains];
  for (int c = 0; c < Chains; ++c) x[c] = kSeeds[c];
  for (auto _ : state) {
    for (int i = 0; i < kSteps; ++i) {
      for (auto& v : x) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
      }
    }
    benchmark::DoNotOptimize(x);
  }
  state.SetItemsProcessed(state.iterations() * kSteps * Chains);
}

// Memory of each thread's own, the size of what one thread's 1 000-node
// chain allocates (257 KB of graph objects on the development machine):
// read and written once per iteration, from the core's private caches. Where
// eight threads' working sets meet in a shared cache or in memory, this one
// scales less than the register chains. Items are 8-byte words.
inline void host_scaling_memory(benchmark::State& state) {
  constexpr std::size_t kWords = (256 << 10) / sizeof(std::uint64_t);
  std::vector<std::uint64_t> words(kWords, 1);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kWords; ++i) words[i] = words[i] * 0x9E3779B97F4A7C15ULL + i;
    benchmark::DoNotOptimize(words.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kWords));
}

/// A thread started before any benchmark and kept until the last one ends.
/// Until a process starts its first thread, glibc's malloc takes no locks and
/// libstdc++'s shared_ptr counts without atomic instructions; from then on
/// both pay, for good. Without it, a one-thread repetition ran on the cheap
/// paths when it came before every multi-thread one (random interleaving) and
/// on the atomic ones after: our 1-thread forward + backward read 1.6 or
/// 3.4 M nodes/s by that order alone on the H100 host (bench/RESULTS.md,
/// session 21). A library user's process has threads (glassbox's own exporters
/// start some), so every repetition runs in one that has.
class MultiThreadedProcess {
 public:
  MultiThreadedProcess()
      : thread_([this] {
          std::unique_lock lock(mu_);
          done_cv_.wait(lock, [this] { return done_; });
        }) {}
  ~MultiThreadedProcess() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    done_cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

template <class Lib>
void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("BM_ChainBackward", time_backward<Lib, chain<Lib>>)
      ->Arg(10000)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("BM_FanInBackward", time_backward<Lib, fan_in<Lib>>)
      ->Arg(10000)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("BM_ReentrantChain", time_backward<Lib, reentrant_chain<Lib>>)
      ->Arg(1000)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("BM_ChainForwardBackwardThreads", chain_forward_backward<Lib>)
      ->Arg(1000)
      ->Threads(1)
      ->Threads(2)
      ->Threads(8)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  using Reference = void (*)(benchmark::State&);
  const std::pair<const char*, Reference> references[] = {{"BM_HostScalingReference", host_scaling_chains<1>},
                                                          {"BM_HostScalingThroughput", host_scaling_chains<4>},
                                                          {"BM_HostScalingMemory", host_scaling_memory}};
  for (auto [name, reference] : references) {
    RegisterBenchmark(name, reference)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();
  }
}

/// The program's main: registers the benchmarks for Lib and runs those the
/// command line selects (Google Benchmark's flags).
template <class Lib>
int run_benchmarks(int argc, char** argv) {
  register_benchmarks<Lib>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  MultiThreadedProcess threads;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace glassbox::bench::engine
