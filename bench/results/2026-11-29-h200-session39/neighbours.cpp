// Session 39's probe on the GPU host: load for the other vCPUs while one
// thread of the forward + backward benchmark runs. N threads of one kind of
// work for S seconds: `reg`, four independent xorshift chains in registers
// (as BM_HostScalingThroughput); `mem`, a 256 KiB array of each thread's own
// read and written in turn (as BM_HostScalingMemory, the size of one
// thread's 1 000-node chain). If our one-thread rate falls with neighbours
// that share no memory or lock with it, the 8-thread run's lower rate a
// thread is the host's, not the library's. Archived probe, not a library test.
//   g++ -O2 -std=c++20 -pthread neighbours.cpp -o neighbours && ./neighbours reg 7 10
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

std::uint64_t registers(Clock::time_point end) {
  std::uint64_t x[4] = {0x9E3779B97F4A7C15ULL, 0xBF58476D1CE4E5B9ULL, 0x94D049BB133111EBULL, 0x2545F4914F6CDD1DULL};
  while (Clock::now() < end)
    for (int i = 0; i < 4096; ++i)
      for (auto& v : x) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
      }
  return x[0] ^ x[1] ^ x[2] ^ x[3];
}

std::uint64_t memory(Clock::time_point end) {
  std::vector<std::uint64_t> words((256 << 10) / sizeof(std::uint64_t), 1);
  while (Clock::now() < end)
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = words[i] * 0x9E3779B97F4A7C15ULL + i;
  return words[words.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "reg") != 0 && std::strcmp(argv[1], "mem") != 0)) {
    std::fprintf(stderr, "usage: neighbours reg|mem THREADS SECONDS\n");
    return 2;
  }
  const bool reg = std::strcmp(argv[1], "reg") == 0;
  const auto end = Clock::now() + std::chrono::seconds(std::atoi(argv[3]));
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> sinks(std::atoi(argv[2]));
  for (auto& sink : sinks) threads.emplace_back([&sink, reg, end] { sink = reg ? registers(end) : memory(end); });
  for (auto& t : threads) t.join();
  std::uint64_t all = 0;
  for (auto s : sinks) all ^= s;
  std::printf("%llx\n", static_cast<unsigned long long>(all));
}
