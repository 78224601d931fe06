#include "glassbox/exporters/detail/exposition_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bucket_bounds.hpp"
#include "line_writer.hpp"
#include "scrape_size.hpp"

namespace glassbox::exporters::detail {

namespace {

// The text is byte for byte what prometheus-cpp's TextSerializer writes,
// except that HELP text is escaped as the format says
// (tests/unit/exposition_text_test.cpp).

void number(LineWriter& w, double v) {
  if (std::isnan(v)) return w.put("Nan");
  if (std::isinf(v)) return w.put(v < 0 ? "-Inf" : "+Inf");
  w.put_finite(v);
}

// Label values escape backslash, quote and newline; help text backslash and newline.
void escaped(std::string& out, std::string_view s, bool quotes) {
  auto plain = [quotes](char c) { return c != '\\' && c != '\n' && (c != '"' || !quotes); };
  // Most values need no escape: one copy instead of one per byte.
  if (std::all_of(s.begin(), s.end(), plain)) {
    out.append(s);
    return;
  }
  for (char c : s) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '"' && quotes) {
      out.append("\\\"");
    } else {
      out.push_back(c);
    }
  }
}

// A series' labels as written, `{k="v",...` without the closing brace, or
// empty: built once per series, since a histogram writes them on every line.
void label_block(std::string& block, const metrics::LabelPairs& labels) {
  block.clear();
  char separator = '{';
  for (const auto& [k, v] : labels) {
    block.push_back(separator);
    block.append(k);
    block.append("=\"");
    escaped(block, v, true);
    block.push_back('"');
    separator = ',';
  }
}

void histogram_lines(LineWriter& w, std::string_view name, const metrics::SeriesSnapshot& s,
                     const std::vector<std::string>& le, std::string& block) {
  const metrics::HistogramValue& h = s.histogram;
  label_block(block, s.labels);
  sample_start(w, name, "_count", block);
  w.put(h.count);
  w.put('\n');
  sample_start(w, name, "_sum", block);
  number(w, h.sum);
  w.put('\n');
  const std::string bucket = bucket_line_start(name, block);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    w.put(bucket);
    w.put(le[i]);
    w.put(cumulative);
    w.put('\n');
  }
}

std::string_view type_name(metrics::MetricType t) {
  switch (t) {
    case metrics::MetricType::counter:
      return "counter";
    case metrics::MetricType::gauge:
      return "gauge";
    case metrics::MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

void family_lines(LineWriter& w, const metrics::FamilySnapshot& f) {
  w.put("# HELP ");
  w.put(f.name);
  w.put(' ');
  std::string block;  // reused by the help text and every series: one allocation
  escaped(block, f.help, false);
  w.put(block);
  w.put("\n# TYPE ");
  w.put(f.name);
  w.put(' ');
  w.put(type_name(f.type));
  w.put('\n');
  if (f.type == metrics::MetricType::histogram) {
    const std::vector<std::string> le = bucket_le_endings(f);
    for (const metrics::SeriesSnapshot& s : f.series) histogram_lines(w, f.name, s, le, block);
    return;
  }
  for (const metrics::SeriesSnapshot& s : f.series) {
    label_block(block, s.labels);
    sample_start(w, f.name, "", block);
    number(w, s.value);
    w.put('\n');
  }
}

}  // namespace

std::string exposition_text(const metrics::Snapshot& snapshot) {
  std::string out;
  {
    LineWriter w(out, scrape_size(snapshot));
    for (const auto& f : snapshot) {
      if (!f.series.empty()) family_lines(w, f);  // declared, nothing recorded yet: left out
    }
  }
  return out;
}

}  // namespace glassbox::exporters::detail
