// What with_cudnn_state() costs around an empty closure, against calling the
// closure directly, and how the per-state lock behaves with 1..16 threads.
//
// Three backends:
// - Null: every stream/event call is a no-op, so what remains is the
//   wrapper's own cost (index check, lock, metrics, span, NVTX range).
// - Sim: SimStream events and waits (host queues), runs anywhere.
// - Cuda: real cudaEventRecord/cudaStreamWaitEvent on a GPU; skipped without one.
//   BM_CudaEventsOnly issues the same two records and two waits directly,
//   the floor the wrapper is measured against.
#include <benchmark/benchmark.h>

#include <mutex>
#include <thread>

#include "bench_util.hpp"
#include "glassbox/cudnn/cudnn_wrapper.hpp"
#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/sim/sim_stream.hpp"
#if GLASSBOX_HAVE_CUDA
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
#endif

namespace {

namespace gc = glassbox::cudnn;
using glassbox::sim::SimStream;

// Leaked, and away from Registry::global(): benchmark threads may outlive statics.
glassbox::metrics::Registry& bench_registry() {
  static auto* registry = new glassbox::metrics::Registry;
  return *registry;
}

// One state per thread of the largest sweep, so "distinct states" never share.
constexpr gc::CudnnStatesOptions kOptions{.states_per_device = 16};

struct NullBackend {
  using stream_type = int;
  using event_type = int;
  using handle_type = int;
  struct device_guard {
    explicit device_guard(int) noexcept {}
  };
  int device_count() const noexcept { return 1; }
  int create_stream(int) { return 1; }
  void destroy_stream(int, int) noexcept {}
  int create_event(int) { return 0; }
  void destroy_event(int, int) noexcept {}
  void record(int& event, int stream) { benchmark::DoNotOptimize(event = stream); }
  void wait(int stream, int event) { benchmark::DoNotOptimize(stream + event); }
  int create_handle(int, int) { return 1; }
  void destroy_handle(int, int) noexcept {}
  int inline_handle(int, int) { return 1; }
  void* allocate(int, std::size_t, int) { return nullptr; }
  void deallocate(int, void*, std::size_t, int) noexcept {}
};

template <class B>
B make_backend() {
  return B{};
}
template <>
gc::SimCudnnBackend make_backend() {
  return gc::SimCudnnBackend({.state_streams = SimStream::Mode::manual}, bench_registry());
}

// One set of states per backend for every benchmark and thread, as in a process.
template <class B>
gc::CudnnStates<B>& states() {
  static auto* s = new gc::CudnnStates<B>(make_backend<B>(), kOptions, bench_registry());
  return *s;
}

// The closure every variant runs: it touches its state so it cannot be elided.
template <class State>
void empty_closure(State& s) {
  benchmark::DoNotOptimize(s.handle());
}

// State 0 for every thread (contention), or the thread's own state.
int state_index(const benchmark::State& state, bool shared) { return shared ? 0 : state.thread_index(); }

void BM_DirectCall(benchmark::State& state) {
  auto closure = [](int& x) { benchmark::DoNotOptimize(x); };
  int x = 0;
  for (auto _ : state) closure(x);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DirectCall);

void BM_NullWithCudnnState(benchmark::State& state, bool shared) {
  gc::CudnnWrapper<NullBackend> w(states<NullBackend>(), 0, 7);
  const int index = state_index(state, shared);
  for (auto _ : state) w.with_cudnn_state(index, empty_closure<gc::CudnnState<NullBackend>>);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_NullWithCudnnState, one_state, true)->Apply(glassbox::bench::thread_sweep);
BENCHMARK_CAPTURE(BM_NullWithCudnnState, own_state, false)->Apply(glassbox::bench::thread_sweep);

// Manual streams, drained every kDrainEvery calls with the clock stopped,
// so queues stay short and only the enqueueing side is timed. One thread
// drains at a time: SimStream::step() is not safe from two threads at once
// on one stream (it keeps a reference to the queue's front across an unlock).
void BM_SimWithCudnnState(benchmark::State& state, bool shared) {
  static std::mutex drain_mu;
  constexpr int kDrainEvery = 256;
  SimStream caller(SimStream::Mode::manual, "bench-caller");
  gc::CudnnWrapper<gc::SimCudnnBackend> w(states<gc::SimCudnnBackend>(), 0, &caller);
  const int index = state_index(state, shared);
  SimStream* state_stream = nullptr;
  w.with_cudnn_state(index, [&](auto& s) { state_stream = s.stream(); });
  auto drain = [&] {
    std::lock_guard lock(drain_mu);
    while (state_stream->run_until_blocked() + caller.run_until_blocked() > 0) {}
  };
  // Until every wait on the caller's stream has run: only then does no item
  // on the shared state stream depend on this caller any more, so the stream
  // cannot be left blocked for the next run once this caller is gone.
  auto drain_all = [&] {
    while (caller.completed() < caller.submitted()) {
      drain();
      std::this_thread::yield();
    }
  };
  int calls = 0;
  for (auto _ : state) {
    w.with_cudnn_state(index, empty_closure<gc::CudnnState<gc::SimCudnnBackend>>);
    if (++calls % kDrainEvery == 0) {
      state.PauseTiming();
      drain();
      state.ResumeTiming();
    }
  }
  drain_all();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_SimWithCudnnState, one_state, true)->Apply(glassbox::bench::thread_sweep);
BENCHMARK_CAPTURE(BM_SimWithCudnnState, own_state, false)->Apply(glassbox::bench::thread_sweep);

#if GLASSBOX_HAVE_CUDA

using glassbox::cuda::check_cuda;

// A caller's non-blocking stream on device 0 for the length of one benchmark run.
class CallerStream {
 public:
  CallerStream() {
    check_cuda(cudaSetDevice(0), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~CallerStream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

bool have_gpu(benchmark::State& state) {
  if (glassbox::cuda::cuda_device_count() > 0) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

void BM_CudaEventsOnly(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CallerStream caller, side;
  cudaEvent_t before = nullptr, after = nullptr;
  check_cuda(cudaEventCreateWithFlags(&before, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&after, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  for (auto _ : state) {
    check_cuda(cudaEventRecord(before, caller.get()), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(side.get(), before, 0), "cudaStreamWaitEvent");
    check_cuda(cudaEventRecord(after, side.get()), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(caller.get(), after, 0), "cudaStreamWaitEvent");
  }
  state.SetItemsProcessed(state.iterations());
  cudaEventDestroy(before);
  cudaEventDestroy(after);
}
BENCHMARK(BM_CudaEventsOnly);

void BM_CudaWithCudnnState(benchmark::State& state, bool shared) {
  if (!have_gpu(state)) return;
  CallerStream caller;
  gc::CudaCudnnWrapper w(states<gc::CudaCudnnBackend>(), 0, caller.get());
  const int index = state_index(state, shared);
  w.with_cudnn_state(index, empty_closure<gc::CudaCudnnState>);  // creates the state outside the timing
  for (auto _ : state) w.with_cudnn_state(index, empty_closure<gc::CudaCudnnState>);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_CudaWithCudnnState, one_state, true)->Apply(glassbox::bench::thread_sweep);
BENCHMARK_CAPTURE(BM_CudaWithCudnnState, own_state, false)->Apply(glassbox::bench::thread_sweep);

#endif

}  // namespace

BENCHMARK_MAIN();
