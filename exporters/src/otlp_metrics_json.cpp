#include "glassbox/exporters/otlp_metrics_json.hpp"

#include "json_writer.hpp"
#include "otlp_json_common.hpp"

namespace glassbox::exporters {

namespace {

using detail::JsonWriter;

// AGGREGATION_TEMPORALITY_CUMULATIVE: every point counts from start_unix_ns,
// as a Prometheus counter does, so a lost export loses nothing for good.
constexpr std::int64_t kCumulative = 2;

void labels(JsonWriter& w, const metrics::LabelPairs& pairs) {
  if (pairs.empty()) return;  // proto3 JSON leaves an empty repeated field out
  std::vector<trace::Attribute> attributes;
  attributes.reserve(pairs.size());
  for (const auto& [k, v] : pairs) attributes.push_back({k, v});
  detail::otlp_attributes(w, attributes);
}

void times(JsonWriter& w, PointTimes t, bool cumulative) {
  if (cumulative) w.key("startTimeUnixNano").string(std::to_string(t.start_unix_ns));
  w.key("timeUnixNano").string(std::to_string(t.time_unix_ns));
}

void number_points(JsonWriter& w, const metrics::FamilySnapshot& f, PointTimes t, bool cumulative) {
  w.key("dataPoints").begin_array();
  for (const auto& s : f.series) {
    w.begin_object();
    labels(w, s.labels);
    times(w, t, cumulative);
    detail::otlp_double(w.key("asDouble"), s.value);
    w.end_object();
  }
  w.end_array();
}

void histogram_point(JsonWriter& w, const metrics::SeriesSnapshot& s, PointTimes t) {
  const metrics::HistogramValue& h = s.histogram;
  w.begin_object();
  labels(w, s.labels);
  times(w, t, true);
  if (h.count != 0) w.key("count").string(std::to_string(h.count));  // fixed64: a string, left out at 0
  detail::otlp_double(w.key("sum"), h.sum);
  w.key("bucketCounts").begin_array();
  for (std::uint64_t b : h.buckets) w.string(std::to_string(b));
  w.end_array();
  w.key("explicitBounds").begin_array();
  for (double bound : h.upper_bounds) w.number(bound);
  w.end_array();
  w.end_object();
}

void metric(JsonWriter& w, const metrics::FamilySnapshot& f, PointTimes t) {
  w.begin_object().key("name").string(f.name);
  if (!f.help.empty()) w.key("description").string(f.help);
  switch (f.type) {
    case metrics::MetricType::counter:
      w.key("sum").begin_object();
      number_points(w, f, t, true);
      w.key("aggregationTemporality").number(kCumulative).key("isMonotonic").boolean(true).end_object();
      break;
    case metrics::MetricType::gauge:
      w.key("gauge").begin_object();
      number_points(w, f, t, false);
      w.end_object();
      break;
    case metrics::MetricType::histogram:
      w.key("histogram").begin_object().key("dataPoints").begin_array();
      for (const auto& s : f.series) histogram_point(w, s, t);
      w.end_array().key("aggregationTemporality").number(kCumulative).end_object();
      break;
  }
  w.end_object();
}

}  // namespace

std::string otlp_metrics_json(const metrics::Snapshot& snapshot, const Resource& resource, PointTimes times) {
  std::string out;
  out.reserve(1024 + 256 * otlp_data_points(snapshot));
  JsonWriter w(out);
  detail::otlp_open_envelope(w, "Metrics", "metrics", resource);
  for (const auto& f : snapshot) {
    if (!f.series.empty()) metric(w, f, times);  // declared, nothing recorded yet: as /metrics leaves it out
  }
  detail::otlp_close_envelope(w);
  return out;
}

std::size_t otlp_data_points(const metrics::Snapshot& snapshot) noexcept {
  std::size_t n = 0;
  for (const auto& f : snapshot) n += f.series.size();
  return n;
}

}  // namespace glassbox::exporters
