#include "glassbox/exporters/detail/openmetrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "bucket_bounds.hpp"
#include "glassbox/exporters/detail/http_request_head.hpp"
#include "line_writer.hpp"
#include "scrape_writer.hpp"
#include "sixteen_digits.hpp"

namespace glassbox::exporters::detail {

namespace {

// --- Accept ------------------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Cuts `s` at the first `separator`: returns what was before it, leaves the rest.
std::string_view cut(std::string_view& s, char separator) {
  std::size_t at = s.find(separator);
  std::string_view head = s.substr(0, at);
  s.remove_prefix(at == std::string_view::npos ? s.size() : at + 1);
  return head;
}

struct MediaRange {
  std::string_view type;
  std::string_view version;  // empty when absent
  double q = 1.0;
};

MediaRange parse_range(std::string_view range) {
  MediaRange r{trim(cut(range, ';')), {}, 1.0};
  while (!range.empty()) {
    std::string_view param = trim(cut(range, ';'));
    std::string_view name = trim(cut(param, '='));
    std::string_view value = trim(param);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (equals_ignoring_case(name, "version")) r.version = value;
    if (equals_ignoring_case(name, "q")) {
      // A q that does not parse, or lies outside [0, 1], makes the range unacceptable.
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), r.q);
      if (ec != std::errc() || end != value.data() + value.size() || !(r.q >= 0 && r.q <= 1)) r.q = 0;
    }
  }
  return r;
}

// --- Text ----------------------------------------------------------------------

// The length of the UTF-8 sequence at the start of `s`, or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF included).
std::size_t utf8_sequence(std::string_view s) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b = byte(0);
  if (b < 0x80) return 1;
  std::size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (n == 0 || b > 0xF4 || s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i)
    if ((byte(i) & 0xC0) != 0x80) return 0;
  unsigned char second = byte(1);
  if ((b == 0xE0 && second < 0xA0) || (b == 0xED && second >= 0xA0) || (b == 0xF0 && second < 0x90) ||
      (b == 0xF4 && second >= 0x90))
    return 0;
  return n;
}

// A label value or help text: backslash, double quote and newline escaped, and
// bytes that are not UTF-8 replaced, so the line stays one valid line.
void write_escaped(std::string& out, std::string_view s) {
  // Most values are plain ASCII with nothing to escape: one append.
  auto plain = [](char c) { return c != '\\' && c != '"' && c != '\n' && static_cast<unsigned char>(c) < 0x80; };
  if (std::all_of(s.begin(), s.end(), plain)) {
    out.append(s);
    return;
  }
  while (!s.empty()) {
    std::size_t n = utf8_sequence(s);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      n = 1;
    } else if (s[0] == '\\') {
      out += "\\\\";
    } else if (s[0] == '"') {
      out += "\\\"";
    } else if (s[0] == '\n') {
      out += "\\n";
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
}

// Characters (code points) as OpenMetrics counts an exemplar's label set.
std::size_t characters(std::string_view s) {
  std::size_t count = 0;
  while (!s.empty()) {
    s.remove_prefix(std::max<std::size_t>(utf8_sequence(s), 1));
    ++count;
  }
  return count;
}

// 16 significant digits, as the 0.0.4 text writes them (sixteen_digits.hpp),
// with OpenMetrics' spelling of NaN.
char* number(char* d, double v) {
  if (std::isnan(v)) return put_piece(d, "NaN");
  if (std::isinf(v)) return put_piece(d, v > 0 ? "+Inf" : "-Inf");
  return sixteen_digits(d, v);
}

// `{k="v",...` without the closing brace, or empty when there are no labels.
void write_label_block(std::string& out, const metrics::LabelPairs& labels) {
  char separator = '{';
  for (const auto& [name, value] : labels) {
    out += separator;
    separator = ',';
    out += name;
    out += "=\"";
    write_escaped(out, value);
    out += '"';
  }
}

void write_exemplar(LineWriter& w, const metrics::Exemplar& e) {
  std::size_t length = 0;
  for (const auto& [name, value] : e.labels) length += characters(name) + characters(value);
  if (length > 128) return;
  std::string block;
  write_label_block(block, e.labels);
  w.put(" # ");
  w.put(block.empty() ? std::string_view("{}") : std::string_view(block));
  if (!block.empty()) w.put('}');
  w.put(' ');
  w.end_line(number(w.line(kNumberRoom), e.value));
  if (!std::isfinite(e.timestamp)) return;  // optional, and OpenMetrics has no NaN or Inf time
  char buffer[400];                         // room for any double in fixed notation (309 digits before the point)
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, e.timestamp, std::chars_format::fixed, 3);
  w.put(' ');
  w.put(std::string_view(buffer, ec == std::errc() ? end : buffer));
}

