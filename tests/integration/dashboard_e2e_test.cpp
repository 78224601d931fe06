// The proof that the dashboard is real: glassbox-demo on the CPU, with both
// trace exporters and the OTLP metric push on, scraped every second by Debian's Prometheus running the
// project's own prometheus.yml and alert rules; then every PromQL expression
// in the Grafana dashboard JSON must return data from Prometheus's HTTP API,
// its variables must offer values, and every alert and recording rule must
// evaluate (the Fleet row reads the recording rules).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "child_process.hpp"
#include "demo_path.hpp"
#include "grafana_dashboard.hpp"
#include "live_prometheus.hpp"
#include "otlp_collector.hpp"
#include "source_dir.hpp"
#include "trace_file_reader.hpp"

using glassbox::testing::ChildProcess;
using glassbox::testing::DashboardQuery;
using glassbox::testing::LivePrometheus;
using glassbox::testing::log_tail;
using glassbox::testing::TempDir;
using glassbox::testing::write_prometheus_config;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kScrapeInterval = "1s";
// What Grafana makes of $__rate_interval for a 1 s scrape interval: at least
// four scrapes, so rate() always has two samples to work with.
constexpr const char* kRateInterval = "5s";
// Long enough for a fresh demo to use every part and for rate() windows to fill.
constexpr auto kDataDeadline = 60s;

/// `expr` as Grafana sends it with "All" picked for every variable but the
/// instance, which is the demo's.
std::string as_grafana_sends_it(std::string expr, const std::string& instance) {
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), kRateInterval);
  expr = std::regex_replace(expr, std::regex(R"(\$\{?instance\}?)"), instance);
  return std::regex_replace(expr, std::regex(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)"), ".*");
}

struct QueryOutcome {
  bool has_data = false;
  bool only_nan = false;  ///< data, but every value NaN (no events in the window)
  std::string problem;    ///< what Prometheus said, when it returned nothing
};

QueryOutcome instant_query(LivePrometheus& prometheus, const std::string& promql) {
  QueryOutcome out;
  const json result = prometheus.query(promql, out.problem);
  out.has_data = !result.empty();
  out.only_nan = out.has_data;
  for (const auto& series : result) out.only_nan = out.only_nan && series["value"][1] == "NaN";
  if (!out.has_data && out.problem.empty()) out.problem = "empty result";
  return out;
}

struct DataCheck {
  std::size_t missing = 0;
  std::string report;                 ///< each query without data, what was sent, and why
  std::vector<std::string> only_nan;  ///< queries whose data is all NaN
};

DataCheck check_data(LivePrometheus& prometheus, const std::vector<DashboardQuery>& queries,
                     const std::string& instance) {
  DataCheck out;
  for (const auto& q : queries) {
    const std::string promql = as_grafana_sends_it(q.expr, instance);
    const QueryOutcome r = instant_query(prometheus, promql);
    if (r.only_nan) out.only_nan.push_back("'" + q.panel + "' " + q.ref_id);
    if (r.has_data) continue;
    ++out.missing;
    out.report +=
        "  panel '" + q.panel + "' " + q.ref_id + ": " + q.expr + "\n    sent: " + promql + "\n    " + r.problem + "\n";
  }
  return out;
}

/// What Prometheus answers to a label_values(SELECTOR, LABEL) variable query,
/// asked the way Grafana asks it; an error text instead when it fails.
std::vector<std::string> variable_values(httplib::Client& api, const std::string& query, const std::string& instance,
                                         std::string& problem) {
  static const std::regex form(R"(^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$)");
  std::smatch m;
  if (!std::regex_match(query, m, form)) {
    problem = "not label_values(SELECTOR, LABEL): " + query;
    return {};
  }
  auto res = api.Get("/api/v1/label/" + m[2].str() + "/values",
                     httplib::Params{{"match[]", as_grafana_sends_it(m[1], instance)}}, httplib::Headers{});
  if (!res || res->status != 200) {
    problem = res ? "HTTP " + std::to_string(res->status) + ": " + res->body : "no answer";
    return {};
  }
  return json::parse(res->body)["data"].get<std::vector<std::string>>();
}

/// Rules whose last evaluation failed, and how many rules Prometheus loaded.
std::string unhealthy_rules(httplib::Client& api, std::size_t& loaded) {
  loaded = 0;
  auto res = api.Get("/api/v1/rules");
  if (!res || res->status != 200) return "GET /api/v1/rules failed\n";
  const json body = json::parse(res->body);
  std::string out;
  for (const auto& group : body["data"]["groups"]) {
    for (const auto& rule : group["rules"]) {
      ++loaded;
      if (rule.value("health", "") != "ok") {
        out +=
            "  " + rule.value("name", "") + ": " + rule.value("health", "") + " " + rule.value("lastError", "") + "\n";
      }
    }
  }
  return out;
}

/// The histograms whose buckets carry exemplars, as the dashboard's latency panels ask for them.
const std::vector<std::string> kExemplarHistograms = {"glassbox_autograd_backward_seconds_bucket",
                                                      "glassbox_autograd_node_seconds_bucket"};

