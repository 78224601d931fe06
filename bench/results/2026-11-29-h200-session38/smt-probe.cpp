// Which of the host's vCPUs slow each other down: two threads pinned to
// vCPUs i and j run the same throughput-bound work (four independent
// xorshift chains, as BM_HostScalingThroughput) at once; each pair's
// combined rate over the two vCPUs' rates alone. A pair near 1.0 shares
// nothing; one well below shares a physical core (hyperthreads) or is
// crowded by a neighbour at that moment. Archived probe, not a library test.
//   g++ -O2 -std=c++20 -pthread smt-probe.cpp -o smt-probe && ./smt-probe [ms]
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Steps per second of four dependent chains, run for `ms` after `go`.
double run(int cpu, int ms, const std::atomic<bool>& go) {
  pin(cpu);
  while (!go.load(std::memory_order_acquire)) {}
  std::uint64_t x[4] = {0x9E3779B97F4A7C15ULL, 0xBF58476D1CE4E5B9ULL, 0x94D049BB133111EBULL, 0x2545F4914F6CDD1DULL};
  std::uint64_t steps = 0;
  auto start = Clock::now(), end = start + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    for (int i = 0; i < 4096; ++i)
      for (auto& v : x) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
      }
    steps += 4096 * 4;
  }
  asm volatile("" : : "r"(x[0] ^ x[1] ^ x[2] ^ x[3]));
  return steps / std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<double> together(const std::vector<int>& cpus, int ms) {
  std::atomic<bool> go{false};
  std::vector<double> rates(cpus.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < cpus.size(); ++k) threads.emplace_back([&, k] { rates[k] = run(cpus[k], ms, go); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  return rates;
}
}  // namespace

int main(int argc, char** argv) {
  int ms = argc > 1 ? std::atoi(argv[1]) : 60;
  int n = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<double> solo(n);
  for (int i = 0; i < n; ++i) solo[i] = together({i}, ms)[0];
  std::printf("solo G steps/s:");
  for (double r : solo) std::printf(" %.2f", r / 1e9);
  std::printf("\npair efficiency (rate of i and j together / alone), row i:\n");
  for (int i = 0; i < n; ++i) {
    std::printf("%2d:", i);
    int worst = -1;
    double worst_e = 2;
    for (int j = 0; j < n; ++j) {
      if (j == i) {
        std::printf("   -  ");
        continue;
      }
      auto r = together({i, j}, ms);
      double e = (r[0] + r[1]) / (solo[i] + solo[j]);
      if (e < worst_e) worst_e = e, worst = j;
      std::printf(" %.2f ", e);
    }
    std::printf(" | worst %d %.2f\n", worst, worst_e);
  }
  auto all = together(
      [&] {
        std::vector<int> v(n);
        for (int i = 0; i < n; ++i) v[i] = i;
        return v;
      }(),
      ms * 3);
  double sum = 0, alone = 0;
  for (int i = 0; i < n; ++i) sum += all[i], alone += solo[i];
  std::printf("all %d at once: %.2f of their rates alone\n", n, sum / alone);
}
