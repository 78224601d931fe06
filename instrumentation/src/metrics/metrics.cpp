// Metric primitives, families and the registry.
#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <regex>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::metrics {

Counter Counter::create(const Config&) { return Counter(detail::allocate_cells(1, detail::CellKind::u64)); }

std::uint64_t Counter::value() const {
  auto lock = detail::lock_threads();
  return detail::sum_u64(cell_);
}

void Counter::read_locked(SeriesSnapshot& out) const { out.value = static_cast<double>(detail::sum_u64(cell_)); }

Gauge Gauge::create(const Config&) { return Gauge(std::make_shared<Shared>(), detail::allocate_epoch_pair()); }

bool Gauge::try_set(std::uint64_t from, double v) const noexcept {
  if (!shared_->epoch.compare_exchange_strong(from, from + 1, std::memory_order_relaxed)) return false;
  std::atomic_thread_fence(std::memory_order_release);
  shared_->base_bits.store(std::bit_cast<std::uint64_t>(v), std::memory_order_relaxed);
  shared_->epoch.store(from + 2, std::memory_order_release);
  return true;
}

void Gauge::set(double v) const noexcept {
  for (;;) {
    std::uint64_t e = shared_->epoch.load(std::memory_order_relaxed);
    if (e % 2 == 0 && try_set(e, v)) return;
    std::this_thread::yield();  // another set() is half-way: a few stores
  }
}

namespace {

// The value of a gauge at its even epoch `epoch`; nullopt when a set() ran
// while it was read. Call under lock_threads().
std::optional<double> read_at(const std::atomic<std::uint64_t>& epoch_word, const std::atomic<std::uint64_t>& base_bits,
                              detail::CellId cells, std::uint64_t epoch) {
  double base = std::bit_cast<double>(base_bits.load(std::memory_order_relaxed));
  double deltas = detail::sum_epoch_deltas(cells, epoch);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (epoch_word.load(std::memory_order_relaxed) != epoch) return std::nullopt;
  return base + deltas;
}

}  // namespace

double Gauge::value_locked() const {
  for (;;) {
    std::uint64_t e = shared_->epoch.load(std::memory_order_acquire);
    if (e % 2 == 0) {
      if (std::optional<double> v = read_at(shared_->epoch, shared_->base_bits, cells_, e)) return *v;
    }
    std::this_thread::yield();
  }
}

double Gauge::value() const {
  auto lock = detail::lock_threads();
  return value_locked();
}

void Gauge::set_max(double v) const {
  for (;;) {
    {
      auto lock = detail::lock_threads();
      std::uint64_t e = shared_->epoch.load(std::memory_order_acquire);
      if (e % 2 == 0) {
        std::optional<double> cur = read_at(shared_->epoch, shared_->base_bits, cells_, e);
        if (cur && *cur >= v) return;
        // Fails when a set() came between the read and here: read again.
        if (cur && try_set(e, v)) return;
      }
    }
    std::this_thread::yield();
  }
}

UpDownCounter UpDownCounter::create(const Config&) {
  return UpDownCounter(detail::allocate_cells(1, detail::CellKind::u64));
}

std::int64_t UpDownCounter::value() const {
  auto lock = detail::lock_threads();
  return static_cast<std::int64_t>(detail::sum_u64(cell_));
}

void UpDownCounter::read_locked(SeriesSnapshot& out) const {
  out.value = static_cast<double>(static_cast<std::int64_t>(detail::sum_u64(cell_)));
}

Histogram Histogram::create(const Config& config) {
  std::size_t buckets = config.upper_bounds->size() + 1;
  detail::CellId first = detail::allocate_cells(buckets, detail::CellKind::u64);
  detail::allocate_cells(1, detail::CellKind::f64);  // the sum, right after the buckets
  return Histogram(config.upper_bounds, first,
                   std::shared_ptr<detail::ExemplarSlot[]>(new detail::ExemplarSlot[buckets]));
}

HistogramValue Histogram::value() const {
  SeriesSnapshot s;
  auto lock = detail::lock_threads();
  read_locked(s);
  return std::move(s.histogram);
}

void Histogram::read_locked(SeriesSnapshot& out) const {
  HistogramValue& v = out.histogram;
  if (v.upper_bounds.empty()) v.upper_bounds = Frozen<std::vector<double>>(bounds_);  // kept from the last read
  const std::size_t buckets = bounds_->size() + 1;
  v.buckets.resize(buckets);
  v.exemplars.clear();
  detail::sum_u64_range(first_cell_, buckets, v.buckets.data());
  v.count = 0;
  for (std::size_t i = 0; i < buckets; ++i) {
    v.count += v.buckets[i];
    if (!exemplars_[i].recorded()) continue;
    std::optional<Exemplar> e = exemplars_[i].read();
    if (!e) continue;
    // Most histograms have none (no sampled span observed them): no vector.
    v.exemplars.resize(buckets);
    v.exemplars[i] = std::move(e);
  }
  v.sum = detail::sum_f64(sum_cell());
}

