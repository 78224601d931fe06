// Session 37 experiment: the dependency tables' slot choice, A/B inside one process.
#include <benchmark/benchmark.h>
#include "engine_glassbox.hpp"
#include "glassbox/autograd/node_map.hpp"
namespace e = glassbox::bench::engine;
using L = e::Glassbox;
template <e::Build<L> build>
void ab(benchmark::State& state) {
  glassbox::autograd::g_local_hash = state.range(1) != 0;
  e::time_backward<L, build>(state);
}
BENCHMARK(ab<e::fan_in<L>>)
    ->Name("FanIn")
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(ab<e::chain<L>>)
    ->Name("Chain")
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(ab<e::reentrant_chain<L>>)
    ->Name("Reentrant")
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
