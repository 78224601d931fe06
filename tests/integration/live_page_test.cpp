// The live page at / of the metrics port, over HTTP: what is served, that it
// fetches nothing from the network, that it is as guarded as /metrics, and
// that GLASSBOX_METRICS_UI=false turns it off. tests/browser/ runs it in
// Chromium.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <regex>

#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
#include "metric_families.hpp"
#include "scoped_env.hpp"

namespace ge = glassbox::exporters;
namespace gm = glassbox::metrics;
using glassbox::testing::ScopedEnv;

namespace {

httplib::Result get(const ge::PrometheusExporter& exporter, const std::string& path,
                    const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", exporter.port());
  auto res = client.Get(path, headers);
  if (!res) throw std::runtime_error("GET " + path + " failed: " + httplib::to_string(res.error()));
  return res;
}

}  // namespace

TEST(LivePage, SlashServesOneSelfContainedHtmlPageUnder200KB) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  EXPECT_EQ(exporter.page_url(), "http://127.0.0.1:" + std::to_string(exporter.port()) + "/");
  auto res = get(exporter, "/?interval=500");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  const std::string& page = res->body;
  EXPECT_LT(page.size(), 200u * 1024) << "the page's budget is 200 KB";
  EXPECT_TRUE(page.starts_with("<!doctype html>"));
  // The stylesheet and the script were inlined at build time, not linked.
  EXPECT_NE(page.find("<style>"), std::string::npos);
  EXPECT_NE(page.find("fetch('metrics'"), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=|@import|url\()"))) << "the page links a resource";
  // The browser enforces it too: nothing but this origin may be reached.
  const std::string policy = res->get_header_value("Content-Security-Policy");
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("connect-src 'self'"), std::string::npos) << policy;
}

// Each chart reads a family the libraries register, with the type its
// reading needs: a gauge as is, a counter as a rate or ratio, a histogram as
// a quantile. A renamed family cannot leave a chart silently empty.
TEST(LivePage, EveryFamilyItDrawsIsRegisteredWithTheTypeItReadsItAs) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  const std::string page = get(exporter, "/")->body;
  const auto& families = glassbox::testing::families_in_code();
  static const std::regex use(R"re(\b(gauge|rate|quantile)\((?:'[^']*'|[0-9.]+), '(glassbox_[a-z0-9_]+)')re");
  std::map<std::string, int> read_as{{"gauge", 0}, {"rate", 0}, {"quantile", 0}};
  for (std::sregex_iterator m(page.begin(), page.end(), use), end; m != end; ++m) {
    const std::string how = (*m)[1], family = (*m)[2];
    const std::string needs = how == "gauge" ? "gauge" : how == "quantile" ? "histogram" : "counter";
    ASSERT_TRUE(families.count(family)) << family << " (read as " << how << ") is not registered by the libraries";
    EXPECT_EQ(families.at(family), needs) << family << " is read as a " << how;
    ++read_as[how];
  }
  // Pinned bytes, backlog, handles; executions, nodes, spans; lock wait, backward.
  EXPECT_EQ(read_as["gauge"], 6);
  EXPECT_EQ(read_as["rate"], 4);
  EXPECT_EQ(read_as["quantile"], 3);
  for (const char* counter : {"glassbox_host_alloc_cache_hits_total", "glassbox_host_alloc_requests_total"}) {
    EXPECT_NE(page.find(std::string("'") + counter + "'"), std::string::npos) << counter;
    EXPECT_EQ(families.at(counter), "counter") << counter << ": the hit ratio reads two counters";
  }
}

TEST(LivePage, IsGuardedByTheSameBasicAuthAsMetrics) {
  gm::Registry registry;
  ge::PrometheusOptions o("127.0.0.1:0", &registry);
  o.basic_auth = ge::BasicAuth{"viewer", "secret"};
  ge::PrometheusExporter exporter(o);
  EXPECT_EQ(get(exporter, "/")->status, 401);
  EXPECT_EQ(get(exporter, "/", {httplib::make_basic_authentication_header("viewer", "wrong")})->status, 401);
  auto res = get(exporter, "/", {httplib::make_basic_authentication_header("viewer", "secret")});
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("<title>glassbox: live</title>"), std::string::npos);
}

TEST(LivePage, GlassboxMetricsUiFalseTurnsItOffAndAnythingElseIsRefused) {
  ScopedEnv env;
  env.set("GLASSBOX_METRICS_UI", "false");
  gm::Registry registry;
  ge::PrometheusOptions o = ge::PrometheusOptions::from_env();
  o.address = "127.0.0.1:0";
  o.registry = &registry;
  ge::PrometheusExporter exporter(o);
  EXPECT_EQ(exporter.page_url(), "");
  auto res = get(exporter, "/");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body.find("<html"), std::string::npos);
  EXPECT_EQ(get(exporter, "/metrics")->status, 200);

  env.set("GLASSBOX_METRICS_UI", "off");
  try {
    ge::PrometheusOptions::from_env();
    FAIL() << "GLASSBOX_METRICS_UI=off was accepted";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GLASSBOX_METRICS_UI"), std::string::npos) << e.what();
  }
}
