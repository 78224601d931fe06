#include "glassbox/cuda/stream_pool.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/current_stream.hpp"
#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {

// Every pool stream made so far, for is_pool_stream(): an insert-only open
// addressing set read without a lock. It is sized for every stream of every
// device at once, twice over, so an insert always finds an empty slot and a
// probe run stays short.
class StreamSet {
 public:
  explicit StreamSet(std::size_t streams) : slots_(std::bit_ceil(std::max<std::size_t>(64, 2 * streams))) {}

  void insert(cudaStream_t s) noexcept {
    const std::uintptr_t k = key(s);
    for (std::size_t i = home(k);; i = (i + 1) & (slots_.size() - 1)) {
      std::uintptr_t empty = 0;
      if (slots_[i].compare_exchange_strong(empty, k, std::memory_order_release)) return;
    }
  }

  bool contains(cudaStream_t s) const noexcept {
    const std::uintptr_t k = key(s);
    for (std::size_t i = home(k);; i = (i + 1) & (slots_.size() - 1)) {
      const std::uintptr_t found = slots_[i].load(std::memory_order_acquire);
      if (found == k) return true;
      if (found == 0) return false;
    }
  }

 private:
  static std::uintptr_t key(cudaStream_t s) noexcept { return reinterpret_cast<std::uintptr_t>(s); }
  // The top bits of a multiplicative hash: a handle's low bits are alignment.
  std::size_t home(std::uintptr_t k) const noexcept {
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ULL) >> (64 - std::countr_zero(slots_.size())));
  }

  std::vector<std::atomic<std::uintptr_t>> slots_;
};

struct DevicePool {
  std::once_flag made;
  std::array<cudaStream_t, kPoolStreamsPerDevice> streams{};
  std::atomic<unsigned> next{0};
};

struct Pools {
  explicit Pools(int device_count)
      : devices(device_count),
        known(static_cast<std::size_t>(device_count) * kPoolStreamsPerDevice),
        per_device(std::make_unique<DevicePool[]>(static_cast<std::size_t>(device_count))) {}
  const int devices;
  StreamSet known;
  std::unique_ptr<DevicePool[]> per_device;
};

// Set once the pools exist; is_pool_stream() reads it without making them.
std::atomic<const Pools*> g_pools{nullptr};

// Never destroyed: a pool stream must stay valid for every allocator and
// every thread that holds it, until the process ends.
Pools& pools() {
  static Pools* const made = [] {
    auto* p = new Pools(cuda_device_count());
    g_pools.store(p, std::memory_order_release);
    return p;
  }();
  return *made;
}

// All of a device's streams or none: a failure destroys those made so far,
// and the next request tries again.
void make_streams(Pools& p, DevicePool& pool, int device) {
  DeviceGuard guard(device);
  std::array<cudaStream_t, kPoolStreamsPerDevice> made{};
  for (std::size_t i = 0; i < made.size(); ++i) {
    const cudaError_t status = cudaStreamCreateWithFlags(&made[i], cudaStreamNonBlocking);
    if (status != cudaSuccess) {
      for (std::size_t j = 0; j < i; ++j) (void)cudaStreamDestroy(made[j]);
      check_cuda(status, "cudaStreamCreateWithFlags (stream pool)");
    }
  }
  pool.streams = made;
  for (cudaStream_t s : made) p.known.insert(s);
}

}  // namespace

cudaStream_t stream_from_pool(int device) {
  Pools& p = pools();
  if (device < 0 || device >= p.devices) {
    throw UsageError("stream_from_pool: no CUDA device " + std::to_string(device) + "; accepted: " +
                     (p.devices == 0 ? std::string("none, this machine has no CUDA device")
                                     : "0 to " + std::to_string(p.devices - 1)));
  }
  DevicePool& pool = p.per_device[static_cast<std::size_t>(device)];
  std::call_once(pool.made, make_streams, std::ref(p), std::ref(pool), device);
  return pool.streams[pool.next.fetch_add(1, std::memory_order_relaxed) % kPoolStreamsPerDevice];
}

cudaStream_t stream_from_pool() { return stream_from_pool(current_device()); }

bool is_pool_stream(cudaStream_t stream) noexcept {
  const Pools* p = g_pools.load(std::memory_order_acquire);
  return p != nullptr && stream != nullptr && p->known.contains(stream);
}

}  // namespace glassbox::cuda
