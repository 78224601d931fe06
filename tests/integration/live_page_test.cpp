// The live page at / of the metrics port, over HTTP: what is served, that it
// fetches nothing from the network, that it is as guarded as /metrics, and
// that GLASSBOX_METRICS_UI=false turns it off. tests/browser/ runs it in
// Chromium.
#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>

#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
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

TEST(LivePage, TheMetricFamiliesItDrawsAreTheOnesTheLibrariesRegister) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  const std::string page = get(exporter, "/")->body;
  for (const char* family :
       {"glassbox_host_memory_reserved_bytes", "glassbox_host_memory_active_bytes", "glassbox_host_memory_cached_bytes",
        "glassbox_host_alloc_cache_hits_total", "glassbox_host_alloc_requests_total", "glassbox_host_pending_events",
        "glassbox_handles_in_use", "glassbox_handles_high_water_mark", "glassbox_cudnn_state_executions_total",
        "glassbox_cudnn_state_wait_seconds", "glassbox_autograd_backward_seconds",
        "glassbox_autograd_nodes_executed_total", "glassbox_spans_exported_total", "glassbox_spans_dropped_total"}) {
    EXPECT_NE(page.find(std::string("'") + family + "'"), std::string::npos) << family;
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
