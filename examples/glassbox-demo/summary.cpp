#include "summary.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace glassbox::demo {

namespace {

// The sum over the series of `name` that carry every pair of `labels`.
double total(const metrics::Snapshot& snap, const std::string& name, const metrics::LabelPairs& labels = {}) {
  double sum = 0;
  for (const auto& family : snap) {
    if (family.name != name) continue;
    for (const auto& s : family.series) {
      bool match = std::all_of(labels.begin(), labels.end(), [&](const auto& want) {
        return std::find(s.labels.begin(), s.labels.end(), want) != s.labels.end();
      });
      if (match) sum += s.value;
    }
  }
  return sum;
}

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
    line += format(" %llu engine executes (checkpoint recomputes included), p50 %.2f ms, p99 %.2f ms,",
                   static_cast<unsigned long long>(s->histogram.count), *histogram_quantile(s->histogram, 0.5) * 1e3,
                   *histogram_quantile(s->histogram, 0.99) * 1e3);
  }
  return line + format(" %lld nodes run, reentrant depth max %lld\n",
                       whole(total(snap, "glassbox_autograd_nodes_executed_total")),
                       whole(total(snap, "glassbox_autograd_reentrant_depth_max")));
}

std::string loss_line(const LossLog& losses) {
  if (losses.empty()) return "  loss: no training steps\n";
  return format("  loss: %.4f -> %.4f (mean of the first and last %zu steps)\n", losses.first_mean(),
                losses.last_mean(), losses.window());
}

std::string pinned_line(const metrics::Snapshot& snap, const std::optional<host_allocator::HostStats>& host) {
  if (!host) return "  pinned memory: none on this device\n";
  return format("  pinned memory: peak %lld bytes held, %lld requests, %lld cache hits, %lld blocks allocated\n",
                static_cast<long long>(host->allocated_bytes.peak),
                whole(total(snap, "glassbox_host_alloc_requests_total")),
                whole(total(snap, "glassbox_host_alloc_cache_hits_total")),
                static_cast<long long>(host->num_host_alloc));
}

}  // namespace

std::size_t LossLog::window() const noexcept { return std::clamp<std::size_t>(losses_.size() / 4, 1, 10); }

double LossLog::first_mean() const {
  return std::accumulate(losses_.begin(), losses_.begin() + static_cast<std::ptrdiff_t>(window()), 0.0) /
         static_cast<double>(window());
}

double LossLog::last_mean() const {
  return std::accumulate(losses_.end() - static_cast<std::ptrdiff_t>(window()), losses_.end(), 0.0) /
         static_cast<double>(window());
}

std::optional<double> histogram_quantile(const metrics::HistogramValue& h, double q) {
  if (h.count == 0) return std::nullopt;
  const double rank = q * static_cast<double>(h.count);
  double below = 0;
  for (std::size_t b = 0; b < h.buckets.size(); ++b) {
    const double in_bucket = static_cast<double>(h.buckets[b]);
    if (below + in_bucket >= rank && in_bucket > 0) {
      if (b == h.upper_bounds.size()) return h.upper_bounds.empty() ? 0.0 : h.upper_bounds.back();  // +Inf bucket
      const double lower = b == 0 ? 0.0 : h.upper_bounds[b - 1];
      return lower + (h.upper_bounds[b] - lower) * (rank - below) / in_bucket;
    }
    below += in_bucket;
  }
  return h.upper_bounds.empty() ? 0.0 : h.upper_bounds.back();
}

std::string handle_line(const metrics::Snapshot& snap, const std::vector<HandleSource>& sources) {
  std::string line = "  handles:";
  for (const auto& s : sources) {
    const metrics::LabelPairs lib{{"library", s.library}};
    line += format(" %s hwm=%lld created=%lld", s.library.c_str(),
                   whole(total(snap, "glassbox_handles_high_water_mark", lib)),
                   whole(total(snap, "glassbox_handles_created_total", lib)));
  }
  return line + "\n";
}

std::string summary(const metrics::Snapshot& snap, const std::optional<host_allocator::HostStats>& host,
                    const std::vector<HandleSource>& sources, const LossLog& losses) {
  return loss_line(losses) + pinned_line(snap, host) + handle_line(snap, sources) +
         format("  cudnn states: %lld executions\n", whole(total(snap, "glassbox_cudnn_state_executions_total"))) +
         backward_line(snap);
}

}  // namespace glassbox::demo
