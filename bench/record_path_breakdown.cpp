// Where a record-path pair's time goes, in one process on the GPU machine:
// the pairs of compare_host_allocator.cpp (allocate, record_stream, free)
// on the thread's own stream and on a pool stream, run on an allocator whose
// backend times each call it forwards to glassbox's CUDA backend (the
// driver's part, by call) with the time-stamp counter. What is left of a
// pair is the allocator's own work. A run's rows all come from one process:
// this host's costs move between processes (bench/RESULTS.md). Each round
// ends with the caller's-stream pair untimed (untimed_round).
//
//   glassbox-bench-record-path-breakdown [SECONDS_PER_ROUND [ROUNDS]]
#include <x86intrin.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/cuda/stream_pool.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/forwarding_host_backend.hpp"
#include "torch/timing.hpp"

namespace {
namespace gcu = glassbox::cuda;
namespace gha = glassbox::host_allocator;

enum Call { kRecord, kQuery, kRelease, kCapturing, kSerial, kOutlives, kStreamDone, kAllocate, kCalls };
constexpr std::array<const char*, kCalls> kNames{"record_event",  "query_event",     "release_event", "is_capturing",
                                                 "stream_serial", "stream_outlives", "stream_done",   "allocate"};

// One thread times; plain counters suffice.
struct Tally {
  std::array<unsigned long long, kCalls> cycles{};
  std::array<unsigned long long, kCalls> calls{};
  unsigned long long pending = 0;  // queries that found their event not yet complete
};
Tally tally;

class Timed {
 public:
  explicit Timed(Call c) noexcept : call_(c), start_(__rdtsc()) {}
  ~Timed() {
    tally.cycles[call_] += __rdtsc() - start_;
    ++tally.calls[call_];
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  Call call_;
  unsigned long long start_;
};

// Only the calls a pair makes are timed; the rest forward untimed.
class TimingBackend final : public gha::ForwardingHostBackend<gcu::CudaHostBackend> {
 public:
  TimingBackend() : ForwardingHostBackend(false, 1) {}
  void* allocate(std::size_t bytes) override {
    Timed t(kAllocate);
    return inner.allocate(bytes);
  }
  gha::EventId record_event(gha::StreamId s) override {
    Timed t(kRecord);
    return inner.record_event(s);
  }
  gha::EventPoll query_event(gha::EventId e) noexcept override {
    Timed t(kQuery);
    const gha::EventPoll poll = inner.query_event(e);
    if (poll.status == gha::EventPoll::pending) ++tally.pending;
    return poll;
  }
  void release_event(gha::EventId e) noexcept override {
    Timed t(kRelease);
    inner.release_event(e);
  }
  bool is_capturing(gha::StreamId s) const override {
    Timed t(kCapturing);
    return inner.is_capturing(s);
  }
  std::uint64_t stream_serial(gha::StreamId s) const noexcept override {
    Timed t(kSerial);
    return inner.stream_serial(s);
  }
  bool stream_outlives_allocator(gha::StreamId s) const noexcept override {
    Timed t(kOutlives);
    return inner.stream_outlives_allocator(s);
  }
  bool stream_done(gha::StreamId s) noexcept override {
    Timed t(kStreamDone);
    return inner.stream_done(s);
  }
};

double cycles_per_ns() {
  const auto c0 = __rdtsc();
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) {}
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(__rdtsc() - c0) / ns;
}

// What one Timed costs with nothing inside it: the part its own interval
// holds (taken off the backend's time) and the whole (taken off the pair's;
// the rest of it lands in the allocator's time otherwise).
struct TimerCost {
  double inside;
  double whole;
};
TimerCost timer_cycles() {
  constexpr int n = 1'000'000;
  tally = {};
  const auto c0 = __rdtsc();
  for (int i = 0; i < n; ++i) Timed t(kAllocate);
  const TimerCost cost{static_cast<double>(tally.cycles[kAllocate]) / n, static_cast<double>(__rdtsc() - c0) / n};
  tally = {};
  return cost;
}

struct Pair {
  const char* name;
  cudaStream_t stream;
};

// The pair of compare_host_allocator.cpp's record rows.
void* one_pair(gha::CachingHostAllocator& a, cudaStream_t stream) {
  auto b = a.allocate(64 << 10);
  a.record_stream(b.ptr, b.ctx, gcu::CudaHostBackend::id(stream));
  a.free(b.ctx);
  return b.ptr;
}

// Pairs of `one` in batches of 5 000 until `seconds` have passed; how many.
template <class F>
long run_for(F one, double seconds) {
  long pairs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    for (int i = 0; i < 5'000; ++i) one();
    pairs += 5'000;
  }
  return pairs;
}

void run_round(gha::CachingHostAllocator& a, const Pair& p, double seconds, double cpn, TimerCost timer, int round) {
  auto one = [&] { one_pair(a, p.stream); };
  for (int i = 0; i < 50'000; ++i) one();  // warm: the pool, the events, the lag
  tally = {};
  const auto c0 = __rdtsc();
  const long pairs = run_for(one, seconds);
  const double per_pair = static_cast<double>(__rdtsc() - c0) / cpn / static_cast<double>(pairs);
  double backend = 0, timed_calls = 0;
  std::string calls;
  for (int c = 0; c < kCalls; ++c) {
    if (tally.calls[c] == 0) continue;
    const double ns = static_cast<double>(tally.cycles[c]) / cpn / static_cast<double>(pairs);
    const double per_call = static_cast<double>(tally.calls[c]) / static_cast<double>(pairs);
    backend += ns;
    timed_calls += per_call;
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %s %.3f/pair %.0f ns (%.0f each, timer in)", kNames[c], per_call, ns,
                  static_cast<double>(tally.cycles[c]) / cpn / static_cast<double>(tally.calls[c]));
    calls += buf;
    if (c == kQuery) {
      std::snprintf(buf, sizeof buf, ", %.3f/pair pending",
                    static_cast<double>(tally.pending) / static_cast<double>(pairs));
      calls += buf;
    }
  }
  const double inside_ns = timed_calls * timer.inside / cpn, whole_ns = timed_calls * timer.whole / cpn;
  // How many blocks the pool holds: a pending probe makes the batch wait longer, with more blocks.
  const auto blocks = a.stats().allocations;
  std::printf(
      "%s round %d: pair %.0f ns = backend %.0f ns + allocator %.0f ns + timer %.0f ns |%s | blocks %lld (peak "
      "%lld)\n",
      p.name, round, per_pair, backend - inside_ns, per_pair - backend - (whole_ns - inside_ns), whole_ns,
      calls.c_str(), static_cast<long long>(blocks.current), static_cast<long long>(blocks.peak));
  std::fflush(stdout);
}

// The caller's-stream pair untimed, on the process's CUDA host allocator
// (the one the comparison times), for `seconds` after a warm-up.
double untimed_ns(cudaStream_t stream, double seconds) {
  auto one = [&] { one_pair(gcu::cuda_host_allocator(), stream); };
  for (int i = 0; i < 50'000; ++i) one();
  const auto t0 = std::chrono::steady_clock::now();
  const long pairs = run_for(one, seconds);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(pairs);
}

// A new non-blocking stream, never destroyed, as each thread of the
// comparison's harness makes one (and the caller's stream of the rounds).
cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  gcu::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

// The comparison's caller's-stream row read 136-306 ns a pair beyond its
// driver calls' reference rows, where the timed rounds here put the
// allocator's own work at 85-109 ns (bench/RESULTS.md, session 29).
// Untimed, the same pair on this thread and its stream, on a fresh thread
// with a fresh stream, and under the comparison's harness (a fresh thread
// per repetition, median of 7): which of them holds the difference.
void untimed_round(cudaStream_t own, double seconds, int round) {
  const double here = untimed_ns(own, seconds);
  double fresh = 0;
  std::thread([&] { fresh = untimed_ns(new_stream(), seconds); }).join();
  auto pair = [] {
    thread_local cudaStream_t stream = new_stream();
    return one_pair(gcu::cuda_host_allocator(), stream);
  };
  const double harness = 1e9 / glassbox::compare::median_calls_per_second(pair, 1, glassbox::compare::calibrate(pair));
  std::printf(
      "untimed round %d, the process's allocator: this thread %.0f ns a pair, a fresh thread and stream %.0f ns, "
      "the comparison's harness %.0f ns\n",
      round, here, fresh, harness);
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (argc > 3 || !(seconds > 0) || rounds < 1) {
    std::fprintf(stderr,
                 "usage: glassbox-bench-record-path-breakdown [SECONDS_PER_ROUND [ROUNDS]]: SECONDS_PER_ROUND a "
                 "number above 0 (default 0.5), ROUNDS a whole number from 1 (default 3)\n");
    return 2;
  }
  if (gcu::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-bench-record-path-breakdown: no CUDA device\n");
    return 0;
  }
  cudaStream_t own = new_stream();
  const std::array<Pair, 2> pairs{Pair{"caller's stream", own}, Pair{"pool stream", gcu::stream_from_pool()}};
  gha::CachingHostAllocator allocator(std::make_shared<TimingBackend>(), gha::HostAllocatorOptions{});
  const double cpn = cycles_per_ns();
  const TimerCost timer = timer_cycles();
  std::printf("time-stamp counter %.3f GHz; one timer %.1f ns (%.1f ns of it inside its interval), taken off\n", cpn,
              timer.whole / cpn, timer.inside / cpn);
  for (int r = 1; r <= rounds; ++r) {
    for (const Pair& p : pairs) run_round(allocator, p, seconds, cpn, timer, r);
    untimed_round(own, seconds, r);
  }
}