std::vector<double> exponential_buckets(double start, double factor, std::size_t count) {
  if (start <= 0 || factor <= 1 || count == 0) {
    throw ConfigError("exponential_buckets(start=" + std::to_string(start) + ", factor=" + std::to_string(factor) +
                      ", count=" + std::to_string(count) + "): need start > 0, factor > 1, count >= 1");
  }
  std::vector<double> b(count);
  for (std::size_t i = 0; i < count; ++i) b[i] = start * std::pow(factor, static_cast<double>(i));
  return b;
}

namespace {

void check_name(const std::string& what, const std::string& name, const char* pattern, const char* accepted) {
  if (!std::regex_match(name, std::regex(pattern))) {
    throw ConfigError("glassbox metrics: " + what + " '" + name + "' is not accepted; expected " + accepted);
  }
}

void check_info(const FamilyInfo& info, MetricType type) {
  check_name("metric name", info.name, "[a-zA-Z_:][a-zA-Z0-9_:]*", "[a-zA-Z_:][a-zA-Z0-9_:]*");
  if (type == MetricType::counter && !info.name.ends_with("_total")) {
    throw ConfigError("glassbox metrics: counter '" + info.name + "' must end in _total (Prometheus convention)");
  }
  for (const auto& l : info.label_names) {
    check_name("label name", l, "[a-zA-Z_][a-zA-Z0-9_]*", "[a-zA-Z_][a-zA-Z0-9_]* not starting with __");
    if (l.starts_with("__") || (type == MetricType::histogram && l == "le")) {
      throw ConfigError("glassbox metrics: label name '" + l + "' on '" + info.name + "' is reserved");
    }
  }
}

void check_bounds(const std::string& name, const std::vector<double>& b) {
  bool ok = !b.empty() && std::all_of(b.begin(), b.end(), [](double x) { return std::isfinite(x); }) &&
            std::adjacent_find(b.begin(), b.end(), std::greater_equal<>()) == b.end();
  if (!ok) {
    throw ConfigError("glassbox metrics: histogram '" + name +
                      "' needs at least one finite bucket bound, strictly ascending (+Inf is implied)");
  }
}

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "?";
}

bool same_config(const Family<Counter>&, const Counter::Config&) { return true; }
bool same_config(const Family<Gauge>&, const Gauge::Config&) { return true; }
bool same_config(const Family<UpDownCounter>&, const UpDownCounter::Config&) { return true; }
bool same_config(const Family<Histogram>& f, const Histogram::Config& c) {
  return *f.config().upper_bounds == *c.upper_bounds;
}

}  // namespace

FamilyBase::FamilyBase(FamilyInfo info, MetricType type) : info_(std::move(info)), type_(type) {}

std::vector<std::string> FamilyBase::make_key(std::initializer_list<std::string_view> values) const {
  if (values.size() != info_.label_names.size()) {
    throw ConfigError("glassbox metrics: '" + info_.name + "' takes " + std::to_string(info_.label_names.size()) +
                      " label value(s), got " + std::to_string(values.size()));
  }
  return {values.begin(), values.end()};
}

LabelPairs FamilyBase::label_pairs(const std::vector<std::string>& key) const {
  LabelPairs out;
  out.reserve(key.size());
  for (std::size_t i = 0; i < key.size(); ++i) out.emplace_back(info_.label_names[i], key[i]);
  return out;
}

std::string FamilyBase::label_text(const LabelPairs& labels) {
  // Label names are checked at declaration; only values can need escaping.
  auto plain = [](char c) { return c != '\\' && c != '"' && c != '\n' && static_cast<unsigned char>(c) < 0x80; };
  std::string text;
  char separator = '{';
  for (const auto& [name, value] : labels) {
    if (!std::all_of(value.begin(), value.end(), plain)) return {};
    text += separator;
    text += name;
    text += "=\"";
    text += value;
    text += '"';
    separator = ',';
  }
  return text;
}

Registry& Registry::global() {
  static Registry* r = new Registry;
  return *r;
}

template <class Metric>
Family<Metric>& Registry::declare(FamilyInfo info, typename Metric::Config config) {
  check_info(info, Metric::type);
  std::lock_guard lock(mu_);
  auto it = families_.find(info.name);
  if (it == families_.end()) {
    auto fam = std::make_unique<Family<Metric>>(info, std::move(config));
    auto& ref = *fam;
    families_.emplace(info.name, std::move(fam));
    return ref;
  }
  auto* existing = dynamic_cast<Family<Metric>*>(it->second.get());
  if (existing == nullptr || existing->info().label_names != info.label_names || existing->info().help != info.help ||
      !same_config(*existing, config)) {
    throw ConfigError("glassbox metrics: '" + info.name + "' is already declared as a " +
                      type_name(it->second->type()) + " with other labels, help or buckets; a " +
                      type_name(Metric::type) + " of that name cannot be declared");
  }
  return *existing;
}

