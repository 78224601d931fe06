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

}  // namespace promql_detail

inline std::vector<PromqlSelector> promql_selectors(const std::string& expr) {
  using namespace promql_detail;
  static const std::set<std::string> aggregations{"sum",    "min",    "max",          "avg",  "group", "stddev",
                                                  "stdvar", "count",  "count_values", "topk", "bottomk", "quantile"};
  static const std::set<std::string> label_lists{"by", "without", "on", "ignoring", "group_left", "group_right"};
  static const std::set<std::string> keywords{"and", "or", "unless", "bool", "offset", "atan2", "Inf", "NaN"};
  std::vector<PromqlSelector> out;
  std::vector<std::string> calls;  // one per open parenthesis
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
      if (aggregations.count(word) && j < expr.size() && expr[j] != '(') {
        const std::size_t modifier_end = read_ident(expr, j);  // sum by (le) (...)
        if (label_lists.count(expr.substr(j, modifier_end - j))) {
          j = skip_spaces(expr, skip_group(expr, skip_spaces(expr, modifier_end)));
        }
      }
      if (label_lists.count(word) && j < expr.size() && expr[j] == '(') {
        i = skip_group(expr, j);
      } else if (j < expr.size() && expr[j] == '(') {
        calls.push_back(word);
        i = j + 1;
      } else if (keywords.count(word) || label_lists.count(word)) {
        i = end;
      } else {
        PromqlSelector sel{word, "", "", calls.empty() ? "" : calls.back()};
        if (j < expr.size() && expr[j] == '{') {
          const std::size_t close = skip_group(expr, j);
          sel.matchers = expr.substr(j + 1, close - j - 2);
          j = skip_spaces(expr, close);
        }
        if (j < expr.size() && expr[j] == '[') {
          const std::size_t close = skip_group(expr, j);
          sel.range = expr.substr(j + 1, close - j - 2);
          j = close;
        }
        out.push_back(std::move(sel));
        i = j;
      }
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace glassbox::testing