void histogram_lines(LineWriter& w, std::string_view name, const metrics::HistogramValue& h, std::string_view labels,
                     std::string_view bucket, const std::vector<std::string>& le) {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    char* p = w.line(bucket.size() + kLeRoom + kCountRoom + 1);
    p = put_count(put_piece(put_piece(p, bucket), le[i]), cumulative);
    if (i < h.exemplars.size() && h.exemplars[i]) {
      w.end_line(p);
      write_exemplar(w, *h.exemplars[i]);
      p = w.line(1);
    }
    *p++ = '\n';
    w.end_line(p);
  }
  char* p = w.line(2 * sample_room(name, "_count", labels));
  p = put_count(sample_start(p, name, "_count", labels), h.count);
  *p++ = '\n';
  p = number(sample_start(p, name, "_sum", labels), h.sum);
  *p++ = '\n';
  w.end_line(p);
}

class OpenMetricsWriter final : public ScrapeWriter<OpenMetricsWriter> {
 public:
  using ScrapeWriter::ScrapeWriter;

  void family(const metrics::FamilyView& f) override {
    // OpenMetrics names a counter without its `_total`, which only its sample has.
    metrics::FamilyView named = f;
    if (f.type == metrics::MetricType::counter && f.name.ends_with("_total")) named.name.remove_suffix(6);
    start_family(named);
    if (f.series == 0) return;  // declared, nothing recorded yet: left out
    const std::string_view type = f.type == metrics::MetricType::counter ? "counter"
                                  : f.type == metrics::MetricType::gauge ? "gauge"
                                                                         : "histogram";
    std::string help;
    write_escaped(help, f.help);
    for (std::string_view piece :
         {std::string_view("# TYPE "), named.name, std::string_view(" "), type, std::string_view("\n# HELP "),
          named.name, std::string_view(" "), std::string_view(help)})
      w_.put(piece);
    w_.put('\n');
  }

  static constexpr auto write_labels = write_label_block;
  static constexpr auto write_number = number;
  static constexpr auto write_histogram = histogram_lines;
  static std::string_view sample_suffix(metrics::MetricType t) {
    return t == metrics::MetricType::counter ? "_total" : "";
  }

  void finish() { w_.put("# EOF\n"); }
};

}  // namespace

bool accepts_openmetrics(std::string_view accept) {
  double openmetrics = 0;
  double text = 0;
  while (!accept.empty()) {
    MediaRange r = parse_range(cut(accept, ','));
    if (equals_ignoring_case(r.type, "application/openmetrics-text") && (r.version.empty() || r.version == "1.0.0")) {
      openmetrics = std::max(openmetrics, r.q);
    } else if (equals_ignoring_case(r.type, "text/plain")) {
      text = std::max(text, r.q);
    }
  }
  return openmetrics > 0 && openmetrics >= text;
}

std::string openmetrics_text(const metrics::Registry& registry) { return write_scrape<OpenMetricsWriter>(registry); }

std::string openmetrics_text(const metrics::Snapshot& snapshot) { return write_scrape<OpenMetricsWriter>(snapshot); }

}  // namespace glassbox::exporters::detail
