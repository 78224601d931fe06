// /metrics end to end: a real exporter on an ephemeral port, a handle-pool
// churn workload, a real HTTP scrape, the text parsed back, and promtool's
// linter run on the same scrape.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/sim/fake_handle.hpp"
#include "glassbox/trace/context.hpp"
#include "openmetrics_text.hpp"
#include "prometheus_text.hpp"
#include "run_command.hpp"

namespace gs = glassbox::sim;
namespace ge = glassbox::exporters;
namespace gm = glassbox::metrics;
using glassbox::testing::find_sample;
using glassbox::testing::parse_prometheus_text;
using Pool = glassbox::handle_pool::DeviceThreadHandlePool<gs::FakeHandleFactory>;

namespace {

std::string scrape(const ge::PrometheusExporter& exporter) {
  httplib::Client client("127.0.0.1", exporter.port());
  auto res = client.Get("/metrics");
  if (!res) throw std::runtime_error("scrape failed: " + httplib::to_string(res.error()));
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  return res->body;
}

// Rounds of `threads` fresh threads that each take a cuBLAS-like handle.
void churn(Pool& pool, int rounds, int threads) {
  for (int r = 0; r < rounds; ++r) {
    std::barrier together(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        pool.reserve(0);
        together.arrive_and_wait();
      });
    }
    for (auto& t : ts) t.join();
  }
}

}  // namespace

TEST(MetricsHttp, ScrapeShowsTheHandlePoolsMetricsWithTheRightValues) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  ASSERT_GT(exporter.port(), 0);
  auto pool = Pool::create(gs::FakeHandleFactory("cublas"), registry);
  churn(*pool, 50, 6);

  auto samples = parse_prometheus_text(scrape(exporter));
  const std::map<std::string, std::string> labels{{"library", "cublas"}, {"device", "0"}};
  auto value = [&](const char* name) {
    const auto* s = find_sample(samples, name, labels);
    EXPECT_NE(s, nullptr) << name << " missing from the scrape";
    return s ? s->value : -1;
  };
  EXPECT_EQ(value("glassbox_handles_created_total"), 6);
  EXPECT_EQ(value("glassbox_handles_high_water_mark"), 6);
  EXPECT_EQ(value("glassbox_handles_in_use"), 0);
  EXPECT_EQ(value("glassbox_handles_available"), 6);
  EXPECT_EQ(value("glassbox_handle_create_seconds_count"), 6);
  const auto* inf = find_sample(samples, "glassbox_handle_create_seconds_bucket",
                                {{"library", "cublas"}, {"device", "0"}, {"le", "+Inf"}});
  ASSERT_NE(inf, nullptr);
  EXPECT_EQ(inf->value, 6);
}

TEST(MetricsHttp, ScrapeSeesLiveValuesWhileThreadsHoldHandles) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  auto pool = Pool::create(gs::FakeHandleFactory("cudnn"), registry);
  std::barrier hold(4), release(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&] {
      pool->reserve(0);
      hold.arrive_and_wait();
      release.arrive_and_wait();
    });
  }
  hold.arrive_and_wait();
  auto samples = parse_prometheus_text(scrape(exporter));
  release.arrive_and_wait();
  for (auto& t : ts) t.join();
  const auto* in_use = find_sample(samples, "glassbox_handles_in_use", {{"library", "cudnn"}});
  ASSERT_NE(in_use, nullptr);
  EXPECT_EQ(in_use->value, 3);
}

TEST(MetricsHttp, PromtoolLintsTheScrapeCleanly) {
  const std::string promtool = GLASSBOX_PROMTOOL;
  ASSERT_FALSE(promtool.empty() || promtool.ends_with("NOTFOUND"))
      << "promtool not found at configure time; run scripts/install-deps (Debian package 'prometheus')";
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  auto pool = Pool::create(gs::FakeHandleFactory("cublaslt"), registry);
  churn(*pool, 5, 3);
  auto path = std::filesystem::temp_directory_path() / ("glassbox-scrape-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << scrape(exporter);
  auto r = glassbox::testing::run_command(promtool + " check metrics < " + path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "") << "promtool lint complaints:\n" << r.output;
}

// Scrapes on one kept-alive connection, as Prometheus makes them. With Nagle's
// algorithm on, an answer written in more than one piece waited for the
// client's delayed ACK: 40 ms a scrape at worst. The server sets TCP_NODELAY;
// with it off, today's single-piece answers still take about 0.07 ms here, so
// this guards the pair, not the option alone.
TEST(MetricsHttp, KeptAliveScrapesDoNotWaitForDelayedAcks) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  auto pool = Pool::create(gs::FakeHandleFactory("cublas"), registry);
  churn(*pool, 1, 2);
  httplib::Client client("127.0.0.1", exporter.port());
  client.set_keep_alive(true);
  // The median, not the total: a loaded machine (sanitizers, parallel tests)
  // stalls a few scrapes, while a delayed ACK stalls most of them.
  std::vector<std::chrono::steady_clock::duration> took;
  for (int i = 0; i < 30; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto res = client.Get("/metrics");
    took.push_back(std::chrono::steady_clock::now() - start);
    ASSERT_TRUE(res && res->status == 200);
  }
  std::nth_element(took.begin(), took.begin() + 15, took.end());
  EXPECT_LT(took[15], std::chrono::milliseconds(20));
}

