// The OpenMetrics serializer and the Accept negotiation behind /metrics,
// read back by tests/support/openmetrics_text.hpp's strict reader.
#include "glassbox/exporters/detail/openmetrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "glassbox/metrics/histogram.hpp"
#include "openmetrics_text.hpp"

namespace gd = glassbox::exporters::detail;
namespace gm = glassbox::metrics;
using glassbox::testing::parse_openmetrics;

namespace {

gm::FamilySnapshot latency_family() {
  gm::SeriesSnapshot s;
  s.labels = {{"device", "0"}};
  s.histogram.upper_bounds = {0.001, 0.004};
  s.histogram.buckets = {2, 1, 1};
  s.histogram.count = 4;
  s.histogram.sum = 0.5;
  s.histogram.exemplars = {
      gm::Exemplar{{{"trace_id", std::string(32, 'a')}, {"span_id", std::string(16, 'b')}}, 0.0005, 1700000000.123},
      std::nullopt, std::nullopt};
  return {"glassbox_test_seconds", "Latency", gm::MetricType::histogram, {s}};
}

}  // namespace

TEST(OpenMetrics, WritesCountersGaugesAndHistogramsWithExemplarsEndingInEof) {
  gm::Snapshot snap{
      {"glassbox_test_requests_total", "Requests", gm::MetricType::counter, {{{{"code", "200"}}, 3, {}}}},
      {"glassbox_test_in_use", "In use", gm::MetricType::gauge, {{{}, 2.5, {}}}},
      {"glassbox_test_declared_total", "Never updated", gm::MetricType::counter, {}},
      latency_family(),
  };
  EXPECT_EQ(gd::openmetrics_text(snap),
            "# TYPE glassbox_test_requests counter\n"
            "# HELP glassbox_test_requests Requests\n"
            "glassbox_test_requests_total{code=\"200\"} 3\n"
            "# TYPE glassbox_test_in_use gauge\n"
            "# HELP glassbox_test_in_use In use\n"
            "glassbox_test_in_use 2.5\n"
            "# TYPE glassbox_test_seconds histogram\n"
            "# HELP glassbox_test_seconds Latency\n"
            "glassbox_test_seconds_bucket{device=\"0\",le=\"0.001\"} 2 # {trace_id=\"" +
                std::string(32, 'a') + "\",span_id=\"" + std::string(16, 'b') +
                "\"} 0.0005 1700000000.123\n"
                "glassbox_test_seconds_bucket{device=\"0\",le=\"0.004\"} 3\n"
                "glassbox_test_seconds_bucket{device=\"0\",le=\"+Inf\"} 4\n"
                "glassbox_test_seconds_count{device=\"0\"} 4\n"
                "glassbox_test_seconds_sum{device=\"0\"} 0.5\n"
                "# EOF\n");
  EXPECT_NO_THROW(parse_openmetrics(gd::openmetrics_text(snap)));
}

TEST(OpenMetrics, EscapesLabelValuesAndHelpAndReplacesBytesThatAreNotUtf8) {
  gm::Snapshot snap{{"glassbox_test_total",
                     "a \"quoted\"\nback\\slash",
                     gm::MetricType::counter,
                     {{{{"path", "C:\\dir\n\"x\"\xff\xc3(é"}}, 1, {}}}}};
  auto text = parse_openmetrics(gd::openmetrics_text(snap));
  ASSERT_EQ(text.families.size(), 1u);
  EXPECT_EQ(text.families[0].help, "a \"quoted\"\nback\\slash");
  ASSERT_EQ(text.samples.size(), 1u);
  EXPECT_EQ(text.samples[0].labels[0].second, "C:\\dir\n\"x\"\xEF\xBF\xBD\xEF\xBF\xBD(é");
}

TEST(OpenMetrics, LeavesOutAnExemplarOverTheLimitOf128Characters) {
  gm::FamilySnapshot f = latency_family();
  f.series[0].histogram.exemplars[0]->labels = {{"trace_id", std::string(121, 'x')}};  // 8 + 121 = 129
  auto text = parse_openmetrics(gd::openmetrics_text({f}));
  EXPECT_FALSE(text.samples[0].exemplar);
  f.series[0].histogram.exemplars[0]->labels = {{"trace_id", std::string(120, 'x')}};  // exactly 128
  text = parse_openmetrics(gd::openmetrics_text({f}));
  EXPECT_TRUE(text.samples[0].exemplar);
}

TEST(OpenMetrics, WritesInfinitiesAndNaN) {
  gm::Snapshot snap{{"glassbox_test_value",
                     "v",
                     gm::MetricType::gauge,
                     {{{{"k", "a"}}, INFINITY, {}}, {{{"k", "b"}}, -INFINITY, {}}, {{{"k", "c"}}, NAN, {}}}}};
  auto text = parse_openmetrics(gd::openmetrics_text(snap));
  ASSERT_EQ(text.samples.size(), 3u);
  EXPECT_EQ(text.samples[0].value, "+Inf");
  EXPECT_EQ(text.samples[1].value, "-Inf");
  EXPECT_EQ(text.samples[2].value, "NaN");
}

TEST(OpenMetrics, AnEmptySnapshotIsJustEof) {
  EXPECT_EQ(gd::openmetrics_text(glassbox::metrics::Snapshot{}), "# EOF\n");
}

