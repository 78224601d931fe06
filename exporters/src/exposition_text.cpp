#include "glassbox/exporters/detail/exposition_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bucket_bounds.hpp"
#include "line_writer.hpp"
#include "scrape_writer.hpp"
#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

namespace {

// The text is byte for byte what prometheus-cpp's TextSerializer writes,
// except that HELP text is escaped as the format says
// (tests/unit/exposition_text_test.cpp).

char* number(char* d, double v) {
  if (std::isnan(v)) return put_piece(d, "Nan");
  if (std::isinf(v)) return put_piece(d, v < 0 ? "-Inf" : "+Inf");
  return sixteen_digits(d, v);
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
  // Room for every line at once: a bucket line is its start, an ending of
  // at most kLeRoom and a count.
  char* p =
      w.line(2 * sample_room(name, "_count", labels) + h.buckets.size() * (bucket.size() + kLeRoom + kCountRoom + 1));
  p = put_count(sample_start(p, name, "_count", labels), h.count);
  *p++ = '\n';
  p = number(sample_start(p, name, "_sum", labels), h.sum);
  *p++ = '\n';
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    p = put_count(put_piece(put_piece(p, bucket), le[i]), cumulative);
    *p++ = '\n';
  }
  w.end_line(p);
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
