#pragma once
// What both /metrics serializers share as they walk a registry's series in
// place (or replay a snapshot): the buffer, sized once from the visit's
// shape; the family being written; its bucket `le` endings, made at its first
// histogram series; and each series' labels, the text the registry made when
// the series was created, or written by the format's own escaping when it
// has none.
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bucket_bounds.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/metrics/series_visitor.hpp"
#include "line_writer.hpp"

namespace glassbox::exporters::detail {

/// `Format` (the writer deriving from it) provides, as static members that
/// can be called (functions, or constexpr pointers to the format's own):
/// write_labels(std::string&, const LabelPairs&) (`{k="v",...` left open),
/// write_number(char*, double) (at most kNumberRoom bytes; returns the end),
/// write_histogram(LineWriter&, name, const HistogramValue&, labels, bucket
/// line start, le endings) and
/// sample_suffix(MetricType) (what follows the name on a counter's or
/// gauge's line); and family(), its header lines, which calls start_family().
template <class Format>
class ScrapeWriter : public metrics::SeriesVisitor {
 public:
  explicit ScrapeWriter(std::string& out) : w_(out, 0) {}

  /// About 64 bytes a line: two comment lines per family, one line per
  /// series, and 16 per histogram series (buckets, count and sum of a
  /// typical layout).
  void begin(const metrics::VisitShape& shape) final {
    w_.reserve((2 * shape.families + shape.series + 16 * shape.histogram_series) * 64);
  }
  /// What follows the last family; nothing in the 0.0.4 text.
  void finish() {}

  void series(const metrics::SeriesSnapshot& s, std::string_view label_text) final {
    const std::string_view labels = this->labels(s, label_text);
    if (family_.type == metrics::MetricType::histogram) {
      Format::write_histogram(w_, family_.name, s.histogram, labels, bucket_start(family_.name, labels),
                              le(s.histogram));
      return;
    }
    const std::string_view suffix = Format::sample_suffix(family_.type);
    char* p = w_.line(sample_room(family_.name, suffix, labels));
    p = Format::write_number(sample_start(p, family_.name, suffix, labels), s.value);
    *p++ = '\n';
    w_.end_line(p);
  }

 protected:
  /// Remembers the family whose series follow.
  void start_family(const metrics::FamilyView& f) {
    family_ = f;
    le_.clear();
  }

  LineWriter w_;
  metrics::FamilyView family_;

 private:
  /// The series' labels, `{k="v",...` left open: `label_text` when the
  /// registry made it, else what the format writes of `s.labels`.
  std::string_view labels(const metrics::SeriesSnapshot& s, std::string_view label_text) {
    if (!label_text.empty() || s.labels.empty()) return label_text;
    block_.clear();
    Format::write_labels(block_, s.labels);
    return block_;
  }
  /// The family's bucket endings (bucket_bounds.hpp), made at its first series.
  const std::vector<std::string>& le(const metrics::HistogramValue& h) {
    if (le_.empty()) le_ = bucket_le_endings(h.upper_bounds);
    return le_;
  }
  /// How each bucket line of the series starts (bucket_bounds.hpp).
  std::string_view bucket_start(std::string_view name, std::string_view labels) {
    bucket_line_start(bucket_, name, labels);
    return bucket_;
  }

  std::vector<std::string> le_;
  std::string block_;
  std::string bucket_;
};

/// The text `Writer` (a ScrapeWriter) makes of `source`, a registry read in
/// place or a snapshot replayed.
template <class Writer, class Source>
std::string write_scrape(const Source& source) {
  std::string out;
  {
    Writer writer(out);
    if constexpr (std::is_same_v<Source, metrics::Registry>) {
      source.visit(writer);
    } else {
      metrics::visit(source, writer);
    }
    writer.finish();
  }  // the writer cuts `out` to what it wrote
  return out;
}

}  // namespace glassbox::exporters::detail
