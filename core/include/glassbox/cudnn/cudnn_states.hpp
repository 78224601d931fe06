#pragma once
// Every CudnnState of a backend: a fixed number per device, each created on
// first use and guarded by a lock of its own, so callers of one state queue
// up while other states stay free.
//
// The lock is what makes a state shareable: execute() records the state's
// before/after events and waits on them, and two callers interleaving those
// calls would make one wait on the other's event instead of its own.
//
// Ownership: owns the backend and the states; states live until it dies.
// Thread-safety: run() may be called from any thread at once.
// Metrics: per {device, state} series (see cudnn_instrumentation.hpp),
// resolved for every slot at construction, so idle states show as zeros; the
// conv algorithm caches' series (kConvPlanCaches) likewise.
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "glassbox/cudnn/cudnn_backend.hpp"
#include "glassbox/cudnn/cudnn_instrumentation.hpp"
#include "glassbox/cudnn/cudnn_state.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::cudnn {

struct CudnnStatesOptions {
  /// States per device; indices run 0..states_per_device-1.
  int states_per_device = 4;
  /// Times the wait for a busy state (glassbox_cudnn_state_wait_seconds).
  /// A test's clock can tell it that a caller is waiting, and for how long.
  WaitClock wait_clock = [] { return std::chrono::steady_clock::now(); };

  /// Defaults, with states_per_device from GLASSBOX_CUDNN_STATES_PER_DEVICE
  /// when set (an integer in 1..1024; anything else throws ConfigError).
  static CudnnStatesOptions from_env();
};

namespace detail {
void check_options(const CudnnStatesOptions& options);
[[noreturn]] void throw_bad_device(int device, int device_count);
[[noreturn]] void throw_bad_index(int device, int index, int states_per_device);
}  // namespace detail

template <CudnnBackend B>
class CudnnStates {
 public:
  using stream_type = typename B::stream_type;

  /// `registry` receives the metrics and must outlive this object.
  explicit CudnnStates(B backend = B{}, CudnnStatesOptions options = {},
                       metrics::Registry& registry = metrics::Registry::global())
      : backend_(std::move(backend)), options_(options), device_count_(backend_.device_count()) {
    detail::check_options(options_);
    for (const char* cache : kConvPlanCaches) AlgorithmCacheSeries::resolve(registry, cache);
    for (int d = 0; d < device_count_; ++d) {
      for (int i = 0; i < options_.states_per_device; ++i) {
        slots_.push_back(std::make_unique<Slot>(StateSeries::resolve(registry, d, i)));
      }
    }
  }
  CudnnStates(const CudnnStates&) = delete;
  CudnnStates& operator=(const CudnnStates&) = delete;

  /// With `device` current, waits for state `index` of `device` (creating it
  /// on first use), then runs state.execute(caller, f): `f(state)` is
  /// ordered after the work already on `caller`, and `caller`'s later work
  /// after it. Throws ConfigError for a device or index out of range, and
  /// whatever creating the state or `f` throws.
  template <class F>
  void run(int device, stream_type caller, int index, F&& f) {
    Slot& slot = slot_for(device, index);
    typename B::device_guard guard(device);
    std::unique_lock lock = lock_timed(slot.mu, slot.series.wait_seconds, options_.wait_clock);
    if (!slot.state) slot.state = std::make_unique<CudnnState<B>>(backend_, device, index, slot.series);
    slot.state->execute(caller, std::forward<F>(f));
  }

  int states_per_device() const noexcept { return options_.states_per_device; }
  int device_count() const noexcept { return device_count_; }
  B& backend() noexcept { return backend_; }

 private:
  struct Slot {
    explicit Slot(StateSeries s) : series(std::move(s)) {}
    std::mutex mu;
    std::unique_ptr<CudnnState<B>> state;  // guarded by mu
    const StateSeries series;
  };

  Slot& slot_for(int device, int index) {
    if (device < 0 || device >= device_count_) detail::throw_bad_device(device, device_count_);
    const int per_device = options_.states_per_device;
    if (index < 0 || index >= per_device) detail::throw_bad_index(device, index, per_device);
    return *slots_[static_cast<std::size_t>(device * per_device + index)];
  }

  B backend_;  // declared first: the states hold references to it
  const CudnnStatesOptions options_;
  const int device_count_;
  std::vector<std::unique_ptr<Slot>> slots_;  // device-major; each Slot pinned for its mutex
};

}  // namespace glassbox::cudnn
