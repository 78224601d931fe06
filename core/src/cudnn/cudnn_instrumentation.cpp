#include "glassbox/cudnn/cudnn_instrumentation.hpp"

#include <exception>
#include <vector>

#include "glassbox/error.hpp"

namespace glassbox::cudnn {

StateSeries StateSeries::resolve(metrics::Registry& r, int device, int index) {
  const std::vector<std::string> labels{"device", "state"};
  const std::string dev = std::to_string(device);
  const std::string state = std::to_string(index);
  return StateSeries{
      r.counter("glassbox_cudnn_state_executions_total", "Closures run through a cuDNN state", labels)
          .with({dev, state}),
      r.histogram("glassbox_cudnn_state_wait_seconds", "Time spent waiting for a cuDNN state's lock", labels,
                  metrics::exponential_buckets(1e-7, 4, 12))
          .with({dev, state}),
      WorkspaceSeries{
          r.gauge("glassbox_cudnn_workspace_bytes", "Bytes of scratch workspace a cuDNN state holds", labels)
              .with({dev, state}),
          r.counter("glassbox_cudnn_workspace_resizes_total",
                    "Times a cuDNN state's workspace grew (each one an allocation)", labels)
              .with({dev, state}),
      },
  };
}

AlgorithmCacheSeries AlgorithmCacheSeries::resolve(metrics::Registry& r, const std::string& cache) {
  const std::vector<std::string> labels{"cache"};
  return AlgorithmCacheSeries{
      r.counter("glassbox_cudnn_algorithm_cache_hits_total", "Lookups the cuDNN algorithm cache answered", labels)
          .with({cache}),
      r.counter("glassbox_cudnn_algorithm_cache_misses_total",
                "Lookups the cuDNN algorithm cache missed, each one a query to cuDNN", labels)
          .with({cache}),
      r.counter("glassbox_cudnn_algorithm_cache_evictions_total",
                "Entries the cuDNN algorithm cache dropped to stay within its capacity", labels)
          .with({cache}),
      r.gauge("glassbox_cudnn_algorithm_cache_entries", "Entries the cuDNN algorithm cache holds", labels)
          .with({cache}),
  };
}

std::size_t detail::checked_cache_capacity(const std::string& cache, std::size_t capacity) {
  if (capacity == 0)
    throw ConfigError("cuDNN algorithm cache '" + cache + "': capacity 0; it must hold 1 entry or more");
  return capacity;
}

std::unique_lock<std::mutex> lock_timed(std::mutex& mu, const metrics::Histogram& wait_seconds, WaitClock clock) {
  std::unique_lock lock(mu, std::try_to_lock);
  if (lock.owns_lock()) {
    wait_seconds.observe(0.0);
    return lock;
  }
  const auto start = clock();
  lock.lock();
  wait_seconds.observe(std::chrono::duration<double>(clock() - start).count());
  return lock;
}

ExecuteRangeName::ExecuteRangeName(int device, int index)
    : text_("glassbox.cudnn.execute[device=" + std::to_string(device) + ",state=" + std::to_string(index) + "]"),
      name_(text_.c_str()) {}

ExecuteScope::ExecuteScope(const nvtx::RegisteredName& name, const StateSeries& series, int device, int index)
    : range_(name, nvtx::Category::cudnn), span_("glassbox.cudnn.execute") {
  series.executions.inc();
  // Attributes are built only for a span that keeps them: this runs on every execute.
  if (span_.recording()) span_.set_attribute("glassbox.device", device).set_attribute("glassbox.cudnn.state", index);
}

void ExecuteScope::succeeded(std::size_t workspace_bytes) noexcept {
  if (!span_.recording()) return;
  span_.set_attribute("glassbox.cudnn.workspace_bytes", workspace_bytes);
  span_.set_status(trace::StatusCode::ok);
}

void ExecuteScope::failed(std::size_t workspace_bytes) noexcept {
  if (!span_.recording()) return;
  span_.set_attribute("glassbox.cudnn.workspace_bytes", workspace_bytes);
  const char* what = "the closure threw a non-standard exception";
  try {
    std::rethrow_exception(std::current_exception());
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {}
  span_.set_status(trace::StatusCode::error, what);
}

}  // namespace glassbox::cudnn