// Prometheus sends Accept-Encoding: gzip; a scrape shrinks several times on the wire.
TEST(MetricsHttp, ScrapesAreGzippedWhenTheClientAsks) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  auto pool = Pool::create(gs::FakeHandleFactory("cublas"), registry);
  churn(*pool, 1, 2);
  httplib::Client client("127.0.0.1", exporter.port());  // it inflates what it gets
  auto gzipped = client.Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gzipped && gzipped->status == 200);
  EXPECT_EQ(gzipped->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gzipped->get_header_value("Vary"), "Accept, Accept-Encoding");
  EXPECT_NE(gzipped->body.find("glassbox_handles_created_total"), std::string::npos);
  for (const char* refused : {"gzip;q=0", "identity", "br"}) {
    auto plain = client.Get("/metrics", {{"Accept-Encoding", refused}});
    ASSERT_TRUE(plain && plain->status == 200);
    EXPECT_EQ(plain->get_header_value("Content-Encoding"), "") << refused;
    EXPECT_NE(plain->body.find("glassbox_handles_created_total"), std::string::npos) << refused;
  }
}

// What Prometheus (2.42, exemplar storage on) sends, word for word.
constexpr const char* kPrometheusAccept =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

// Handles created inside a sampled span: the creation-time histogram's
// bucket carries that span as its exemplar in OpenMetrics, and the 0.0.4
// text, for everyone else, has the same series without it.
TEST(MetricsHttp, OpenMetricsIsNegotiatedAndItsBucketsCarryTheSampledSpan) {
  gm::Registry registry;
  ge::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  auto pool = Pool::create(gs::FakeHandleFactory("cublas"), registry);
  glassbox::trace::SpanContext span;
  span.trace_id.bytes.fill(0x4b);
  span.span_id.bytes.fill(0x0f);
  span.sampled = true;
  {
    glassbox::trace::ContextScope scope(span);
    pool->reserve(0);
  }
  httplib::Client client("127.0.0.1", exporter.port());
  auto om = client.Get("/metrics", {{"Accept", kPrometheusAccept}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(om && om->status == 200);
  EXPECT_EQ(om->get_header_value("Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  auto text = glassbox::testing::parse_openmetrics(om->body);
  std::set<std::string> om_buckets;
  std::string exemplar_trace;
  for (const auto& s : text.samples) {
    if (s.name != "glassbox_handle_create_seconds_bucket") continue;
    om_buckets.insert(s.labels.back().second);
    if (s.exemplar) exemplar_trace = s.exemplar->labels[0].second;
  }
  EXPECT_EQ(exemplar_trace, span.trace_id.hex());
  const glassbox::testing::OmSample* created = &text.samples[0];
  for (const auto& s : text.samples)
    if (s.name == "glassbox_handles_created_total") created = &s;
  EXPECT_EQ(created->family, "glassbox_handles_created") << "OpenMetrics names a counter without _total";

  std::set<std::string> text_buckets;
  for (const auto& s : parse_prometheus_text(scrape(exporter))) {
    if (s.name == "glassbox_handle_create_seconds_bucket") text_buckets.insert(s.labels.at("le"));
  }
  EXPECT_EQ(om_buckets, text_buckets) << "a bucket's le must be the same string in both formats";
}

TEST(MetricsHttp, BadAddressesAreClearErrors) {
  for (const char* bad : {"localhost", "127.0.0.1:99999", ":9464", "1.2.3.4:port"}) {
    try {
      ge::validate_listen_address(bad, "GLASSBOX_METRICS_ADDR");
      FAIL() << bad;
    } catch (const glassbox::ConfigError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(std::string("GLASSBOX_METRICS_ADDR='") + bad + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("HOST:PORT"), std::string::npos) << m;
    }
  }
  EXPECT_NO_THROW(ge::validate_listen_address("[::1]:0", "x"));
  ::setenv("GLASSBOX_METRICS_ADDR", "nope", 1);
  EXPECT_THROW(ge::PrometheusOptions::from_env(), glassbox::ConfigError);
  ::setenv("GLASSBOX_METRICS_ADDR", "127.0.0.1:19464", 1);
  EXPECT_EQ(ge::PrometheusOptions::from_env().address, "127.0.0.1:19464");
  ::unsetenv("GLASSBOX_METRICS_ADDR");
  EXPECT_EQ(ge::PrometheusOptions::from_env().address, "127.0.0.1:9464");
}

TEST(MetricsHttp, APortInUseIsAClearError) {
  gm::Registry registry;
  ge::PrometheusExporter first({"127.0.0.1:0", &registry});
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    ge::PrometheusExporter second({taken, &registry});
    FAIL() << "second exporter bound the same port";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on " + taken), std::string::npos) << e.what();
  }
}
