// The backward engine against the shapes of issue 5's libtorch anchors; the
// benchmarks themselves are in torch/engine_benchmarks.hpp, shared with
// libtorch's side (torch/engine_torch.cpp).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "engine_glassbox.hpp"
#include "glassbox/autograd/engine.hpp"
#include "glassbox/metrics/registry.hpp"

namespace {

namespace ga = glassbox::autograd;
using glassbox::bench::engine::Glassbox;
using glassbox::bench::engine::kFactor;

// glassbox only: what glassbox_autograd_node_seconds costs a node when no
// span is sampled, by EngineOptions::node_timing_interval: 1 times every node
// (what each node under a sampled span pays), 64 is the default, 2^30 times
// only a chain's first node (the countdown alone). Items are nodes.
void BM_NodeTimingInterval(benchmark::State& state) {
  constexpr int kNodes = 1000;
  glassbox::metrics::Registry registry;
  ga::EngineOptions options;
  options.registry = &registry;
  options.node_timing_interval = static_cast<std::uint32_t>(state.range(0));
  ga::Engine engine(options);
  for (auto _ : state) {
    state.PauseTiming();
    Glassbox::Tensor x = Glassbox::leaf();
    Glassbox::Tensor y = x;
    for (int i = 0; i < kNodes; ++i) y = y * kFactor;
    state.ResumeTiming();
    ga::backward({y}, {}, ga::BackwardOptions{false, &engine});
  }
  state.SetItemsProcessed(state.iterations() * (kNodes + 1));
}
BENCHMARK(BM_NodeTimingInterval)->Arg(1)->Arg(16)->Arg(64)->Arg(1 << 30);

}  // namespace

int main(int argc, char** argv) { return glassbox::bench::engine::run_benchmarks<Glassbox>(argc, argv); }
