// The real cuBLAS path, to set against PyTorch's getCurrentCUDABlasHandle
// (887 ns per call on an H100 machine): the pool's warm reserve alone, and
// current_cublas_handle(), which adds the per-thread stream-binding check.
#include <benchmark/benchmark.h>

#include "bench_util.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/handle_pool/current_handles.hpp"

namespace {

namespace gb = glassbox;

bool skipped_without_device(benchmark::State& state) {
  if (gb::cuda::cuda_device_count() > 0) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

// A non-default stream, as training code uses: binding to it is what
// current_cublas_handle() caches per thread.
cudaStream_t bench_stream() {
  static const cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    gb::cuda::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
  }();
  return stream;
}

void BM_CurrentCublasHandle(benchmark::State& state) {
  if (skipped_without_device(state)) return;
  cudaStream_t stream = bench_stream();
  // The first call creates the handle, binds the stream and allocates the workspace.
  benchmark::DoNotOptimize(gb::handle_pool::current_cublas_handle(0, stream));
  for (auto _ : state) benchmark::DoNotOptimize(gb::handle_pool::current_cublas_handle(0, stream));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CurrentCublasHandle);
BENCHMARK(BM_CurrentCublasHandle)->Apply(gb::bench::thread_sweep);

void BM_CublasPoolWarmReserve(benchmark::State& state) {
  if (skipped_without_device(state)) return;
  auto& pool = gb::handle_pool::cublas_pool();
  benchmark::DoNotOptimize(pool.reserve(0));
  for (auto _ : state) benchmark::DoNotOptimize(pool.reserve(0));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CublasPoolWarmReserve);
BENCHMARK(BM_CublasPoolWarmReserve)->Apply(gb::bench::thread_sweep);

}  // namespace

BENCHMARK_MAIN();