Family<Counter>& Registry::counter(std::string_view name, std::string_view help, std::vector<std::string> labels) {
  return declare<Counter>({std::string(name), std::string(help), std::move(labels)}, {});
}

Family<Gauge>& Registry::gauge(std::string_view name, std::string_view help, std::vector<std::string> labels) {
  return declare<Gauge>({std::string(name), std::string(help), std::move(labels)}, {});
}

Family<UpDownCounter>& Registry::up_down_counter(std::string_view name, std::string_view help,
                                                 std::vector<std::string> labels) {
  return declare<UpDownCounter>({std::string(name), std::string(help), std::move(labels)}, {});
}

Family<Histogram>& Registry::histogram(std::string_view name, std::string_view help, std::vector<std::string> labels,
                                       std::vector<double> upper_bounds) {
  check_bounds(std::string(name), upper_bounds);
  return declare<Histogram>({std::string(name), std::string(help), std::move(labels)},
                            {std::make_shared<const std::vector<double>>(std::move(upper_bounds))});
}

std::uint64_t Registry::add_collector(std::function<void()> collect) {
  std::lock_guard lock(collectors_mu_);
  collectors_.emplace(++next_collector_, std::move(collect));
  return next_collector_;
}

void Registry::remove_collector(std::uint64_t id) {
  std::lock_guard lock(collectors_mu_);
  collectors_.erase(id);
}

void Registry::visit(SeriesVisitor& visitor) const {
  {
    std::lock_guard lock(collectors_mu_);
    for (const auto& [id, collect] : collectors_) collect();
  }
  std::lock_guard lock(mu_);
  auto threads = detail::lock_threads();
  VisitShape shape;
  for (const auto& [name, fam] : families_) shape.add(fam->type(), fam->size());
  visitor.begin(shape);
  for (const auto& [name, fam] : families_) fam->visit_locked(visitor);
}

namespace {

// Keeps what a visit reads: how snapshot() is made.
class SnapshotBuilder final : public SeriesVisitor {
 public:
  void begin(const VisitShape& shape) override { out_.reserve(shape.families); }
  void family(const FamilyView& f) override {
    out_.push_back({std::string(f.name), std::string(f.help), f.type, {}});
    out_.back().series.reserve(f.series);
  }
  void series(const SeriesSnapshot& s, std::string_view /*label_text*/) override { out_.back().series.push_back(s); }
  Snapshot take() { return std::move(out_); }

 private:
  Snapshot out_;
};

}  // namespace

Snapshot Registry::snapshot() const {
  SnapshotBuilder builder;
  visit(builder);
  return builder.take();
}

void visit(const Snapshot& snapshot, SeriesVisitor& visitor) {
  VisitShape shape;
  for (const FamilySnapshot& f : snapshot) shape.add(f.type, f.series.size());
  visitor.begin(shape);
  for (const FamilySnapshot& f : snapshot) {
    visitor.family({f.name, f.help, f.type, f.series.size()});
    for (const SeriesSnapshot& s : f.series) visitor.series(s, {});
  }
}

namespace {

bool has_labels(const SeriesSnapshot& s, const LabelPairs& labels) {
  return std::all_of(labels.begin(), labels.end(), [&](const auto& want) {
    return std::find(s.labels.begin(), s.labels.end(), want) != s.labels.end();
  });
}

}  // namespace

const SeriesSnapshot* find_series(const Snapshot& snapshot, const std::string& name, const LabelPairs& labels) {
  for (const auto& f : snapshot) {
    if (f.name != name) continue;
    for (const auto& s : f.series) {
      if (has_labels(s, labels)) return &s;
    }
  }
  return nullptr;
}

double sum_series(const Snapshot& snapshot, const std::string& name, const LabelPairs& labels) {
  double total = 0;
  for (const auto& f : snapshot) {
    if (f.name != name) continue;
    for (const auto& s : f.series) total += has_labels(s, labels) ? s.value : 0.0;
  }
  return total;
}

std::optional<double> histogram_quantile(const HistogramValue& h, double q) {
  if (h.count == 0) return std::nullopt;
  const double rank = q * static_cast<double>(h.count);
  const double top = h.upper_bounds.empty() ? 0.0 : h.upper_bounds.back();
  double below = 0;
  for (std::size_t b = 0; b < h.upper_bounds.size(); ++b) {
    const auto in_bucket = static_cast<double>(h.buckets[b]);
    if (in_bucket > 0 && below + in_bucket >= rank) {
      const double lower = b == 0 ? 0.0 : h.upper_bounds[b - 1];
      return lower + (h.upper_bounds[b] - lower) * (rank - below) / in_bucket;
    }
    below += in_bucket;
  }
  return top;
}

}  // namespace glassbox::metrics
