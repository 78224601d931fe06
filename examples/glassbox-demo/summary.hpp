#pragma once
// The end-of-run summary, read from the metrics registry and the pinned
// allocator's own statistics, so it shows what /metrics would.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "glassbox/host_allocator/host_stats.hpp"
#include "glassbox/metrics/snapshot.hpp"
#include "worker_round.hpp"

namespace glassbox::demo {

/// The losses of the first and the last steps, for the start-against-end
/// comparison; bounded, so a run until SIGINT does not grow it.
class LossLog {
 public:
  static constexpr std::size_t kMaxWindow = 10;

  void add(float loss);
  bool empty() const noexcept { return steps_ == 0; }
  /// How many steps each end's mean covers: a quarter of the run, 1 to kMaxWindow.
  std::size_t window() const noexcept;
  double first_mean() const;
  double last_mean() const;

 private:
  std::size_t steps_ = 0;
  std::vector<float> first_;  // the first kMaxWindow losses
  std::deque<float> last_;    // the last kMaxWindow losses
};

/// "handles: cublas hwm=4 created=4  ..." for each source's library.
std::string handle_line(const metrics::Snapshot& snap, const std::vector<HandleSource>& sources);

/// Several lines, each starting with two spaces: loss, pinned memory,
/// handles, cuDNN states, backward.
std::string summary(const metrics::Snapshot& snap, const host_allocator::HostStats& host,
                    const std::vector<HandleSource>& sources, const LossLog& losses);

}  // namespace glassbox::demo
