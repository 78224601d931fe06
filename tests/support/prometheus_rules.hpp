#pragma once
// The project's Prometheus rule files as tests read them: the names
// dashboards/prometheus/recording.yml records.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "source_dir.hpp"

namespace glassbox::testing {

/// Every `record:` name of dashboards/prometheus/recording.yml, in file order.
inline const std::vector<std::string>& recorded_names() {
  static const std::vector<std::string> names = [] {
    static const std::regex record(R"(\brecord:[ \t]*(\S+))");
    const std::string text = read_text_file(source_dir() / "dashboards/prometheus/recording.yml");
    std::vector<std::string> out;
    for (std::sregex_iterator m(text.begin(), text.end(), record), end; m != end; ++m) out.push_back((*m)[1]);
    return out;
  }();
  return names;
}

}  // namespace glassbox::testing
