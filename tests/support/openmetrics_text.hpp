#pragma once
// A strict reader of the OpenMetrics 1.0 text that glassbox writes (families
// of counters, gauges and histograms, exemplars on buckets), so the unit tests
// and the fuzz target check what a scraper would parse. It throws
// std::runtime_error naming the line at the first thing OpenMetrics does not
// allow there: text that is not UTF-8, a bad escape, a sample outside its
// family, an exemplar over 128 characters, anything after `# EOF`.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glassbox::testing {

using OmLabels = std::vector<std::pair<std::string, std::string>>;

struct OmExemplar {
  OmLabels labels;
  std::string value;
  std::string timestamp;
};

struct OmSample {
  std::string family;
  std::string type;
  std::string name;
  OmLabels labels;
  std::string value;
  std::optional<OmExemplar> exemplar;
};

struct OmFamily {
  std::string name;
  std::string type;
  std::string help;
};

struct OmText {
  std::vector<OmFamily> families;
  std::vector<OmSample> samples;
};

namespace om_detail {

inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80                 ? 1
                    : b >= 0xC2 && b < 0xE0  ? 2
                    : b >= 0xE0 && b < 0xF0  ? 3
                    : b >= 0xF0 && b <= 0xF4 ? 4
                                             : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = cp << 6 | (c & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

inline std::size_t characters(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

class Line {
 public:
  Line(std::string_view text, std::size_t number) : text_(text), number_(number) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("OpenMetrics line " + std::to_string(number_) + ": " + what + ": " + std::string(text_));
  }
  bool done() const { return at_ == text_.size(); }
  bool take(std::string_view s) {
    if (text_.substr(at_, s.size()) != s) return false;
    at_ += s.size();
    return true;
  }
  void expect(std::string_view s) {
    if (!take(s)) fail("expected '" + std::string(s) + "'");
  }
  std::string name() {
    std::size_t start = at_;
    auto ok = [](char c, bool first) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
             (!first && c >= '0' && c <= '9');
    };
    while (at_ < text_.size() && ok(text_[at_], at_ == start)) ++at_;
    if (at_ == start) fail("expected a name");
    return std::string(text_.substr(start, at_ - start));
  }
  // A number as OpenMetrics writes one: a decimal or exponent float, +Inf, -Inf or NaN.
  std::string number() {
    std::string t = token();
    if (t == "+Inf" || t == "-Inf" || t == "NaN") return t;
    char* end = nullptr;
    std::strtod(t.c_str(), &end);
    if (t.find_first_not_of("0123456789+-.e") != std::string::npos || end != t.c_str() + t.size()) fail("bad number");
    return t;
  }
  // Up to the next space or the end of the line.
  std::string token() {
    std::size_t end = text_.find(' ', at_);
    if (end == std::string_view::npos) end = text_.size();
    if (end == at_) fail("expected a value");
    std::string out(text_.substr(at_, end - at_));
    at_ = end;
    return out;
  }
  std::string escaped(bool quoted) {
    std::string out;
    while (at_ < text_.size() && !(quoted && text_[at_] == '"')) {
      char c = text_[at_++];
      if (c == '"') fail("unescaped double quote");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ == text_.size()) fail("backslash at the end");
      char e = text_[at_++];
      if (e == 'n')
        out += '\n';
      else if (e == '\\' || e == '"')
        out += e;
      else
        fail("bad escape");
    }
    return out;
  }
  OmLabels labels() {
    OmLabels out;
    expect("{");
    if (take("}")) return out;
    do {
      std::string n = name();
      expect("=\"");
      out.emplace_back(n, escaped(true));
      expect("\"");
    } while (take(","));
    expect("}");
    return out;
  }

 private:
  std::string_view text_;
  std::size_t number_;
  std::size_t at_ = 0;
};

inline bool belongs(const OmFamily& f, std::string_view sample) {
  if (!sample.starts_with(f.name)) return false;
  std::string_view suffix = sample.substr(f.name.size());
  if (f.type == "counter") return suffix == "_total";
  if (f.type == "histogram") return suffix == "_bucket" || suffix == "_count" || suffix == "_sum";
  return suffix.empty();
}

}  // namespace om_detail

inline OmText parse_openmetrics(std::string_view text) {
  using om_detail::Line;
  if (!om_detail::valid_utf8(text)) throw std::runtime_error("OpenMetrics text is not UTF-8");
  if (!text.ends_with("# EOF\n")) throw std::runtime_error("OpenMetrics text does not end in '# EOF\\n'");
  text.remove_suffix(6);
  OmText out;
  std::size_t number = 0;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    if (newline == std::string_view::npos) throw std::runtime_error("OpenMetrics text: '# EOF' is not the last line");
    Line line(text.substr(0, newline), ++number);
    text.remove_prefix(newline + 1);
    if (line.take("# TYPE ")) {
      OmFamily f{line.name(), {}, {}};
      line.expect(" ");
      f.type = line.token();
      if (f.type != "counter" && f.type != "gauge" && f.type != "histogram") line.fail("unknown type");
      if (!line.done()) line.fail("trailing characters");
      for (const auto& g : out.families)
        if (g.name == f.name) line.fail("family declared twice");
      out.families.push_back(std::move(f));
    } else if (line.take("# HELP ")) {
      if (out.families.empty() || out.families.back().name != line.name()) line.fail("HELP for another family");
      line.expect(" ");
      out.families.back().help = line.escaped(false);
    } else {
      if (out.families.empty()) line.fail("sample before any TYPE");
      const OmFamily& f = out.families.back();
      OmSample s{f.name, f.type, line.name(), {}, {}, {}};
      if (!om_detail::belongs(f, s.name)) line.fail("sample outside its family");
      if (!line.take(" ")) s.labels = line.labels(), line.expect(" ");
      s.value = line.number();
      if (line.take(" # ")) {
        if (!s.name.ends_with("_bucket")) line.fail("exemplar on a sample that is no bucket");
        OmExemplar e{line.labels(), {}, {}};
        std::size_t length = 0;
        for (const auto& [n, v] : e.labels) length += om_detail::characters(n) + om_detail::characters(v);
        if (length > 128) line.fail("exemplar labels over 128 characters");
        line.expect(" ");
        e.value = line.number();
        if (line.take(" ")) e.timestamp = line.number();
        s.exemplar = std::move(e);
      }
      if (!line.done()) line.fail("trailing characters");
      out.samples.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace glassbox::testing
