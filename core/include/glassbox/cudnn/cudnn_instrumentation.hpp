#pragma once
// What the cuDNN state wrapper reports, kept out of the templates: per
// {device, state} metric series resolved once when a CudnnStates is built,
// the timed per-state lock, and the NVTX range plus span around an execute.
//
// Series are shared by every CudnnStates on one registry, so two sets of
// states on the same registry add up in one series.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

#include "glassbox/metrics/registry.hpp"
#include "glassbox/nvtx/range.hpp"
#include "glassbox/trace/span.hpp"

namespace glassbox::cudnn {

struct WorkspaceSeries {
  metrics::Gauge bytes;      ///< glassbox_cudnn_workspace_bytes
  metrics::Counter resizes;  ///< glassbox_cudnn_workspace_resizes_total
};

struct StateSeries {
  metrics::Counter executions;      ///< glassbox_cudnn_state_executions_total
  metrics::Histogram wait_seconds;  ///< glassbox_cudnn_state_wait_seconds (per-state lock)
  WorkspaceSeries workspace;

  static StateSeries resolve(metrics::Registry& registry, int device, int index);
};

/// An AlgorithmCache's series, labelled {cache=<name>}. The entries gauge is
/// added to, not set, so caches of one name on one registry add up.
struct AlgorithmCacheSeries {
  metrics::Counter hits;       ///< glassbox_cudnn_algorithm_cache_hits_total
  metrics::Counter misses;     ///< glassbox_cudnn_algorithm_cache_misses_total (each one a query)
  metrics::Counter evictions;  ///< glassbox_cudnn_algorithm_cache_evictions_total
  metrics::Gauge entries;      ///< glassbox_cudnn_algorithm_cache_entries

  static AlgorithmCacheSeries resolve(metrics::Registry& registry, const std::string& cache);
};

/// The `cache` label values of the CUDA conv2d kernels' algorithm caches, one
/// per direction. Every CudnnStates resolves their series when it is built,
/// so a process with cuDNN states shows them (at zero) before, or without,
/// any convolution that plans through them (the CPU demo's sim states, say).
inline constexpr const char* kConvPlanCaches[] = {"conv_forward", "conv_backward_data", "conv_backward_filter"};

namespace detail {
/// `capacity` when at least 1; ConfigError naming the cache otherwise.
std::size_t checked_cache_capacity(const std::string& cache, std::size_t capacity);
}  // namespace detail

/// What the wait for a state's lock is timed with. A plain function, so
/// that options holding one stay a literal type.
using WaitClock = std::chrono::steady_clock::time_point (*)();

/// Locks `mu` and observes how long that took into `wait_seconds`. Without
/// contention it observes 0 and reads no clock; with contention it reads
/// `clock` once when it finds `mu` held and once when it has it.
std::unique_lock<std::mutex> lock_timed(std::mutex& mu, const metrics::Histogram& wait_seconds, WaitClock clock);

/// One state's NVTX range name, `glassbox.cudnn.execute[device=D,state=I]`,
/// registered once, so Nsight tells the states apart at the cost of a pointer.
class ExecuteRangeName {
 public:
  ExecuteRangeName(int device, int index);
  ExecuteRangeName(const ExecuteRangeName&) = delete;  // name_ points into text_
  ExecuteRangeName& operator=(const ExecuteRangeName&) = delete;
  const nvtx::RegisteredName& get() const noexcept { return name_; }

 private:
  std::string text_;
  nvtx::RegisteredName name_;
};

/// Brackets one CudnnState::execute on the calling thread and counts it.
/// The NVTX range (category cudnn) encloses the event records, the waits and
/// everything the closure enqueues, so Nsight projects it onto that work on
/// the state's stream. The span `glassbox.cudnn.execute` carries
/// glassbox.device, glassbox.cudnn.state and glassbox.cudnn.workspace_bytes;
/// it times the host side only (enqueueing), not the GPU work.
class ExecuteScope {
 public:
  ExecuteScope(const nvtx::RegisteredName& name, const StateSeries& series, int device, int index);
  void succeeded(std::size_t workspace_bytes) noexcept;
  /// Call from the handler of the closure's exception; the span ends as an error with its message.
  void failed(std::size_t workspace_bytes) noexcept;

 private:
  nvtx::ScopedRange range_;
  trace::Span span_;
};

}  // namespace glassbox::cudnn
