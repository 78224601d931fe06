#include "glassbox/exporters/detail/exposition_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bucket_bounds.hpp"
#include "scrape_size.hpp"
#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

namespace {

// Writes straight into one string with std::to_chars: a scrape of a thousand
// series is thousands of lines, and stream formatting costs several times
// the writing. The text is byte for byte what prometheus-cpp's
// TextSerializer writes, except that HELP text is escaped as the format says
// (tests/unit/exposition_text_test.cpp).
class TextWriter {
 public:
  explicit TextWriter(std::string& out) : out_(out) {}

  void raw(std::string_view s) { out_.append(s); }
  void ch(char c) { out_.push_back(c); }

  void number(double v) {
    if (std::isnan(v)) return raw("Nan");
    if (std::isinf(v)) return raw(v < 0 ? "-Inf" : "+Inf");
    char buf[32];
    out_.append(buf, sixteen_digits(buf, v));
  }
  void number(std::uint64_t v) { integer(v); }

  // Label values escape backslash, quote and newline; help text backslash and newline.
  void escaped(std::string_view s, bool quotes) {
    // Most values need no escape: one append instead of a push per byte.
    if (s.find_first_of(quotes ? std::string_view("\\\n\"") : std::string_view("\\\n")) == s.npos) return raw(s);
    for (char c : s) {
      if (c == '\\') {
        raw("\\\\");
      } else if (c == '\n') {
        raw("\\n");
      } else if (c == '"' && quotes) {
        raw("\\\"");
      } else {
        ch(c);
      }
    }
  }

 private:
  template <class Int>
  void integer(Int v) {
    char buf[24];
    auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    out_.append(buf, end);
  }

  std::string& out_;
};

const char* type_name(metrics::MetricType t) {
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

// A series' labels as written, `{k="v",...` without the closing brace, or
// empty: built once per series, since a histogram writes them on every line.
std::string_view label_block(std::string& block, const metrics::LabelPairs& labels) {
  block.clear();
  TextWriter w(block);
  char sep = '{';
  for (const auto& [k, v] : labels) {
    w.ch(sep);
    w.raw(k);
    w.raw("=\"");
    w.escaped(v, true);
    w.ch('"');
    sep = ',';
  }
  return block;
}

// name{k="v",...,le="bound"}: `le` (the bound as written) only for histogram buckets.
void series_name(TextWriter& w, std::string_view name, std::string_view suffix, std::string_view labels,
                 const std::string* le) {
  w.raw(name);
  w.raw(suffix);
  if (labels.empty() && le == nullptr) return w.ch(' ');
  w.raw(labels);
  if (le != nullptr) {
    w.ch(labels.empty() ? '{' : ',');
    w.raw("le=\"");
    w.raw(*le);
    w.ch('"');
  }
  w.raw("} ");
}

void histogram_lines(TextWriter& w, const metrics::FamilySnapshot& f, const metrics::SeriesSnapshot& s,
                     const std::vector<std::string>& bounds, std::string& block) {
  const metrics::HistogramValue& h = s.histogram;
  std::string_view labels = label_block(block, s.labels);
  series_name(w, f.name, "_count", labels, nullptr);
  w.number(h.count);
  w.ch('\n');
  series_name(w, f.name, "_sum", labels, nullptr);
  w.number(h.sum);
  w.ch('\n');
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    series_name(w, f.name, "_bucket", labels, &bounds[i]);
    w.number(cumulative);
    w.ch('\n');
  }
}

void family_lines(TextWriter& w, const metrics::FamilySnapshot& f) {
  w.raw("# HELP ");
  w.raw(f.name);
  w.ch(' ');
  w.escaped(f.help, false);
  w.raw("\n# TYPE ");
  w.raw(f.name);
  w.ch(' ');
  w.raw(type_name(f.type));
  w.ch('\n');
  std::string block;  // reused by every series, so its buffer is allocated once
  if (f.type == metrics::MetricType::histogram) {
    std::vector<std::string> bounds = bucket_bound_texts(f);
    for (const metrics::SeriesSnapshot& s : f.series) histogram_lines(w, f, s, bounds, block);
    return;
  }
  for (const metrics::SeriesSnapshot& s : f.series) {
    series_name(w, f.name, "", label_block(block, s.labels), nullptr);
    w.number(s.value);
    w.ch('\n');
  }
}

}  // namespace

std::string exposition_text(const metrics::Snapshot& snapshot) {
  std::string out;
  out.reserve(scrape_size(snapshot));
  TextWriter w(out);
  for (const auto& f : snapshot) {
    if (!f.series.empty()) family_lines(w, f);  // declared, nothing recorded yet: left out
  }
  return out;
}

}  // namespace glassbox::exporters::detail
