// The /metrics text serializer against prometheus-cpp's TextSerializer, which
// it replaced for speed: the same snapshot must give the same bytes, label
// escapes, NaN, infinities, integers past 2^53 and histograms included. One
// deliberate difference: HELP text is escaped as the text format says
// (prometheus-cpp writes a newline in it raw, which ends the line early).
#include <gtest/gtest.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "glassbox/exporters/detail/exposition_text.hpp"
#include "glassbox/metrics/registry.hpp"

namespace gm = glassbox::metrics;

namespace {

// The conversion /metrics used before it wrote the text itself.
prometheus::MetricType to_prometheus(gm::MetricType t) {
  switch (t) {
    case gm::MetricType::counter:
      return prometheus::MetricType::Counter;
    case gm::MetricType::gauge:
      return prometheus::MetricType::Gauge;
    case gm::MetricType::histogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

prometheus::ClientMetric::Histogram to_prometheus(const gm::HistogramValue& h) {
  prometheus::ClientMetric::Histogram out;
  out.sample_count = h.count;
  out.sample_sum = h.sum;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    double bound = i < h.upper_bounds.size() ? h.upper_bounds[i] : std::numeric_limits<double>::infinity();
    out.bucket.push_back({cumulative, bound});
  }
  return out;
}

prometheus::ClientMetric to_prometheus(const gm::SeriesSnapshot& s, gm::MetricType type) {
  prometheus::ClientMetric m;
  for (const auto& [k, v] : s.labels) m.label.push_back({k, v});
  switch (type) {
    case gm::MetricType::counter:
      m.counter.value = s.value;
      break;
    case gm::MetricType::gauge:
      m.gauge.value = s.value;
      break;
    case gm::MetricType::histogram:
      m.histogram = to_prometheus(s.histogram);
      break;
  }
  return m;
}

std::string reference_text(const gm::Snapshot& snapshot) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& f : snapshot) {
    if (f.series.empty()) continue;  // declared, nothing recorded yet
    prometheus::MetricFamily pf{f.name, f.help, to_prometheus(f.type), {}};
    for (const auto& s : f.series) pf.metric.push_back(to_prometheus(s, f.type));
    families.push_back(std::move(pf));
  }
  return prometheus::TextSerializer().Serialize(families);
}

gm::SeriesSnapshot series(gm::LabelPairs labels, double value) {
  gm::SeriesSnapshot s;
  s.labels = std::move(labels);
  s.value = value;
  return s;
}

}  // namespace

TEST(ExpositionText, MatchesPrometheusCppByteForByte) {
  const double inf = std::numeric_limits<double>::infinity();
  gm::Snapshot snap;
  snap.push_back({"x_total",
                  "plain help",
                  gm::MetricType::counter,
                  {series({}, 0), series({{"op", "read"}}, 12345678901234567.0)}});
  snap.push_back({"weird_bytes",
                  "help with \"quotes\"",
                  gm::MetricType::gauge,
                  {series({{"a", "quote\" back\\slash\nnl"}, {"b", ""}}, -0.1),
                   series({{"a", "x"}, {"b", "nan"}}, std::nan("")), series({{"a", "y"}, {"b", "inf"}}, inf),
                   series({{"a", "z"}, {"b", "-inf"}}, -inf), series({{"a", "w"}, {"b", "tiny"}}, 1.25e-300),
                   series({{"a", "v"}, {"b", "big"}}, 1e6 * 3), series({{"a", "u"}, {"b", "third"}}, 1.0 / 3)}});
  snap.push_back({"declared_only", "no series", gm::MetricType::gauge, {}});
  gm::SeriesSnapshot h = series({{"device", "cuda:0"}}, 0);
  h.histogram.upper_bounds = gm::exponential_buckets(1e-6, 4, 12);
  for (std::size_t i = 0; i <= h.histogram.upper_bounds.size(); ++i) h.histogram.buckets.push_back(i * 3);
  h.histogram.count = 3 * 78;
  h.histogram.sum = 0.123456789012345678;
  gm::SeriesSnapshot bare;
  bare.histogram.upper_bounds = {0.5, 1};
  bare.histogram.buckets = {1, 0, 2};
  bare.histogram.count = 3;
  bare.histogram.sum = 7.5;
  snap.push_back({"op_seconds", "latency", gm::MetricType::histogram, {h}});
  snap.push_back({"bare_seconds", "no labels", gm::MetricType::histogram, {bare}});
  EXPECT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap));
}

