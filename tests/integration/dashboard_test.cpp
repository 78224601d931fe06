// The Grafana dashboard and the alert rules against the metric contract: the
// families the code registers (read from the four libraries, not listed
// here), their types, and the dashboard's own variables; the alert and
// recording rules against the same families.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "grafana_dashboard.hpp"
#include "metric_families.hpp"
#include "prometheus_rules.hpp"
#include "promql_selectors.hpp"
#include "source_dir.hpp"

namespace fs = std::filesystem;
using glassbox::testing::dashboard_panels;
using glassbox::testing::dashboard_queries;
using glassbox::testing::families_in_code;
using glassbox::testing::promql_selectors;
using glassbox::testing::read_text_file;
using glassbox::testing::recorded_names;
using nlohmann::json;

namespace {

fs::path dashboard_file() {
  return glassbox::testing::source_dir() / "dashboards/grafana/dashboards/glassbox-runtime.json";
}

bool is_recorded(const std::string& name) {
  const auto& names = recorded_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// What a series name is: the family's type, "histogram series" for a
/// histogram's _bucket/_sum/_count, "recording rule" for a name
/// recording.yml records, or "" when it is none of these.
std::string series_kind(const std::map<std::string, std::string>& families, const std::string& name) {
  if (is_recorded(name)) return "recording rule";
  if (auto it = families.find(name); it != families.end()) return it->second == "histogram" ? "" : it->second;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (!name.ends_with(s)) continue;
    auto it = families.find(name.substr(0, name.size() - s.size()));
    if (it != families.end() && it->second == "histogram") return "histogram series";
  }
  return "";
}

std::string family_of(const std::string& series) {
  static const std::regex suffix("_(bucket|sum|count)$");
  return std::regex_replace(series, suffix, "");
}

std::string where(const glassbox::testing::DashboardQuery& q) {
  return "panel '" + q.panel + "' " + q.ref_id + ": " + q.expr;
}

class GrafanaDashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(dashboard_ = glassbox::testing::read_dashboard(dashboard_file())) << dashboard_file();
  }
  json dashboard_;
};

}  // namespace

TEST(MetricContract, TheCodeRegistersTheFamiliesThisTestReadsFrom) {
  auto families = families_in_code();  // a copy, so operator[] may look up freely
  // If the registry calls change shape, the scan must not silently find nothing.
  EXPECT_EQ(families["glassbox_handles_in_use"], "gauge");
  EXPECT_EQ(families["glassbox_host_backend_alloc_seconds"], "histogram");
  EXPECT_EQ(families["glassbox_autograd_nodes_executed_total"], "counter");
  EXPECT_EQ(families["glassbox_spans_dropped_total"], "counter");
  EXPECT_GE(families.size(), 20u);
}

TEST_F(GrafanaDashboard, IsAProvisionableDashboardWithDatasourceAndInstanceVariables) {
  EXPECT_EQ(dashboard_.value("uid", ""), "glassbox-runtime");
  EXPECT_EQ(dashboard_.value("title", ""), "glassbox runtime");
  EXPECT_GE(dashboard_.value("schemaVersion", 0), 39);
  std::map<std::string, json> vars;
  for (const auto& v : dashboard_["templating"]["list"]) vars[v.value("name", "")] = v;
  ASSERT_TRUE(vars.count("datasource") && vars.count("instance") && vars.count("device"));
  EXPECT_EQ(vars["datasource"]["type"], "datasource");
  EXPECT_EQ(vars["datasource"]["query"], "prometheus");
  for (const char* name : {"instance", "device"}) {
    EXPECT_EQ(vars[name]["type"], "query") << name;
    EXPECT_EQ(vars[name]["datasource"]["uid"], "${datasource}") << name;
    EXPECT_TRUE(vars[name].value("includeAll", false)) << name;
  }
}

TEST_F(GrafanaDashboard, EveryPanelHasAUnitQueriesAndTheDatasourceVariable) {
  auto panels = dashboard_panels(dashboard_);
  ASSERT_GE(panels.size(), 15u);
  std::set<int> ids;
  for (const auto& p : dashboard_["panels"]) EXPECT_TRUE(ids.insert(p.value("id", -1)).second) << "duplicate id " << p;
  for (const auto& p : panels) {
    const std::string title = p.value("title", "");
    EXPECT_FALSE(title.empty());
    EXPECT_NE(p["fieldConfig"]["defaults"].value("unit", ""), "") << "panel '" << title << "' has no unit";
    EXPECT_EQ(p["datasource"].value("uid", ""), "${datasource}") << title;
    ASSERT_FALSE(p.value("targets", json::array()).empty()) << "panel '" << title << "' has no queries";
    for (const auto& t : p["targets"]) {
      EXPECT_EQ(t["datasource"].value("uid", ""), "${datasource}") << title;
      EXPECT_NE(t.value("expr", ""), "") << title;
    }
    const auto& g = p["gridPos"];
    EXPECT_LE(g.value("x", 0) + g.value("w", 0), 24) << "panel '" << title << "' runs off the grid";
  }
}

