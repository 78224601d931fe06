#include "summary.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace glassbox::demo {

namespace {

std::string format(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

long long whole(double v) { return static_cast<long long>(v); }

std::string backward_line(const metrics::Snapshot& snap) {
  const metrics::SeriesSnapshot* s = metrics::find_series(snap, "glassbox_autograd_backward_seconds");
  std::string line = "  backward:";
  if (s && s->histogram.count > 0) {
    const metrics::HistogramValue& h = s->histogram;
    line += format(" %llu engine executes (checkpoint recomputes included), p50 %.2f ms, p99 %.2f ms,",
                   static_cast<unsigned long long>(h.count), *metrics::histogram_quantile(h, 0.5) * 1e3,
                   *metrics::histogram_quantile(h, 0.99) * 1e3);
  }
  return line + format(" %lld nodes run, reentrant depth max %lld\n",
                       whole(metrics::sum_series(snap, "glassbox_autograd_nodes_executed_total")),
                       whole(metrics::sum_series(snap, "glassbox_autograd_reentrant_depth_max")));
}

std::string loss_line(const LossLog& losses) {
  if (losses.empty()) return "  loss: no training steps\n";
  return format("  loss: %.4f -> %.4f (mean of the first and last %zu steps)\n", losses.first_mean(),
                losses.last_mean(), losses.window());
}

std::string pinned_line(const metrics::Snapshot& snap, const host_allocator::HostStats& host) {
  return format("  pinned memory: peak %lld bytes held, %lld requests, %lld cache hits, %lld blocks allocated\n",
                static_cast<long long>(host.allocated_bytes.peak),
                whole(metrics::sum_series(snap, "glassbox_host_alloc_requests_total")),
                whole(metrics::sum_series(snap, "glassbox_host_alloc_cache_hits_total")),
                static_cast<long long>(host.num_host_alloc));
}

}  // namespace

void LossLog::add(float loss) {
  ++steps_;
  if (first_.size() < kMaxWindow) first_.push_back(loss);
  last_.push_back(loss);
  if (last_.size() > kMaxWindow) last_.pop_front();
}

std::size_t LossLog::window() const noexcept { return std::clamp<std::size_t>(steps_ / 4, 1, kMaxWindow); }

double LossLog::first_mean() const {
  return std::accumulate(first_.begin(), first_.begin() + static_cast<std::ptrdiff_t>(window()), 0.0) /
         static_cast<double>(window());
}

double LossLog::last_mean() const {
  return std::accumulate(last_.end() - static_cast<std::ptrdiff_t>(window()), last_.end(), 0.0) /
         static_cast<double>(window());
}

std::string handle_line(const metrics::Snapshot& snap, const std::vector<HandleSource>& sources) {
  std::string line = "  handles:";
  for (const auto& s : sources) {
    const metrics::LabelPairs lib{{"library", s.library}};
    line += format(" %s hwm=%lld created=%lld", s.library.c_str(),
                   whole(metrics::sum_series(snap, "glassbox_handles_high_water_mark", lib)),
                   whole(metrics::sum_series(snap, "glassbox_handles_created_total", lib)));
  }
  return line + "\n";
}

std::string summary(const metrics::Snapshot& snap, const host_allocator::HostStats& host,
                    const std::vector<HandleSource>& sources, const LossLog& losses) {
  return loss_line(losses) + pinned_line(snap, host) + handle_line(snap, sources) +
         format("  cudnn states: %lld executions; algorithm cache: %lld hits, %lld misses\n",
                whole(metrics::sum_series(snap, "glassbox_cudnn_state_executions_total")),
                whole(metrics::sum_series(snap, "glassbox_cudnn_algorithm_cache_hits_total")),
                whole(metrics::sum_series(snap, "glassbox_cudnn_algorithm_cache_misses_total"))) +
         backward_line(snap);
}

}  // namespace glassbox::demo
