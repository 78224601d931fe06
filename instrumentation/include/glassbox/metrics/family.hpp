#pragma once
// A metric family: one name, one help text, fixed label names, and one series
// per distinct set of label values. with() resolves a label set once into a
// handle; hot paths keep the handle and never look labels up again.
#include <deque>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "glassbox/metrics/snapshot.hpp"

namespace glassbox::metrics {

struct FamilyInfo {
  std::string name;
  std::string help;
  std::vector<std::string> label_names;
};

class FamilyBase {
 public:
  FamilyBase(FamilyInfo info, MetricType type);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const FamilyInfo& info() const noexcept { return info_; }
  MetricType type() const noexcept { return type_; }

  /// Appends this family's series to `out`. The caller holds detail::lock_threads().
  virtual void collect_locked(FamilySnapshot& out) const = 0;

 protected:
  /// Checks the count of `values` against the label names; throws ConfigError.
  std::vector<std::string> make_key(std::initializer_list<std::string_view> values) const;
  LabelPairs label_pairs(const std::vector<std::string>& key) const;

  FamilyInfo info_;
  MetricType type_;
};

/// `Metric` provides: a Config type, static Metric create(const Config&),
/// static constexpr MetricType type, and void read_locked(SeriesSnapshot&) const.
/// Thread-safety: with() may be called from any thread at once (it takes the
/// family's mutex); the handles it returns may be copied to and updated from
/// any thread, and outlive the family: their storage is never freed.
template <class Metric>
class Family final : public FamilyBase {
 public:
  using Config = typename Metric::Config;

  Family(FamilyInfo info, Config config) : FamilyBase(std::move(info), Metric::type), config_(std::move(config)) {}

  const Config& config() const noexcept { return config_; }

  /// The series for these label values (in label-name order), created on
  /// first use. Thread-safe; takes a lock, so call it once and keep the handle.
  Metric with(std::initializer_list<std::string_view> values = {}) {
    std::vector<std::string> key = make_key(values);
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) return series_[it->second].metric;
    // One push: a series and its labels cannot come apart if it throws.
    series_.push_back({Metric::create(config_), Frozen<LabelPairs>(label_pairs(key))});
    index_.emplace(std::move(key), series_.size() - 1);
    return series_.back().metric;
  }

  void collect_locked(FamilySnapshot& out) const override {
    std::lock_guard lock(mu_);
    out.series.reserve(out.series.size() + index_.size());
    for (const auto& [key, i] : index_) {
      SeriesSnapshot s;
      s.labels = series_[i].labels;
      series_[i].metric.read_locked(s);
      out.series.push_back(std::move(s));
    }
  }

 private:
  Config config_;
  mutable std::mutex mu_;
  struct Series {
    Metric metric;
    Frozen<LabelPairs> labels;  // made once: every snapshot shares them
  };
  std::deque<Series> series_;
  std::map<std::vector<std::string>, std::size_t> index_;
};

}  // namespace glassbox::metrics
