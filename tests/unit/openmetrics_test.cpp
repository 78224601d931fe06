// The OpenMetrics serializer and the Accept negotiation behind /metrics,
// read back by tests/support/openmetrics_text.hpp's strict reader.
#include "glassbox/exporters/detail/openmetrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

TEST(OpenMetrics, AnEmptySnapshotIsJustEof) { EXPECT_EQ(gd::openmetrics_text({}), "# EOF\n"); }

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