// Values that are not whole take a fast path of their own (sixteen_digits.hpp:
// one exact product with a power of ten between 1e-5 and 1e15); prometheus-cpp
// writes them with the C library's %.16g. 200 000 values each way: random bits
// (every exponent), random digits at every scale the fast path takes and just
// outside it, short decimals (0.1, 2.675: a digit string a double cannot hold
// exactly), values next to powers of ten and next to 16-digit ties.
TEST(ExpositionText, NumbersThatAreNotWholeMatchPrometheusCppAtEveryScale) {
  std::mt19937_64 rng(20261127);
  std::vector<double> values;
  auto random_bits = [&] {
    double v;
    do {
      const std::uint64_t bits = rng();
      std::memcpy(&v, &bits, sizeof v);
    } while (!std::isfinite(v));
    return v;
  };
  std::uniform_real_distribution<double> unit(1.0, 10.0);
  std::uniform_int_distribution<int> scale(-8, 17);
  std::uniform_int_distribution<std::int64_t> whole(1, 99999999);
  std::uniform_int_distribution<int> places(1, 12);
  for (int i = 0; i < 50000; ++i) {
    values.push_back(random_bits());
    values.push_back(unit(rng) * std::pow(10.0, scale(rng)) * (i % 2 ? 1 : -1));
    values.push_back(static_cast<double>(whole(rng)) / std::pow(10.0, places(rng)));
    const double p10 = std::pow(10.0, scale(rng));
    values.push_back(i % 2 ? std::nextafter(p10, 0.0) : std::nextafter(p10, 1e300));
  }
  for (double tie : {0.5, 1.5, 2.675, 1.0000000000000005, 0.30000000000000004, 1e-5, 9.9999999999999995e-6,
                     999999999999999.9, 123456.78901234565}) {
    values.push_back(tie);
  }
  for (std::size_t start = 0; start < values.size(); start += 20000) {
    gm::Snapshot snap;
    gm::FamilySnapshot family{"v", "values", gm::MetricType::gauge, {}};
    for (std::size_t i = start; i < std::min(values.size(), start + 20000); ++i) {
      family.series.push_back(series({{"i", std::to_string(i)}}, values[i]));
    }
    snap.push_back(std::move(family));
    ASSERT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap)) << "values from " << start;
  }
}

TEST(ExpositionText, MatchesPrometheusCppOnARealRegistry) {
  gm::Registry r;
  r.counter("a_total", "a", {"k"}).with({"1"}).inc(3);
  r.gauge("b_level", "b").with().set(2.5);
  r.up_down_counter("c_depth", "c", {"device"}).with({"cpu"}).add(-4);
  r.histogram("d_seconds", "d", {"op"}, {0.001, 0.01}).with({"mm"}).observe(0.005);
  r.gauge("e_unused", "never set");
  gm::Snapshot snap = r.snapshot();
  EXPECT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap));
}

TEST(ExpositionText, HelpEscapesBackslashAndNewline) {
  gm::Snapshot snap;
  snap.push_back({"x_total", "a \\ b\nc \"d\"", gm::MetricType::counter, {series({}, 1)}});
  EXPECT_EQ(glassbox::exporters::detail::exposition_text(snap),
            "# HELP x_total a \\\\ b\\nc \"d\"\n# TYPE x_total counter\nx_total 1\n");
}

// The text is written into room reserved from an estimate (about 64 bytes a
// line, 16 lines a histogram); a scrape longer than that grows the buffer
// while writing, numbers and label values included, and must not lose a byte.
TEST(ExpositionText, AScrapeLongerThanItsEstimateIsWholeAndMatches) {
  gm::Snapshot snap;
  gm::SeriesSnapshot wide = series({{"path", std::string(5000, 'p')}}, 18446744073709551615.0);
  wide.histogram.upper_bounds = gm::exponential_buckets(1e-9, 1.5, 200);
  for (std::size_t i = 0; i <= 200; ++i) wide.histogram.buckets.push_back(1000000007 * (i + 1));
  for (std::uint64_t b : wide.histogram.buckets) wide.histogram.count += b;
  wide.histogram.sum = 1.0 / 7;
  snap.push_back({"wide_seconds", std::string(3000, 'h'), gm::MetricType::histogram, {wide}});
  for (int i = 0; i < 50; ++i) {
    snap.push_back({"g" + std::to_string(i),
                    "h",
                    gm::MetricType::gauge,
                    {series({{"v", std::string(static_cast<std::size_t>(i) * 37, 'v')}}, 1.0 / (i + 1))}});
  }
  EXPECT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap));
}

// The same, with the point where the room runs out moved across every byte of
// a line, so that it falls once inside each piece: name, labels, a whole
// number, a fraction, a histogram's count and bucket counts.
TEST(ExpositionText, RunningOutOfRoomAnywhereInALineLosesNothing) {
  for (std::size_t length = 0; length < 400; ++length) {
    gm::SeriesSnapshot h = series({{"k", std::string(length, 'x')}}, 0);
    h.histogram.upper_bounds = {0.5};
    h.histogram.buckets = {123456789012345, 98765432109876};
    h.histogram.count = 123456789012345 + 98765432109876;
    h.histogram.sum = 1.0 / 3;
    gm::Snapshot snap{{"g", "h", gm::MetricType::gauge, {series({{"k", std::string(length, 'y')}}, 1e15 + 7)}},
                      {"f", "h", gm::MetricType::gauge, {series({{"k", std::string(length, 'z')}}, 1.0 / 7)}},
                      {"s", "h", gm::MetricType::histogram, {h}}};
    ASSERT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap)) << "label length " << length;
  }
}

// Short pieces are copied by two overlapping moves each (line_writer.hpp): a
// name and a label value of every length up to past the longest such copy,
// no two neighbouring bytes alike, so that a byte from the wrong place shows.
TEST(ExpositionText, PiecesOfEveryLengthAreCopiedWhole) {
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_:";
  auto text = [&](std::size_t length) {
    std::string s;
    for (std::size_t i = 0; i < length; ++i) s += alphabet[(i * 7) % alphabet.size()];
    return s;
  };
  gm::Snapshot snap;
  for (std::size_t length = 0; length < 80; ++length) {
    snap.push_back(
        {"m" + text(length), "h" + text(length), gm::MetricType::gauge, {series({{"k", text(length)}}, 1.5)}});
  }
  EXPECT_EQ(glassbox::exporters::detail::exposition_text(snap), reference_text(snap));
}
