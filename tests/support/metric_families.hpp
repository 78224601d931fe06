#pragma once
// The metric families the code registers, read from the libraries' sources
// (not listed by hand), for the tests that hold the dashboards, the alert
// rules and the live page to the metric contract.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "source_dir.hpp"

namespace glassbox::testing {

/// Family name -> counter, gauge or histogram, from every registry call
/// (`counter("glassbox_...")`, `gauge(`, `up_down_counter(`, `histogram(`)
/// in the library sources.
inline const std::map<std::string, std::string>& families_in_code() {
  static const std::map<std::string, std::string> families = [] {
    static const std::regex call(R"re(\b(counter|gauge|up_down_counter|histogram)\(\s*"(glassbox_[a-z0-9_]+)")re");
    std::map<std::string, std::string> out;
    for (const char* dir : {"instrumentation", "core", "cuda", "exporters"}) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(source_dir() / dir)) {
        const auto ext = e.path().extension();
        if (ext != ".cpp" && ext != ".hpp") continue;
        const std::string text = read_text_file(e.path());
        for (std::sregex_iterator m(text.begin(), text.end(), call), end; m != end; ++m) {
          const std::string kind = (*m)[1];
          out[(*m)[2]] = kind == "up_down_counter" ? "gauge" : kind;
        }
      }
    }
    return out;
  }();
  return families;
}

}  // namespace glassbox::testing