TEST_F(GrafanaDashboard, ExpressionsUseOnlyFamiliesTheCodeRegistersAndRateOnlyCounters) {
  const auto families = families_in_code();
  for (const auto& q : dashboard_queries(dashboard_)) {
    auto selectors = promql_selectors(q.expr);
    EXPECT_FALSE(selectors.empty()) << "no series in " << where(q);
    for (const auto& s : selectors) {
      const std::string kind = series_kind(families, s.metric);
      EXPECT_NE(kind, "") << "'" << s.metric << "' names no series of a family the code registers, in " << where(q);
      if (s.function == "rate" || s.function == "increase" || s.function == "irate") {
        EXPECT_TRUE(kind == "counter" || kind == "histogram series")
            << s.function << "() of the " << kind << " " << s.metric << " in " << where(q);
      }
    }
  }
}

TEST_F(GrafanaDashboard, EveryFamilyTheCodeRegistersIsOnTheDashboard) {
  std::set<std::string> shown;
  for (const auto& q : dashboard_queries(dashboard_)) {
    for (const auto& s : promql_selectors(q.expr)) shown.insert(family_of(s.metric));
  }
  for (const auto& [family, kind] : families_in_code())
    EXPECT_TRUE(shown.count(family)) << family << " (" << kind << ") has no panel";
}

TEST_F(GrafanaDashboard, ExpressionsFilterByInstanceUseRateIntervalAndDefinedVariables) {
  std::set<std::string> defined{"__rate_interval"};
  for (const auto& v : dashboard_["templating"]["list"]) defined.insert(v.value("name", ""));
  static const std::regex variable(R"(\$\{?([A-Za-z_][A-Za-z0-9_]*))");
  for (const auto& q : dashboard_queries(dashboard_)) {
    for (std::sregex_iterator m(q.expr.begin(), q.expr.end(), variable), end; m != end; ++m) {
      EXPECT_TRUE(defined.count((*m)[1])) << "undefined variable $" << (*m)[1] << " in " << where(q);
    }
    for (const auto& s : promql_selectors(q.expr)) {
      // A fleet-level recorded series (job:..., job_library:...) has no instance to filter.
      const bool per_instance =
          !is_recorded(s.metric) || s.metric.substr(0, s.metric.find(':')).find("instance") != std::string::npos;
      EXPECT_TRUE(!per_instance || s.matchers.find(R"(instance=~"$instance")") != std::string::npos)
          << s.metric << " is not filtered by $instance in " << where(q);
      if (!s.range.empty()) {
        EXPECT_EQ(s.range, "$__rate_interval") << where(q);
      }
    }
  }
}

TEST(AlertRules, NameOnlyFamiliesTheCodeRegisters) {
  const auto families = families_in_code();
  for (const char* file : {"alerts.yml", "recording.yml"}) {
    const std::string rules = read_text_file(glassbox::testing::source_dir() / "dashboards/prometheus" / file);
    // Not inside a recorded name (level:glassbox_...:operations), which the next test checks.
    static const std::regex name(R"((^|[^:A-Za-z0-9_])(glassbox_[a-z0-9_]+)\b)");
    std::size_t seen = 0;
    for (std::sregex_iterator m(rules.begin(), rules.end(), name), end; m != end; ++m, ++seen) {
      EXPECT_NE(series_kind(families, (*m)[2]), "") << (*m)[2] << " in " << file << " is no family the code registers";
    }
    EXPECT_GE(seen, 4u) << file;
  }
}

// Prometheus's naming convention, level:metric:operations, with a glassbox
// family as the metric; and every fleet view has its panel.
TEST_F(GrafanaDashboard, EveryRecordingRuleIsNamedByConventionAndShownInTheFleetRow) {
  const auto families = families_in_code();
  static const std::regex form(R"(^([a-z_]+):(glassbox_[a-z0-9_]+):([a-z0-9_]+)$)");
  std::set<std::string> shown;
  for (const auto& q : dashboard_queries(dashboard_)) {
    for (const auto& s : promql_selectors(q.expr)) shown.insert(s.metric);
  }
  ASSERT_GE(recorded_names().size(), 6u);
  for (const auto& name : recorded_names()) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(name, m, form)) << name << " is not level:metric:operations";
    const std::string metric = m[2];
    const bool names_a_family =
        families.count(metric) || families.count(metric + "_total") || families.count(family_of(metric));
    EXPECT_TRUE(names_a_family) << name << ": " << metric << " is no family the code registers";
    // The bucket rates exist for the quantiles built on them.
    if (!name.ends_with("_bucket:rate1m")) {
      EXPECT_TRUE(shown.count(name)) << name << " has no panel";
    }
  }
}

TEST(PromqlSelectors, FindsSeriesThroughAggregationsModifiersAndStrings) {
  auto s = promql_selectors(
      R"(histogram_quantile(0.99, sum by (le, device) (rate(a_bucket{x="}(b"}[$__rate_interval]))) )"
      R"(/ on (device) group_left max without (y) (b offset 30m) > 0.9 * scalar(c:d) and sum(e) by (le))");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].metric, "a_bucket");
  EXPECT_EQ(s[0].matchers, R"(x="}(b")");
  EXPECT_EQ(s[0].range, "$__rate_interval");
  EXPECT_EQ(s[0].function, "rate");
  EXPECT_EQ(s[1].metric, "b");
  EXPECT_EQ(s[1].function, "max");
  EXPECT_EQ(s[2].metric, "c:d");
  EXPECT_EQ(s[2].function, "scalar");
  EXPECT_EQ(s[3].metric, "e");
  EXPECT_EQ(s[3].function, "sum");
}
