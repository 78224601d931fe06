// The OpenMetrics serializer (/metrics for scrapers that ask for it) and its
// Accept negotiation. Input: fields separated by NUL bytes (help text, two
// label values, an exemplar label name and value, an Accept value), then the
// remaining bytes as doubles (values, sums, exemplar values and timestamps).
// Properties: whatever the text, the output parses back with a strict
// OpenMetrics reader (UTF-8, escapes, one family per TYPE, exemplars on
// buckets within 128 characters, `# EOF` last); label values and help that
// are UTF-8 come back unchanged; accepts_openmetrics never crashes.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "glassbox/exporters/detail/openmetrics.hpp"
#include "openmetrics_text.hpp"

namespace gd = glassbox::exporters::detail;
namespace gm = glassbox::metrics;
namespace gt = glassbox::testing;

namespace {

std::string_view take_field(std::string_view& input) {
  std::size_t end = input.find('\0');
  std::string_view field = input.substr(0, end);
  input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  return field;
}

double take_double(std::string_view& input) {
  double v = 0;
  if (input.size() < sizeof v) return static_cast<double>(input.size());
  std::memcpy(&v, input.data(), sizeof v);
  input.remove_prefix(sizeof v);
  return v;
}

gm::Snapshot snapshot_of(std::string_view& input) {
  std::string help(take_field(input));
  std::string device(take_field(input));
  std::string node(take_field(input));
  std::string exemplar_name(take_field(input));
  std::string exemplar_value(take_field(input));
  gd::accepts_openmetrics(take_field(input));

  gm::SeriesSnapshot h;
  h.labels = {{"device", device}, {"node", node}};
  h.histogram.upper_bounds = {0.001, 0.1};
  for (int i = 0; i < 3; ++i) {
    double d = take_double(input);
    auto n = d >= 0 && d < 1e18 ? static_cast<std::uint64_t>(d) : 0;  // a cast out of range is undefined
    h.histogram.buckets.push_back(n);
    h.histogram.count += n;
  }
  h.histogram.sum = take_double(input);
  // Exemplar label names come from code, never from data: keep them names.
  if (exemplar_name.empty() || exemplar_name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
    exemplar_name = "trace_id";
  double value = take_double(input);
  h.histogram.exemplars = {
      gm::Exemplar{{{exemplar_name, exemplar_value}, {"span_id", node}}, value, take_double(input)}, std::nullopt,
      gm::Exemplar{{}, take_double(input), take_double(input)}};
  gm::SeriesSnapshot c{{{"device", device}}, take_double(input), {}};
  gm::SeriesSnapshot g{{}, take_double(input), {}};
  return {{"glassbox_fuzz_total", help, gm::MetricType::counter, {c}},
          {"glassbox_fuzz_seconds", help, gm::MetricType::histogram, {h}},
          {"glassbox_fuzz_bytes", help, gm::MetricType::gauge, {g}}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  gm::Snapshot snapshot = snapshot_of(input);
  std::string text = gd::openmetrics_text(snapshot);
  gt::OmText parsed;
  try {
    parsed = gt::parse_openmetrics(text);
  } catch (const std::exception& e) {
    fuzz_check(false, e.what(), text);
  }
  fuzz_check(parsed.families.size() == 3, "every family with series is written", text);
  fuzz_check(parsed.samples.size() == 1 + 5 + 1, "a counter, five histogram lines and a gauge", text);
  const std::string& help = snapshot[0].help;
  const auto& labels = snapshot[1].series[0].labels;
  if (gt::om_detail::valid_utf8(help)) fuzz_check(parsed.families[0].help == help, "help round-trips", text);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!gt::om_detail::valid_utf8(labels[i].second)) continue;
    fuzz_check(parsed.samples[1].labels[i].second == labels[i].second, "label values round-trip", text);
  }
  fuzz_check(parsed.samples[2].exemplar == std::nullopt, "a bucket without an exemplar has none", text);
  fuzz_check(parsed.samples[3].exemplar.has_value(), "an empty exemplar label set is written", text);
  return 0;
}
