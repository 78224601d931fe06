#include "glassbox/exporters/detail/exposition_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "line_writer.hpp"
#include "scrape_writer.hpp"

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

void histogram_lines(LineWriter& w, std::string_view name, const metrics::HistogramValue& h, std::string_view labels,
                     std::string_view bucket, const std::vector<std::string>& le) {
  sample_start(w, name, "_count", labels);
  w.put(h.count);
  w.put('\n');
  sample_start(w, name, "_sum", labels);
  number(w, h.sum);
  w.put('\n');
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

class TextWriter final : public ScrapeWriter<TextWriter> {
 public:
  using ScrapeWriter::ScrapeWriter;

  void family(const metrics::FamilyView& f) override {
    start_family(f);
    if (f.series == 0) return;  // declared, nothing recorded yet: left out
    std::string help;
    escaped(help, f.help, false);
    for (std::string_view piece : {std::string_view("# HELP "), f.name, std::string_view(" "), std::string_view(help),
                                   std::string_view("\n# TYPE "), f.name, std::string_view(" "), type_name(f.type)})
      w_.put(piece);
    w_.put('\n');
  }

  static constexpr auto write_labels = label_block;
  static constexpr auto write_number = number;
  static constexpr auto write_histogram = histogram_lines;
  static std::string_view sample_suffix(metrics::MetricType) { return ""; }
};

}  // namespace

std::string exposition_text(const metrics::Registry& registry) { return write_scrape<TextWriter>(registry); }

std::string exposition_text(const metrics::Snapshot& snapshot) { return write_scrape<TextWriter>(snapshot); }

}  // namespace glassbox::exporters::detail
