// Both /metrics serializers against their exact output for a snapshot of every
// metric type, label values that need escaping, NaN and infinite values and
// exemplars: the expected text is what the serializers wrote before they were
// tuned for speed, so a faster writer must stay byte for byte the same.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "glassbox/exporters/detail/exposition_text.hpp"
#include "glassbox/exporters/detail/openmetrics.hpp"
#include "glassbox/metrics/registry.hpp"

namespace gd = glassbox::exporters::detail;
namespace gm = glassbox::metrics;

namespace {

gm::SeriesSnapshot plain(gm::LabelPairs labels, double value) {
  gm::SeriesSnapshot s;
  s.labels = std::move(labels);
  s.value = value;
  return s;
}

gm::SeriesSnapshot histogram(gm::LabelPairs labels, bool with_exemplar) {
  gm::SeriesSnapshot s;
  s.labels = std::move(labels);
  s.histogram.upper_bounds = {0.001, 0.25, 1e6};
  s.histogram.buckets = {2, 0, 1, 3};
  s.histogram.count = 6;
  s.histogram.sum = 12.75;
  s.histogram.exemplars = {std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  if (with_exemplar) {
    s.histogram.exemplars[0] =
        gm::Exemplar{{{"trace_id", std::string(32, 'a')}, {"span_id", std::string(16, 'b')}}, 0.0005, 1700000000.123};
    s.histogram.exemplars[3] =
        gm::Exemplar{{{"trace_id", std::string(32, 'c')}, {"span_id", std::string(16, 'd')}}, 2e6, std::nan("")};
  }
  return s;
}

gm::Snapshot every_kind() {
  return {
      {"golden_ops_total",
       "Ops \\ done\nacross \"lines\"",
       gm::MetricType::counter,
       {plain({{"device", "0"}, {"op", "a\\b\"c\nd"}}, 7), plain({{"device", "1"}, {"op", "plain"}}, 1e20)}},
      {"golden_empty_total", "Declared, nothing recorded", gm::MetricType::counter, {}},
      {"golden_bytes",
       "Bytes",
       gm::MetricType::gauge,
       {plain({}, NAN), plain({{"k", "inf"}}, INFINITY), plain({{"k", "-inf"}}, -INFINITY),
        plain({{"k", "neg0"}}, -0.0), plain({{"k", "frac"}}, 0.1), plain({{"k", "big"}}, 12345678901234567.0),
        plain({{"k", "neg"}}, -42), plain({{"k", "caf\xC3\xA9 \xFF"}}, 3.5e-9)}},
      {"golden_seconds",
       "Latency",
       gm::MetricType::histogram,
       {histogram({{"device", "0"}}, true), histogram({{"device", "q\"uote"}}, false)}},
      {"golden_unlabelled_seconds", "Latency", gm::MetricType::histogram, {histogram({}, false)}},
  };
}

}  // namespace

TEST(ExpositionGolden, TextIsByteForByteTheSame) {
  EXPECT_EQ(gd::exposition_text(every_kind()),
            "# HELP golden_ops_total Ops \\\\ done\\nacross \"lines\"\n"
            "# TYPE golden_ops_total counter\n"
            "golden_ops_total{device=\"0\",op=\"a\\\\b\\\"c\\nd\"} 7\n"
            "golden_ops_total{device=\"1\",op=\"plain\"} 1e+20\n"
            "# HELP golden_bytes Bytes\n"
            "# TYPE golden_bytes gauge\n"
            "golden_bytes Nan\n"
            "golden_bytes{k=\"inf\"} +Inf\n"
            "golden_bytes{k=\"-inf\"} -Inf\n"
            "golden_bytes{k=\"neg0\"} -0\n"
            "golden_bytes{k=\"frac\"} 0.1\n"
            "golden_bytes{k=\"big\"} 1.234567890123457e+16\n"
            "golden_bytes{k=\"neg\"} -42\n"
            "golden_bytes{k=\"caf\xC3\xA9 \xFF\"} 3.5e-09\n"
            "# HELP golden_seconds Latency\n"
            "# TYPE golden_seconds histogram\n"
            "golden_seconds_count{device=\"0\"} 6\n"
            "golden_seconds_sum{device=\"0\"} 12.75\n"
            "golden_seconds_bucket{device=\"0\",le=\"0.001\"} 2\n"
            "golden_seconds_bucket{device=\"0\",le=\"0.25\"} 2\n"
            "golden_seconds_bucket{device=\"0\",le=\"1000000\"} 3\n"
            "golden_seconds_bucket{device=\"0\",le=\"+Inf\"} 6\n"
            "golden_seconds_count{device=\"q\\\"uote\"} 6\n"
            "golden_seconds_sum{device=\"q\\\"uote\"} 12.75\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"0.001\"} 2\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"0.25\"} 2\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"1000000\"} 3\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"+Inf\"} 6\n"
            "# HELP golden_unlabelled_seconds Latency\n"
            "# TYPE golden_unlabelled_seconds histogram\n"
            "golden_unlabelled_seconds_count 6\n"
            "golden_unlabelled_seconds_sum 12.75\n"
            "golden_unlabelled_seconds_bucket{le=\"0.001\"} 2\n"
            "golden_unlabelled_seconds_bucket{le=\"0.25\"} 2\n"
            "golden_unlabelled_seconds_bucket{le=\"1000000\"} 3\n"
            "golden_unlabelled_seconds_bucket{le=\"+Inf\"} 6\n");
}

TEST(ExpositionGolden, OpenMetricsIsByteForByteTheSame) {
  EXPECT_EQ(gd::openmetrics_text(every_kind()),
            "# TYPE golden_ops counter\n"
            "# HELP golden_ops Ops \\\\ done\\nacross \\\"lines\\\"\n"
            "golden_ops_total{device=\"0\",op=\"a\\\\b\\\"c\\nd\"} 7\n"
            "golden_ops_total{device=\"1\",op=\"plain\"} 1e+20\n"
            "# TYPE golden_bytes gauge\n"
            "# HELP golden_bytes Bytes\n"
            "golden_bytes NaN\n"
            "golden_bytes{k=\"inf\"} +Inf\n"
            "golden_bytes{k=\"-inf\"} -Inf\n"
            "golden_bytes{k=\"neg0\"} -0\n"
            "golden_bytes{k=\"frac\"} 0.1\n"
            "golden_bytes{k=\"big\"} 1.234567890123457e+16\n"
            "golden_bytes{k=\"neg\"} -42\n"
            "golden_bytes{k=\"caf\xC3\xA9 \xEF\xBF\xBD\"} 3.5e-09\n"
            "# TYPE golden_seconds histogram\n"
            "# HELP golden_seconds Latency\n"
            "golden_seconds_bucket{device=\"0\",le=\"0.001\"} 2 # "
            "{trace_id=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",span_id=\"bbbbbbbbbbbbbbbb\"} 0.0005 1700000000.123\n"
            "golden_seconds_bucket{device=\"0\",le=\"0.25\"} 2\n"
            "golden_seconds_bucket{device=\"0\",le=\"1000000\"} 3\n"
            "golden_seconds_bucket{device=\"0\",le=\"+Inf\"} 6 # "
            "{trace_id=\"cccccccccccccccccccccccccccccccc\",span_id=\"dddddddddddddddd\"} 2000000\n"
            "golden_seconds_count{device=\"0\"} 6\n"
            "golden_seconds_sum{device=\"0\"} 12.75\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"0.001\"} 2\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"0.25\"} 2\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"1000000\"} 3\n"
            "golden_seconds_bucket{device=\"q\\\"uote\",le=\"+Inf\"} 6\n"
            "golden_seconds_count{device=\"q\\\"uote\"} 6\n"
            "golden_seconds_sum{device=\"q\\\"uote\"} 12.75\n"
            "# TYPE golden_unlabelled_seconds histogram\n"
            "# HELP golden_unlabelled_seconds Latency\n"
            "golden_unlabelled_seconds_bucket{le=\"0.001\"} 2\n"
            "golden_unlabelled_seconds_bucket{le=\"0.25\"} 2\n"
            "golden_unlabelled_seconds_bucket{le=\"1000000\"} 3\n"
            "golden_unlabelled_seconds_bucket{le=\"+Inf\"} 6\n"
            "golden_unlabelled_seconds_count 6\n"
            "golden_unlabelled_seconds_sum 12.75\n"
            "# EOF\n");
}

// /metrics reads the registry in place and copies the label text each series
// made once; a snapshot's series have no such text, so each serializer writes
// their labels itself. Both must come out the same, for labels that need
// escaping, that are not ASCII or not UTF-8 (the formats differ there) and
// for none.
TEST(ExpositionGolden, ARegistryReadInPlaceWritesWhatItsSnapshotWrites) {
  gm::Registry r;
  auto& ops = r.counter("golden_ops_total", "Ops \\ done\nacross \"lines\"", {"device", "op"});
  ops.with({"0", "a\\b\"c\nd"}).inc(7);
  ops.with({"1", "plain"}).inc(3);
  r.counter("golden_empty_total", "Declared, nothing recorded", {"device"});
  auto& bytes = r.gauge("golden_bytes", "Bytes", {"k"});
  bytes.with({"nan"}).set(NAN);
  bytes.with({"inf"}).set(INFINITY);
  bytes.with({"frac"}).set(0.1);
  bytes.with({"caf\xC3\xA9 \xFF"}).set(3.5e-9);
  bytes.with({"caf\xC3\xA9"}).set(-42);
  r.up_down_counter("golden_in_flight", "In flight").with().add(-3);
  auto& seconds = r.histogram("golden_seconds", "Latency", {"device"}, {0.001, 0.25, 1e6});
  for (const char* device : {"0", "q\"uote", "new\nline"}) {
    for (double v : {0.0005, 0.1, 2e6}) seconds.with({device}).observe(v);
  }
  r.histogram("golden_unlabelled_seconds", "Latency", {}, {1.0}).with().observe(0.5);

  const gm::Snapshot snapshot = r.snapshot();
  const std::string text = gd::exposition_text(r);
  EXPECT_EQ(text, gd::exposition_text(snapshot));
  EXPECT_EQ(gd::openmetrics_text(r), gd::openmetrics_text(snapshot));
  // Written from the registry's text, not escaped again nor left raw.
  EXPECT_NE(text.find("golden_ops_total{device=\"1\",op=\"plain\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("golden_ops_total{device=\"0\",op=\"a\\\\b\\\"c\\nd\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("golden_seconds_bucket{device=\"new\\nline\",le=\"+Inf\"} 3\n"), std::string::npos) << text;
}
