#pragma once
// Lends library handles (cuBLAS, cuBLASLt, cuDNN, ...) to threads, one per
// thread and device.
//
// Libraries like cuBLAS and cuDNN want one handle per host thread, and
// creating one is slow. Threads come and go (DataParallel starts fresh ones
// every step), so handles are pooled: a thread takes one on its first reserve()
// for a device and keeps it in a thread-local window until it exits, when the
// handle goes back for the next thread. A thread's later reserves take no lock
// and create nothing. The pool creates a handle only when none is free, so it
// never holds more than the high-water mark of threads using it at once.
//
// There is deliberately no cap: with a cap of N, N+1 threads that each hold a
// handle and then wait for one another (a barrier, a join) would deadlock,
// since handles come back only at thread exit. Nothing in the pool can know
// whether user threads do that, so it does not limit.
//
// Thread-safety: every member is safe to call from any thread.
// Lifetime: the pool destroys every handle it created when it is destroyed,
// including handles still lent; threads that exit afterwards find it gone and
// return nothing (so a thread outliving the pool, e.g. exiting after atexit,
// does not crash). Keep a pool alive as long as its handles are used.
//
// Factory requirements:
//   using handle_type = ...;                       // copyable
//   std::string library() const;                  // metric label, e.g. "cublas"
//   int device_count() const;                      // valid devices are [0, count)
//   handle_type create(int device);                // may throw
//   void destroy(int device, handle_type) noexcept;
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/handle_pool/handle_pool_instrumentation.hpp"

namespace glassbox::handle_pool {

/// A pool's bookkeeping for one device.
struct PoolCounts {
  std::size_t created = 0;
  std::size_t in_use = 0;
  std::size_t available = 0;
  std::size_t high_water_mark = 0;
};

namespace detail {
std::uint64_t next_pool_id() noexcept;
[[noreturn]] void throw_bad_device(const std::string& library, int device, int count);
[[noreturn]] void throw_after_thread_exit(const std::string& library);
}  // namespace detail

template <class Factory>
class DeviceThreadHandlePool : public std::enable_shared_from_this<DeviceThreadHandlePool<Factory>> {
 public:
  using handle_type = typename Factory::handle_type;

  /// `registry` receives the pool's metrics and must outlive it.
  static std::shared_ptr<DeviceThreadHandlePool> create(Factory factory = {},
                                                        metrics::Registry& registry = metrics::Registry::global()) {
    return std::shared_ptr<DeviceThreadHandlePool>(new DeviceThreadHandlePool(std::move(factory), registry));
  }

  ~DeviceThreadHandlePool() {
    for (auto& [device, slot] : devices_) {
      for (handle_type h : slot.created) factory_.destroy(device, h);
      slot.series.in_use_changed(-static_cast<double>(slot.in_use), 0);
      slot.series.available.sub(static_cast<double>(slot.available.size()));
    }
  }

  DeviceThreadHandlePool(const DeviceThreadHandlePool&) = delete;
  DeviceThreadHandlePool& operator=(const DeviceThreadHandlePool&) = delete;

  /// The calling thread's handle for `device`. After the thread's first call
  /// for a device: no lock, no allocation, a few loads. The first call takes a
  /// free handle or creates one (throws what the factory throws, or
  /// ConfigError for a device outside [0, device_count())).
  handle_type reserve(int device) {
    Window& w = window();
    auto d = static_cast<std::size_t>(device);
    if (d < w.slots.size() && w.slots[d].held) [[likely]]
      return w.slots[d].handle;
    return reserve_slow(w, device);
  }

  PoolCounts counts(int device) const {
    std::lock_guard lock(mu_);
    auto it = devices_.find(device);
    if (it == devices_.end()) return {};
    const DeviceSlot& s = it->second;
    return {s.created.size(), s.in_use, s.available.size(), s.high_water_mark};
  }

  /// Whether `h` waits in the pool for `device`, lent to no thread.
  bool idle(int device, const handle_type& h) const {
    std::lock_guard lock(mu_);
    auto it = devices_.find(device);
    return it != devices_.end() &&
           std::find(it->second.available.begin(), it->second.available.end(), h) != it->second.available.end();
  }

  const Factory& factory() const noexcept { return factory_; }

 private:
  struct Slot {
    handle_type handle{};
    bool held = false;
  };

  // One thread's handles from one pool, returned when the thread exits.
  struct Window {
    std::uint64_t pool_id;
    std::weak_ptr<DeviceThreadHandlePool> pool;
    std::vector<Slot> slots;
    ~Window() {
      if (auto p = pool.lock()) p->give_back(*this);
    }
  };

