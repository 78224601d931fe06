#pragma once
// A small parser for the Prometheus text exposition format, so tests read a
// real scrape the way Prometheus would, not through glassbox's own structures.
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace glassbox::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

inline std::map<std::string, std::string> parse_labels(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t eq = text.find('=', i);
    std::string key = text.substr(i, eq - i);
    std::string value;
    std::size_t j = eq + 2;  // skip ="
    for (; text[j] != '"'; ++j) {
      if (text[j] == '\\') ++j;
      value += text[j];
    }
    out[key] = value;
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return out;
}

inline std::vector<Sample> parse_prometheus_text(const std::string& body) {
  std::vector<Sample> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t brace = line.find('{');
    std::size_t space = line.rfind(' ');
    if (space == std::string::npos) throw std::runtime_error("bad sample line: " + line);
    if (brace != std::string::npos && brace < space) {
      std::size_t close = line.rfind('}');
      s.name = line.substr(0, brace);
      s.labels = parse_labels(line.substr(brace + 1, close - brace - 1));
    } else {
      s.name = line.substr(0, space);
    }
    s.value = std::stod(line.substr(space + 1));
    out.push_back(std::move(s));
  }
  return out;
}

/// The first sample named `name` whose labels include all of `labels`.
inline const Sample* find_sample(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels = {}) {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (all) return &s;
  }
  return nullptr;
}

}  // namespace glassbox::testing
