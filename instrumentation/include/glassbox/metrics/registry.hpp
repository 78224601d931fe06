#pragma once
// The set of metric families a process exposes. Registry::global() is where
// glassbox's parts register; tests make their own to count in isolation.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "glassbox/metrics/counter.hpp"
#include "glassbox/metrics/family.hpp"
#include "glassbox/metrics/gauge.hpp"
#include "glassbox/metrics/histogram.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "glassbox/metrics/up_down_counter.hpp"

namespace glassbox::metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The process-wide registry. Never destroyed, so threads that exit during
  /// static destruction can still update metrics.
  static Registry& global();

  /// Declares a family, or returns the one already declared with the same
  /// name, type, labels and buckets. A clash (same name, anything else
  /// different) or a name Prometheus does not accept throws ConfigError.
  /// Counter names must end in `_total`.
  Family<Counter>& counter(std::string_view name, std::string_view help, std::vector<std::string> labels = {});
  Family<Gauge>& gauge(std::string_view name, std::string_view help, std::vector<std::string> labels = {});
  /// A gauge whose updates are per-thread adds (see UpDownCounter).
  Family<UpDownCounter>& up_down_counter(std::string_view name, std::string_view help,
                                         std::vector<std::string> labels = {});
  Family<Histogram>& histogram(std::string_view name, std::string_view help, std::vector<std::string> labels,
                               std::vector<double> upper_bounds);

  /// Every family's values at one moment: no thread's exit is seen half-way.
  Snapshot snapshot() const;

 private:
  template <class Metric>
  Family<Metric>& declare(FamilyInfo info, typename Metric::Config config);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
};

}  // namespace glassbox::metrics
