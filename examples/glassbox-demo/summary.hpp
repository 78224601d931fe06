#pragma once
// The end-of-run summary, read from the metrics registry and the pinned
// allocator's own statistics, so it shows what /metrics would.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "glassbox/host_allocator/host_stats.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "worker_round.hpp"

namespace glassbox::demo {

/// Every step's loss, for the start-against-end comparison.
class LossLog {
 public:
  void add(float loss) { losses_.push_back(loss); }
  bool empty() const noexcept { return losses_.empty(); }
  /// How many steps each end's mean covers: a quarter of the run, 1 to 10.
  std::size_t window() const noexcept;
  double first_mean() const;
  double last_mean() const;

 private:
  std::vector<float> losses_;
};

/// The value below which a fraction `q` of a histogram's observations fall,
/// interpolated within its bucket as Prometheus's histogram_quantile() does;
/// nullopt for an empty histogram.
std::optional<double> histogram_quantile(const metrics::HistogramValue& h, double q);

/// "handles: cublas hwm=4 created=4  ..." for each source's library.
std::string handle_line(const metrics::Snapshot& snap, const std::vector<HandleSource>& sources);

/// Several lines, each starting with two spaces: loss, pinned memory,
/// handles, cuDNN states, backward.
std::string summary(const metrics::Snapshot& snap, const std::optional<host_allocator::HostStats>& host,
                    const std::vector<HandleSource>& sources, const LossLog& losses);

}  // namespace glassbox::demo