  struct WindowSet {
    std::vector<std::unique_ptr<Window>> windows;
    ~WindowSet() {
      tl_last = nullptr;
      tl_last_id = 0;
      tl_exited = true;
      windows.clear();
    }
  };

  struct DeviceSlot {
    PoolSeries series;
    std::vector<handle_type> created;
    std::vector<handle_type> available;
    std::size_t in_use = 0;
    std::size_t high_water_mark = 0;
  };

  DeviceThreadHandlePool(Factory factory, metrics::Registry& registry)
      : factory_(std::move(factory)), library_(factory_.library()), registry_(registry) {}

  Window& window() {
    if (tl_last_id == id_) [[likely]]
      return *tl_last;
    return window_slow();
  }

  Window& window_slow() {
    if (tl_exited) detail::throw_after_thread_exit(library_);
    auto& ws = tl_windows.windows;
    Window* found = nullptr;
    for (auto& w : ws) {
      if (w->pool_id == id_) found = w.get();
    }
    if (found == nullptr) {
      std::erase_if(ws, [](const auto& w) { return w->pool.expired(); });
      ws.push_back(std::make_unique<Window>(Window{id_, this->weak_from_this(), {}}));
      found = ws.back().get();
    }
    tl_last = found;
    tl_last_id = id_;
    return *found;
  }

  handle_type reserve_slow(Window& w, int device) {
    int count = factory_.device_count();
    if (device < 0 || device >= count) detail::throw_bad_device(library_, device, count);
    handle_type h = acquire(device);
    auto d = static_cast<std::size_t>(device);
    if (w.slots.size() <= d) w.slots.resize(d + 1);
    w.slots[d] = Slot{h, true};
    return h;
  }

  DeviceSlot& device_slot(int device) {
    auto it = devices_.find(device);
    if (it == devices_.end()) {
      it = devices_.emplace(device, DeviceSlot{PoolSeries::resolve(registry_, library_, device), {}, {}, 0, 0}).first;
    }
    return it->second;
  }

  // Takes a free handle, or reserves the right to create one and creates it
  // outside the lock, so a slow create does not stall threads returning handles.
  handle_type acquire(int device) {
    std::unique_lock lock(mu_);
    DeviceSlot& s = device_slot(device);
    ++s.in_use;
    s.series.in_use_changed(1, s.in_use);
    if (!s.available.empty()) {
      handle_type h = s.available.back();
      s.available.pop_back();
      s.series.available.sub(1);
      return h;
    }
    std::size_t in_use_now = s.in_use;
    lock.unlock();
    handle_type h = create_or_roll_back(s, device);
    lock.lock();
    s.created.push_back(h);
    s.series.created.inc();
    if (in_use_now > s.high_water_mark) {
      s.high_water_mark = in_use_now;
      s.series.high_water_mark.set_max(static_cast<double>(in_use_now));
    }
    return h;
  }

  // Called unlocked; a failed create gives back the reservation acquire() took.
  handle_type create_or_roll_back(DeviceSlot& s, int device) {
    CreationScope scope(library_, device);
    try {
      handle_type h = factory_.create(device);
      scope.succeeded(s.series);
      return h;
    } catch (const std::exception& e) {
      scope.failed(e.what());
      std::lock_guard lock(mu_);
      --s.in_use;
      s.series.in_use_changed(-1, s.in_use);
      throw;
    }
  }

  void give_back(Window& w) {
    std::lock_guard lock(mu_);
    for (std::size_t d = 0; d < w.slots.size(); ++d) {
      if (!w.slots[d].held) continue;
      DeviceSlot& s = devices_.at(static_cast<int>(d));
      s.available.push_back(w.slots[d].handle);
      --s.in_use;
      s.series.available.add(1);
      s.series.in_use_changed(-1, s.in_use);
    }
    w.slots.clear();
  }

  static thread_local WindowSet tl_windows;
  static thread_local constinit Window* tl_last;
  static thread_local constinit std::uint64_t tl_last_id;
  static thread_local constinit bool tl_exited;

  Factory factory_;
  const std::string library_;
  metrics::Registry& registry_;
  const std::uint64_t id_ = detail::next_pool_id();
  mutable std::mutex mu_;
  std::map<int, DeviceSlot> devices_;  // node-based: references stay valid while unlocked
};

template <class F>
thread_local typename DeviceThreadHandlePool<F>::WindowSet DeviceThreadHandlePool<F>::tl_windows;
template <class F>
thread_local constinit typename DeviceThreadHandlePool<F>::Window* DeviceThreadHandlePool<F>::tl_last = nullptr;
template <class F>
thread_local constinit std::uint64_t DeviceThreadHandlePool<F>::tl_last_id = 0;
template <class F>
thread_local constinit bool DeviceThreadHandlePool<F>::tl_exited = false;

}  // namespace glassbox::handle_pool
