#pragma once
// Finds the series selectors in a PromQL expression: the metric name, its
// label matchers, its range, and the function or aggregation it sits in.
// Enough PromQL for dashboard and alert expressions (functions, aggregations
// with by/without, binary operators with on/ignoring/group_*, offsets,
// strings, numbers, durations and Grafana's $variables); not a full parser.
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace glassbox::testing {

struct PromqlSelector {
  std::string metric;    ///< empty for a selector like {__name__=~"..."}
  std::string matchers;  ///< the text between the braces
  std::string range;     ///< the text between the brackets after it
  std::string function;  ///< innermost enclosing function or aggregation; empty at top level or in plain parentheses
};

namespace promql_detail {

inline bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
inline bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

inline std::size_t skip_spaces(const std::string& s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

/// Index just past the string literal that starts at `i`.
inline std::size_t skip_string(const std::string& s, std::size_t i) {
  char quote = s[i];
  for (++i; i < s.size() && s[i] != quote; ++i) {
    if (s[i] == '\\' && quote != '`') ++i;
  }
  return i + 1;
}

/// Index just past the bracket that closes the one at `i` ({, [ or ().
inline std::size_t skip_group(const std::string& s, std::size_t i) {
  const char open = s[i], close = open == '{' ? '}' : open == '[' ? ']' : ')';
  int depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = skip_string(s, i);
      continue;
    }
    depth += (c == open) - (c == close);
    ++i;
    if (depth == 0) break;
  }
  return i;
}

inline std::size_t read_ident(const std::string& s, std::size_t i) {
  while (i < s.size() && ident_char(s[i])) ++i;
  return i;
}

inline const std::set<std::string> kAggregations{"sum",    "min",   "max",          "avg",  "group",   "stddev",
                                                 "stdvar", "count", "count_values", "topk", "bottomk", "quantile"};
inline const std::set<std::string> kLabelLists{"by", "without", "on", "ignoring", "group_left", "group_right"};
inline const std::set<std::string> kKeywords{"and", "or", "unless", "bool", "offset", "atan2", "Inf", "NaN"};

/// Past an aggregation's `by (...)` or `without (...)` at `j`, when there is one.
inline std::size_t skip_modifier(const std::string& s, std::size_t j) {
  const std::size_t end = read_ident(s, j);
  return kLabelLists.count(s.substr(j, end - j)) ? skip_spaces(s, skip_group(s, skip_spaces(s, end))) : j;
}

/// Reads the {matchers} and [range] at `j` into `sel`; returns the index past them.
inline std::size_t read_selector(const std::string& s, std::size_t j, PromqlSelector& sel) {
  if (j < s.size() && s[j] == '{') {
    const std::size_t close = skip_group(s, j);
    sel.matchers = s.substr(j + 1, close - j - 2);
    j = skip_spaces(s, close);
  }
  if (j < s.size() && s[j] == '[') {
    const std::size_t close = skip_group(s, j);
    sel.range = s.substr(j + 1, close - j - 2);
    j = close;
  }
  return j;
}

}  // namespace promql_detail

inline std::vector<PromqlSelector> promql_selectors(const std::string& expr) {
  using namespace promql_detail;
  std::vector<PromqlSelector> out;
  std::vector<std::string> calls;  // one per open parenthesis: the function's name, or "" for grouping
  std::size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = skip_string(expr, i);
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '$' || c == '.') {
      i = read_ident(expr, i + 1);  // a number, a duration, or a Grafana variable
    } else if (c == '[') {
      i = skip_group(expr, i);  // a subquery's range
    } else if (c == '(') {
      calls.emplace_back();
      ++i;
    } else if (c == ')') {
      if (!calls.empty()) calls.pop_back();
      ++i;
    } else if (ident_start(c) || c == '{') {
      const std::size_t end = c == '{' ? i : read_ident(expr, i);
      const std::string word = expr.substr(i, end - i);
      std::size_t j = skip_spaces(expr, end);
      if (kAggregations.count(word)) j = skip_modifier(expr, j);  // sum by (le) (...)
      const bool call = j < expr.size() && expr[j] == '(';
      if (kLabelLists.count(word) && call) {
        i = skip_group(expr, j);
      } else if (call) {
        calls.push_back(word);
        i = j + 1;
      } else if (kKeywords.count(word) || kLabelLists.count(word)) {
        i = end;
      } else {
        PromqlSelector sel{word, "", "", calls.empty() ? "" : calls.back()};
        i = read_selector(expr, j, sel);
        out.push_back(std::move(sel));
      }
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace glassbox::testing