TEST(OpenMetricsAccept, PrometheusWithExemplarStorageGetsOpenMetrics) {
  EXPECT_TRUE(gd::accepts_openmetrics(
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
      "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
  EXPECT_TRUE(gd::accepts_openmetrics("application/openmetrics-text"));
  EXPECT_TRUE(gd::accepts_openmetrics("Application/OpenMetrics-Text; version=\"1.0.0\"; charset=utf-8"));
}

TEST(OpenMetricsAccept, AnythingElseKeepsThe004Text) {
  EXPECT_FALSE(gd::accepts_openmetrics(""));
  EXPECT_FALSE(gd::accepts_openmetrics("*/*"));
  EXPECT_FALSE(gd::accepts_openmetrics("text/plain;version=0.0.4"));
  EXPECT_FALSE(gd::accepts_openmetrics("application/openmetrics-text;version=0.0.1"));
  EXPECT_FALSE(gd::accepts_openmetrics("application/openmetrics-text;version=2.0.0"));
  EXPECT_FALSE(gd::accepts_openmetrics("application/openmetrics-text;q=0"));
  EXPECT_FALSE(gd::accepts_openmetrics("application/openmetrics-text;q=abc"));
  EXPECT_FALSE(gd::accepts_openmetrics("application/openmetrics-text;q=0.4, text/plain;q=0.5"));
  EXPECT_TRUE(gd::accepts_openmetrics("application/openmetrics-text;q=0.5, text/plain;q=0.5"));
}

// Found by openmetrics_fuzz: a timestamp too long for the number buffer wrote
// the buffer's garbage into the text.
TEST(OpenMetrics, WritesAnyExemplarTimestampWholeOrNotAtAll) {
  gm::FamilySnapshot f = latency_family();
  f.series[0].histogram.exemplars[0]->timestamp = 1e300;
  auto text = parse_openmetrics(gd::openmetrics_text({f}));
  ASSERT_TRUE(text.samples[0].exemplar);
  EXPECT_EQ(text.samples[0].exemplar->timestamp.size(), 301u + 4u);  // 301 digits, then ".000"
  f.series[0].histogram.exemplars[0]->timestamp = NAN;
  text = parse_openmetrics(gd::openmetrics_text({f}));
  ASSERT_TRUE(text.samples[0].exemplar);
  EXPECT_EQ(text.samples[0].exemplar->timestamp, "");
}

// The text is written into room reserved from an estimate (about 64 bytes a
// line, 16 lines a histogram); a scrape longer than that grows the buffer
// while writing, numbers, label values and exemplars included.
TEST(OpenMetrics, AScrapeLongerThanItsEstimateIsWhole) {
  gm::SeriesSnapshot s;
  s.labels = {{"path", std::string(5000, 'p')}};
  s.histogram.upper_bounds = gm::exponential_buckets(1e-9, 1.5, 200);
  for (std::size_t i = 0; i <= 200; ++i) {
    s.histogram.buckets.push_back(1000000007 * (i + 1));
    s.histogram.count += s.histogram.buckets.back();
    s.histogram.exemplars.push_back(
        gm::Exemplar{{{"trace_id", std::string(32, 'a')}, {"span_id", std::string(16, 'b')}}, 1e-9 * i, 1.7e9 + i});
  }
  s.histogram.sum = 1.0 / 7;
  gm::Snapshot snap{{"glassbox_wide_seconds", std::string(3000, 'h'), gm::MetricType::histogram, {s}}};
  auto text = parse_openmetrics(gd::openmetrics_text(snap));
  ASSERT_EQ(text.samples.size(), 203u);  // 201 buckets, count, sum
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= 200; ++i) {
    cumulative += s.histogram.buckets[i];
    EXPECT_EQ(text.samples[i].labels[0].second, std::string(5000, 'p'));
    EXPECT_EQ(text.samples[i].value, std::to_string(cumulative)) << "bucket " << i;
    ASSERT_TRUE(text.samples[i].exemplar) << "bucket " << i;
  }
  EXPECT_EQ(text.samples[201].value, std::to_string(s.histogram.count));
  EXPECT_EQ(text.families[0].help, std::string(3000, 'h'));
}

// The same, with the point where the room runs out moved across every byte of
// a line, so that it falls once inside each piece: name, labels, a whole
// number, a fraction, a histogram's count and bucket counts.
TEST(OpenMetrics, RunningOutOfRoomAnywhereInALineLosesNothing) {
  for (std::size_t length = 0; length < 400; ++length) {
    gm::SeriesSnapshot h;
    h.labels = {{"k", std::string(length, 'x')}};
    h.histogram.upper_bounds = {0.5};
    h.histogram.buckets = {123456789012345, 98765432109876};
    h.histogram.count = 123456789012345 + 98765432109876;
    h.histogram.sum = 1.0 / 3;
    gm::Snapshot snap{{"g", "h", gm::MetricType::gauge, {{{{"k", std::string(length, 'y')}}, 1e15 + 7, {}}}},
                      {"f", "h", gm::MetricType::gauge, {{{{"k", std::string(length, 'z')}}, 1.0 / 7, {}}}},
                      {"s", "h", gm::MetricType::histogram, {h}}};
    std::string text = gd::openmetrics_text(snap);
    const std::string x(length, 'x');
    const std::string expected =
        "# TYPE g gauge\n# HELP g h\ng{k=\"" + std::string(length, 'y') + "\"} 1000000000000007\n" +
        "# TYPE f gauge\n# HELP f h\nf{k=\"" + std::string(length, 'z') + "\"} 0.1428571428571428\n" +
        "# TYPE s histogram\n# HELP s h\ns_bucket{k=\"" + x + "\",le=\"0.5\"} 123456789012345\n" + "s_bucket{k=\"" + x +
        "\",le=\"+Inf\"} 222222221122221\n" + "s_count{k=\"" + x + "\"} 222222221122221\n" + "s_sum{k=\"" + x +
        "\"} 0.3333333333333333\n# EOF\n";
    ASSERT_EQ(text, expected) << "label length " << length;
  }
}
