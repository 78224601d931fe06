#pragma once
// Reads a Grafana dashboard JSON the way Grafana lays it out: panels at the
// top level, or inside a collapsed row's own "panels"; each panel's queries
// in "targets". Tests take the PromQL from here, never from a hand list.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace glassbox::testing {

struct DashboardQuery {
  std::string panel;  ///< the panel's title, for messages
  std::string ref_id;
  std::string expr;
};

inline nlohmann::json read_dashboard(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

/// Every panel that is not a row, in layout order.
inline std::vector<nlohmann::json> dashboard_panels(const nlohmann::json& dashboard) {
  std::vector<nlohmann::json> out;
  for (const auto& p : dashboard.value("panels", nlohmann::json::array())) {
    if (p.value("type", "") != "row") {
      out.push_back(p);
      continue;
    }
    for (const auto& inner : p.value("panels", nlohmann::json::array())) out.push_back(inner);
  }
  return out;
}

inline std::vector<DashboardQuery> dashboard_queries(const nlohmann::json& dashboard) {
  std::vector<DashboardQuery> out;
  for (const auto& p : dashboard_panels(dashboard)) {
    for (const auto& t : p.value("targets", nlohmann::json::array())) {
      out.push_back({p.value("title", ""), t.value("refId", ""), t.value("expr", "")});
    }
  }
  return out;
}

struct DashboardVariable {
  std::string name;
  std::string query;  ///< e.g. label_values({__name__=~"glassbox_.+"}, instance)
};

/// The variables whose values come from a datasource query.
inline std::vector<DashboardVariable> dashboard_query_variables(const nlohmann::json& dashboard) {
  std::vector<DashboardVariable> out;
  for (const auto& v : dashboard["templating"].value("list", nlohmann::json::array())) {
    if (v.value("type", "") != "query") continue;
    const auto& q = v["query"];
    out.push_back({v.value("name", ""), q.is_object() ? q.value("query", "") : q.get<std::string>()});
  }
  return out;
}

}  // namespace glassbox::testing