/// The trace ids of the exemplars Prometheus stored for `selector` over the
/// last hour, the way Grafana's exemplar query asks for them.
std::vector<std::string> exemplar_trace_ids(httplib::Client& api, const std::string& selector, std::string& problem) {
  const auto now = std::chrono::system_clock::now();
  auto seconds = [](auto t) { return std::to_string(std::chrono::system_clock::to_time_t(t)); };
  auto res = api.Get("/api/v1/query_exemplars",
                     httplib::Params{{"query", selector}, {"start", seconds(now - 1h)}, {"end", seconds(now + 1min)}},
                     httplib::Headers{});
  if (!res || res->status != 200) {
    problem = res ? "HTTP " + std::to_string(res->status) + ": " + res->body : "no answer";
    return {};
  }
  std::vector<std::string> ids;
  const json body = json::parse(res->body);  // kept: a range-for over a temporary's member would dangle
  for (const auto& series : body["data"]) {
    for (const auto& e : series["exemplars"]) ids.push_back(e["labels"].value("trace_id", ""));
  }
  if (ids.empty()) problem = "Prometheus answered " + res->body.substr(0, 2000);
  return ids;
}

}  // namespace

TEST(DashboardEndToEnd, EveryDashboardExpressionReturnsDataFromTheDemo) {
  std::string why;
  ASSERT_TRUE(LivePrometheus::available(why)) << why;
  const json dashboard = glassbox::testing::read_dashboard(glassbox::testing::source_dir() /
                                                           "dashboards/grafana/dashboards/glassbox-runtime.json");
  const auto queries = glassbox::testing::dashboard_queries(dashboard);
  ASSERT_FALSE(queries.empty());

  TempDir dir("e2e");
  glassbox::testing::OtlpCollector collector;  // so the OTLP exporters' families exist too
  ChildProcess demo(
      glassbox::testing::demo_path(), {"--iterations", "0", "--device", "cpu", "--metrics-addr", "127.0.0.1:0"},
      {"GLASSBOX_TRACE_FILE=" + (dir.path / "trace.json").string(),
       "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.base_url(), "OTEL_BSP_SCHEDULE_DELAY=200",
       "OTEL_SERVICE_NAME=glassbox-dashboard-e2e", "OTEL_METRICS_EXPORTER=otlp", "OTEL_METRIC_EXPORT_INTERVAL=500"},
      (dir.path / "demo.log").string());
  const std::string target = demo.wait_for_log(std::regex(R"(http://(127\.0\.0\.1:[0-9]+)/metrics)"), 30s);
  ASSERT_FALSE(target.empty()) << "the demo printed no /metrics URL:\n" << demo.log();

  write_prometheus_config(dir.path, {target}, kScrapeInterval);
  LivePrometheus prometheus(dir.path);
  httplib::Client& api = prometheus.api();

  // Poll until every expression has data; the demo's parts come up over time.
  DataCheck data;
  for (auto deadline = std::chrono::steady_clock::now() + kDataDeadline;;) {
    data = check_data(prometheus, queries, target);
    if (data.missing == 0 || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(1s);  // one scrape
  }
  EXPECT_EQ(data.missing, 0u) << data.missing << " of " << queries.size()
                              << " dashboard expressions returned no data after " << kDataDeadline.count() << " s:\n"
                              << data.report << "demo log (end):\n"
                              << log_tail(demo.log());
  if (!data.only_nan.empty()) {
    std::string list;
    for (const auto& q : data.only_nan) list += " " + q;
    std::printf("note: NaN only (no events in the last %s):%s\n", kRateInterval, list.c_str());
  }

  // The variables' drop-downs fill from the same Prometheus, the demo among them.
  for (const auto& v : glassbox::testing::dashboard_query_variables(dashboard)) {
    std::string problem;
    const auto values = variable_values(api, v.query, target, problem);
    EXPECT_FALSE(values.empty()) << "variable $" << v.name << " (" << v.query << ") has no values " << problem;
    if (v.name == "instance") {
      EXPECT_NE(std::find(values.begin(), values.end(), target), values.end()) << "$instance does not offer " << target;
    }
  }

  std::size_t rules = 0;
  const std::string bad_rules = unhealthy_rules(api, rules);
  EXPECT_GE(rules, 4u) << "alerts.yml was not loaded:\n" << prometheus.process().log();
  EXPECT_EQ(bad_rules, "") << "alert rules failed to evaluate against live data:\n" << bad_rules;

  // Exemplars: Prometheus negotiated OpenMetrics and stored the buckets'
  // exemplars; every trace id among them is a trace in the demo's trace file
  // (read once the demo has stopped and flushed it), which is what a click on
  // an exemplar in Grafana opens in Jaeger.
  std::map<std::string, std::vector<std::string>> exemplars;
  for (const auto& selector : kExemplarHistograms) {
    std::string problem;
    exemplars[selector] = exemplar_trace_ids(api, selector, problem);
    EXPECT_FALSE(exemplars[selector].empty()) << "no exemplars stored for " << selector << " " << problem;
  }
  const auto demo_pid = static_cast<std::uint64_t>(demo.pid());
  demo.signal(SIGINT);
  EXPECT_EQ(demo.wait(30s), 0) << "the demo did not stop cleanly on SIGINT:\n" << log_tail(demo.log());
  const auto trace = glassbox::testing::read_trace_file((dir.path / "trace.json").string(), demo_pid);
  std::set<std::string> traces;
  for (const auto& slice : trace.slices) traces.insert(slice.args.value("trace_id", ""));
  for (const auto& [selector, ids] : exemplars) {
    for (const auto& id : ids)
      EXPECT_TRUE(traces.contains(id)) << selector << " exemplar trace " << id << " is not in the trace file";
  }
  prometheus.process().signal(SIGTERM);
  EXPECT_EQ(prometheus.process().wait(30s), 0) << "Prometheus did not stop cleanly on SIGTERM:\n"
                                               << log_tail(prometheus.process().log());
}
