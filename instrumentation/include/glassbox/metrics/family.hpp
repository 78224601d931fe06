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

#include "glassbox/metrics/series_visitor.hpp"
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

  /// How many series it has now.
  virtual std::size_t size() const = 0;
  /// Tells `visitor` of this family, then of each series in label order. The
  /// caller holds detail::lock_threads().
  virtual void visit_locked(SeriesVisitor& visitor) const = 0;

 protected:
  /// Checks the count of `values` against the label names; throws ConfigError.
  std::vector<std::string> make_key(std::initializer_list<std::string_view> values) const;
  LabelPairs label_pairs(const std::vector<std::string>& key) const;
  /// `labels` as SeriesVisitor::series() takes them: `{k="v",...`, or empty
  /// when a value would need escaping or is not ASCII.
  static std::string label_text(const LabelPairs& labels);

  FamilyInfo info_;
  MetricType type_;
};

/// `Metric` provides: a Config type, static Metric create(const Config&),
/// static constexpr MetricType type, and void read_locked(SeriesSnapshot&) const,
/// which sets every field its kind reads (each series keeps one SeriesSnapshot
/// that every visit reads it into).
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
    LabelPairs labels = label_pairs(key);
    std::string text = label_text(labels);
    series_.push_back({Metric::create(config_), {}, std::move(text)});
    series_.back().reading.labels = std::move(labels);
    index_.emplace(std::move(key), series_.size() - 1);
    return series_.back().metric;
  }

  std::size_t size() const override {
    std::lock_guard lock(mu_);
    return index_.size();
  }

  void visit_locked(SeriesVisitor& visitor) const override {
    std::lock_guard lock(mu_);
    visitor.family({info_.name, info_.help, type_, index_.size()});
    if (order_.size() != index_.size()) {  // a series was added since the last visit
      order_.clear();
      for (const auto& [key, i] : index_) order_.push_back(i);
    }
    for (std::size_t i : order_) {
      const Series& series = series_[i];
      series.metric.read_locked(series.reading);
      visitor.series(series.reading, series.label_text);
    }
  }

 private:
  Config config_;
  mutable std::mutex mu_;
  struct Series {
    Metric metric;
    // The series' labels (made once: every snapshot shares them) and its
    // values as last read: a visit reads into it, so a histogram's vectors
    // keep their room and no label pointer is copied.
    mutable SeriesSnapshot reading;
    std::string label_text;  // made once: a scrape copies it instead of writing the labels
  };
  std::deque<Series> series_;
  std::map<std::vector<std::string>, std::size_t> index_;
  mutable std::vector<std::size_t> order_;  // series_ in index_'s (label) order, as of the last visit
};

}  // namespace glassbox::metrics
