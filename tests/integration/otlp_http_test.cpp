// OTLP/HTTP end to end: spans made through the Span API, batched, POSTed by
// libcurl to a real HTTP server in this process, and checked there field by
// field; then a collector that is down, slow, throttling (429 + Retry-After)
// or failing (500): the caller never waits, drops are counted, retries are
// seen, and shutdown keeps to its deadline. The metric exporter through the
// same sender: every family as OTLP metrics, pushed every interval, and the
// same failures counted as points dropped.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "glassbox/exporters/otlp_http_exporter.hpp"
#include "glassbox/exporters/otlp_metric_exporter.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#include "metric_value.hpp"
#include "otlp_collector.hpp"

namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
namespace gm = glassbox::metrics;
using glassbox::testing::answer;
using glassbox::testing::CollectorAnswer;
using glassbox::testing::hanging;
using glassbox::testing::metric_value;
using glassbox::testing::OtlpCollector;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A loopback port nothing listens on: bound, then closed.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

gt::SpanData data(const std::string& name) {
  gt::SpanData s;
  s.name = name;
  s.context = {gt::TraceId::random(), gt::SpanId::random(), true, false};
  s.start_unix_ns = 1'700'000'000'000'000'000ULL;
  s.end_unix_ns = s.start_unix_ns + 1000;
  return s;
}

// The attribute list of an OTLP object as key -> AnyValue.
std::map<std::string, json> attributes(const json& owner) {
  std::map<std::string, json> out;
  for (const auto& kv : owner.at("attributes")) out[kv.at("key").get<std::string>()] = kv.at("value");
  return out;
}

class OtlpHttpTest : public ::testing::Test {
 protected:
  void TearDown() override {
    gt::set_span_processor(nullptr);
    gt::set_sampler(nullptr);
  }
  ge::OtlpHttpOptions options(const std::string& url) {
    ge::OtlpHttpOptions o;
    o.url = url;
    o.timeout = 2s;
    o.retry.initial_backoff = 10ms;
    o.retry.max_backoff = 40ms;
    o.registry = &registry;
    return o;
  }
  ge::BatchOptions batch(std::chrono::milliseconds export_timeout = 10s) {
    ge::BatchOptions b;
    b.schedule_delay = 1h;  // batches leave on force_flush or shutdown only
    b.export_timeout = export_timeout;
    b.registry = &registry;
    return b;
  }
  double exported() { return metric_value(registry, "glassbox_spans_exported_total", {{"exporter", "otlp"}}); }
  double dropped(const char* reason) {
    return metric_value(registry, "glassbox_spans_dropped_total", {{"exporter", "otlp"}, {"reason", reason}});
  }
  double retries() { return metric_value(registry, "glassbox_otlp_export_retries_total"); }
  void end_spans(gt::SpanProcessor& p, int n) {
    for (int i = 0; i < n; ++i) p.on_end(data("s" + std::to_string(i)));
  }

  gm::Registry registry;
};

}  // namespace

TEST_F(OtlpHttpTest, DeliversSpansAsOtlpJsonFieldByField) {
  OtlpCollector collector;
  auto o = options(collector.traces_url());
  o.headers = {{"authorization", "Bearer t0ken"}, {"x-tenant", "gpu team"}};
  o.resource = ge::Resource::make("trainer", "deployment.environment=ci,team=gpu%20runtime");
  auto processor = ge::make_otlp_processor(o, batch());
  gt::set_sampler(gt::always_on());
  gt::set_span_processor(processor);
  std::string parent_id, child_id, trace_id;
  {
    gt::Span step("train_step", gt::SpanKind::server);
    step.set_attribute("glassbox.device", 3).set_attribute("glassbox.library", "cudnn");
    step.set_attribute("ok", true).set_attribute("ratio", 0.25);
    trace_id = step.context().trace_id.hex();
    parent_id = step.context().span_id.hex();
    gt::SpanContext handed = gt::current_context();
    std::thread([&, handed] {
      gt::ContextScope scope(handed);
      gt::Span node("node");
      node.set_status(gt::StatusCode::error, "out of memory");
      child_id = node.context().span_id.hex();
    }).join();
  }
  ASSERT_TRUE(processor->force_flush(10s));
  ASSERT_EQ(collector.requests().size(), 1u);
  auto req = collector.requests().front();

  EXPECT_EQ(req.path, "/v1/traces");
  EXPECT_EQ(req.headers.find("Content-Type")->second, "application/json");
  EXPECT_EQ(req.headers.find("authorization")->second, "Bearer t0ken");
  EXPECT_EQ(req.headers.find("x-tenant")->second, "gpu team");
  json body = json::parse(req.body);
  ASSERT_EQ(body.size(), 1u);
  ASSERT_EQ(body.at("resourceSpans").size(), 1u);
  const json& rs = body["resourceSpans"][0];
  auto resource = attributes(rs.at("resource"));
  EXPECT_EQ(resource.at("service.name"), json({{"stringValue", "trainer"}}));
  EXPECT_EQ(resource.at("deployment.environment"), json({{"stringValue", "ci"}}));
  EXPECT_EQ(resource.at("team"), json({{"stringValue", "gpu runtime"}}));
  EXPECT_EQ(resource.at("telemetry.sdk.name"), json({{"stringValue", "glassbox"}}));
  EXPECT_EQ(resource.at("telemetry.sdk.language"), json({{"stringValue", "cpp"}}));
  EXPECT_EQ(resource.at("telemetry.sdk.version"), json({{"stringValue", std::string(ge::glassbox_version())}}));

  ASSERT_EQ(rs.at("scopeSpans").size(), 1u);
  const json& ss = rs["scopeSpans"][0];
  EXPECT_EQ(ss.at("scope"), json({{"name", "glassbox"}, {"version", std::string(ge::glassbox_version())}}));
  ASSERT_EQ(ss.at("spans").size(), 2u);
  const json& node = ss["spans"][0];  // ended first
  const json& step = ss["spans"][1];

  EXPECT_EQ(step.at("name"), "train_step");
  EXPECT_EQ(step.at("traceId"), trace_id);
  EXPECT_EQ(step.at("spanId"), parent_id);
  EXPECT_FALSE(step.contains("parentSpanId"));
  EXPECT_EQ(step.at("kind"), 2);  // SPAN_KIND_SERVER, as an integer
  EXPECT_FALSE(step.contains("status"));
  auto sa = attributes(step);
  EXPECT_EQ(sa.at("glassbox.device"), json({{"intValue", "3"}}));  // int64 as a decimal string
  EXPECT_EQ(sa.at("glassbox.library"), json({{"stringValue", "cudnn"}}));
  EXPECT_EQ(sa.at("ok"), json({{"boolValue", true}}));
  EXPECT_EQ(sa.at("ratio"), json({{"doubleValue", 0.25}}));

  EXPECT_EQ(node.at("name"), "node");
  EXPECT_EQ(node.at("traceId"), trace_id);
  EXPECT_EQ(node.at("spanId"), child_id);
  EXPECT_EQ(node.at("parentSpanId"), parent_id);
  EXPECT_EQ(node.at("kind"), 1);  // SPAN_KIND_INTERNAL
  EXPECT_EQ(node.at("status"), json({{"code", 2}, {"message", "out of memory"}}));
  EXPECT_FALSE(node.contains("attributes"));

  const std::regex digits("[0-9]{19}");
  for (const json* s : {&step, &node}) {
    EXPECT_TRUE(std::regex_match(s->at("traceId").get<std::string>(), std::regex("[0-9a-f]{32}")));
    EXPECT_TRUE(std::regex_match(s->at("spanId").get<std::string>(), std::regex("[0-9a-f]{16}")));
    std::string start = s->at("startTimeUnixNano"), end = s->at("endTimeUnixNano");
    EXPECT_TRUE(std::regex_match(start, digits)) << start;
    EXPECT_LE(std::stoull(start), std::stoull(end));
  }
  EXPECT_LE(std::stoull(step["startTimeUnixNano"].get<std::string>()),
            std::stoull(node["startTimeUnixNano"].get<std::string>()));
  EXPECT_EQ(exported(), 2);
}

TEST_F(OtlpHttpTest, GzipBodiesAreDecodedByTheServer) {
  OtlpCollector collector;
  auto o = options(collector.traces_url());
  o.gzip = true;
  auto p = ge::make_otlp_processor(o, batch());
  end_spans(*p, 50);
  ASSERT_TRUE(p->force_flush(10s));
  auto req = collector.requests().at(0);
  EXPECT_EQ(req.headers.find("Content-Encoding")->second, "gzip");
  EXPECT_EQ(json::parse(req.body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size(), 50u);
}

TEST_F(OtlpHttpTest, A503IsRetriedWithTheSameBody) {
  OtlpCollector collector([](std::size_t n) { return answer(n == 0 ? 503 : 200); });
  auto p = ge::make_otlp_processor(options(collector.traces_url()), batch());
  end_spans(*p, 7);
  ASSERT_TRUE(p->force_flush(10s));
  auto reqs = collector.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].body, reqs[1].body);
  EXPECT_EQ(exported(), 7);
  EXPECT_EQ(retries(), 1);
}

TEST_F(OtlpHttpTest, A429WaitsAsLongAsRetryAfterSays) {
  OtlpCollector collector([](std::size_t n) {
    CollectorAnswer a = answer(n == 0 ? 429 : 200);
    if (n == 0) a.headers.emplace("Retry-After", "1");
    return a;
  });
  auto p = ge::make_otlp_processor(options(collector.traces_url()), batch());  // backoff alone would be 10 ms
  end_spans(*p, 3);
  ASSERT_TRUE(p->force_flush(10s));
  auto reqs = collector.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_GE(reqs[1].at - reqs[0].at, 950ms);
  EXPECT_EQ(exported(), 3);
  EXPECT_EQ(retries(), 1);
}

TEST_F(OtlpHttpTest, RetryAfterMayBeAnHttpDate) {
  std::time_t when = std::time(nullptr) + 2;  // whole seconds: the wait is between 1 and 2 s
  std::tm utc{};
  ::gmtime_r(&when, &utc);
  char date[64];
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &utc);
  OtlpCollector collector([&](std::size_t n) {
    CollectorAnswer a = answer(n == 0 ? 503 : 200);
    if (n == 0) a.headers.emplace("Retry-After", date);
    return a;
  });
  auto p = ge::make_otlp_processor(options(collector.traces_url()), batch());
  end_spans(*p, 2);
  ASSERT_TRUE(p->force_flush(10s));
  auto reqs = collector.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_GE(reqs[1].at - reqs[0].at, 900ms);
  EXPECT_EQ(exported(), 2);
}

TEST_F(OtlpHttpTest, ARetryAfterBeyondTheDeadlineGivesUpAtOnce) {
  OtlpCollector collector([](std::size_t) {
    CollectorAnswer a = answer(503);
    a.headers.emplace("Retry-After", "120");
    return a;
  });
  auto p = ge::make_otlp_processor(options(collector.traces_url()), batch(2s));
  end_spans(*p, 4);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->force_flush(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(collector.requests().size(), 1u);
  EXPECT_EQ(dropped("export_failed"), 4);
}

TEST_F(OtlpHttpTest, OtherErrorStatusesAreNotRetriedAndCountAsRejected) {
  for (int status : {400, 404, 413, 500}) {
    OtlpCollector collector([status](std::size_t) { return answer(status); });
    auto p = ge::make_otlp_processor(options(collector.traces_url()), batch());
    end_spans(*p, 5);
    ASSERT_TRUE(p->force_flush(10s));
    EXPECT_EQ(collector.requests().size(), 1u) << status;
  }
  EXPECT_EQ(dropped("rejected"), 20);
  EXPECT_EQ(retries(), 0);
  EXPECT_EQ(exported(), 0);
}

TEST_F(OtlpHttpTest, APartialSuccessCountsTheSpansItRejects) {
  OtlpCollector collector(
      [](std::size_t) { return answer(200, R"({"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}})"); });
  auto p = ge::make_otlp_processor(options(collector.traces_url()), batch());
  end_spans(*p, 6);
  ASSERT_TRUE(p->force_flush(10s));
  EXPECT_EQ(exported(), 4);
  EXPECT_EQ(dropped("rejected"), 2);
  EXPECT_EQ(retries(), 0);
}

TEST_F(OtlpHttpTest, ACollectorThatIsDownCostsTheCallerNothingAndIsCounted) {
  auto o = options("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces");
  o.retry.max_attempts = 3;
  auto p = ge::make_otlp_processor(o, batch());
  auto start = std::chrono::steady_clock::now();
  end_spans(*p, 500);  // under one batch, so one export
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms) << "ending spans waited on the network";
  ASSERT_TRUE(p->force_flush(10s));
  EXPECT_EQ(dropped("export_failed"), 500);
  EXPECT_EQ(retries(), 2);  // three attempts
}

TEST_F(OtlpHttpTest, ASlowCollectorTimesOutAndIsRetried) {
  OtlpCollector collector([](std::size_t) { return hanging(); });
  auto o = options(collector.traces_url());
  o.timeout = 100ms;
  o.retry.max_attempts = 2;
  auto p = ge::make_otlp_processor(o, batch());
  end_spans(*p, 5);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->force_flush(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(collector.requests().size(), 2u);
  EXPECT_EQ(dropped("export_failed"), 5);
  EXPECT_EQ(retries(), 1);
}

TEST_F(OtlpHttpTest, ShutdownKeepsItsDeadlineWhileARequestHangs) {
  OtlpCollector collector([](std::size_t) { return hanging(); });
  auto o = options(collector.traces_url());
  o.timeout = 30s;
  auto p = ge::make_otlp_processor(o, batch(30s));
  end_spans(*p, 5);
  p->force_flush(0ms);  // starts the export without waiting for it
  ASSERT_TRUE(collector.wait_for_requests(1));
  end_spans(*p, 3);
  auto start = std::chrono::steady_clock::now();
  p->shutdown(200ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 1s);
  EXPECT_EQ(dropped("shutdown"), 8);
}

TEST_F(OtlpHttpTest, ShutdownInterruptsABackoffWait) {
  auto o = options("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces");
  o.retry.initial_backoff = 20s;
  o.retry.max_backoff = 20s;
  auto p = ge::make_otlp_processor(o, batch(60s));
  end_spans(*p, 2);
  p->force_flush(200ms);  // the export is now waiting out its backoff
  auto start = std::chrono::steady_clock::now();
  p->shutdown(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(dropped("shutdown"), 2);
}

// A collector that fails in every way it can, on a fixed schedule: retryable
// answers (503, 429), a rejection (400), requests that hang past the client's
// timeout, and successes. The collector's own record is the ground truth:
// every span it accepted is counted as exported, and every other span is
// counted as dropped with a reason; the process goes on to deliver later spans.
TEST_F(OtlpHttpTest, UnderEveryKindOfCollectorFailureEachSpanIsDeliveredOrCountedWithItsReason) {
  static constexpr std::array<int, 10> kSchedule = {200, 503, 200, 400, 0, 200, 429, 503, 503, 200};  // 0: hang
  auto status_of = [](std::size_t n) { return n < 30 ? kSchedule[n % kSchedule.size()] : 200; };
  OtlpCollector collector([&](std::size_t n) { return status_of(n) == 0 ? hanging() : answer(status_of(n)); });
  auto o = options(collector.traces_url());
  o.timeout = 1s;  // long enough that only the hanging requests time out on a loaded machine
  o.retry.max_attempts = 3;
  auto b = batch();
  b.max_export_batch_size = 40;
  auto p = ge::make_otlp_processor(o, b);
  constexpr int kRounds = 25, kSpansPerRound = 40;
  for (int round = 0; round < kRounds; ++round) {
    end_spans(*p, kSpansPerRound);
    ASSERT_TRUE(p->force_flush(20s)) << "round " << round;
  }
  std::size_t accepted = 0;
  auto requests = collector.requests();
  for (std::size_t n = 0; n < requests.size(); ++n) {
    if (status_of(n) != 200) continue;
    json body = json::parse(requests[n].body);
    for (const auto& rs : body.at("resourceSpans")) {
      for (const auto& ss : rs.at("scopeSpans")) accepted += ss.at("spans").size();
    }
  }
  EXPECT_EQ(exported(), static_cast<double>(accepted));
  EXPECT_GT(dropped("rejected"), 0);
  EXPECT_GT(dropped("export_failed"), 0);  // 503 three times in a row
  EXPECT_EQ(exported() + dropped("rejected") + dropped("export_failed") + dropped("queue_full"),
            kRounds * kSpansPerRound);
  EXPECT_GT(retries(), 0);
  EXPECT_EQ(status_of(requests.size() - 1), 200) << "the last batch should have found the collector healthy";
}

namespace {

class OtlpMetricsTest : public ::testing::Test {
 protected:
  OtlpMetricsTest() {
    registry.counter("glassbox_test_requests_total", "Requests", {"bucket"}).with({"12"}).inc(3);
    registry.gauge("glassbox_test_reserved_bytes", "Reserved").with().set(8192);
    auto& h = registry.histogram("glassbox_test_seconds", "Latency", {}, {0.001, 0.004});
    h.with().observe(0.002);
    h.with().observe(1.0);
  }
  ge::OtlpMetricOptions options(const std::string& url) {
    ge::OtlpMetricOptions o;
    o.http.url = url;
    o.http.timeout = 2s;
    o.http.retry.initial_backoff = 10ms;
    o.http.retry.max_backoff = 40ms;
    o.http.registry = &registry;
    o.http.resource = ge::Resource::make("fleet-svc", "service.instance.id=node-7,deployment.environment=test");
    o.interval = 1h;  // exports leave on force_flush or shutdown only
    o.export_timeout = 10s;
    return o;
  }
  double exported() { return metric_value(registry, "glassbox_metric_points_exported_total", {{"exporter", "otlp"}}); }
  double dropped(const char* reason) {
    return metric_value(registry, "glassbox_metric_points_dropped_total", {{"exporter", "otlp"}, {"reason", reason}});
  }
  double retries() { return metric_value(registry, "glassbox_otlp_export_retries_total", {{"signal", "metrics"}}); }

  gm::Registry registry;
};

// name -> the metric object, over every scopeMetrics of a request body.
std::map<std::string, json> metrics_of(const json& body) {
  std::map<std::string, json> out;
  for (const auto& rm : body.at("resourceMetrics")) {
    for (const auto& sm : rm.at("scopeMetrics")) {
      for (const auto& m : sm.at("metrics")) out[m.at("name").get<std::string>()] = m;
    }
  }
  return out;
}

std::size_t points_of(const json& body) {
  std::size_t n = 0;
  for (const auto& [name, m] : metrics_of(body)) {
    for (const char* kind : {"sum", "gauge", "histogram"}) {
      if (m.contains(kind)) n += m.at(kind).at("dataPoints").size();
    }
  }
  return n;
}

}  // namespace

TEST_F(OtlpMetricsTest, DeliversEveryFamilyAsCumulativeOtlpMetricsWithTheTracesResource) {
  OtlpCollector collector;
  ge::OtlpMetricExporter exporter(options(collector.metrics_url()));
  ASSERT_TRUE(exporter.force_flush(10s));
  auto requests = collector.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/metrics");
  json body = json::parse(requests[0].body);
  auto resource = attributes(body.at("resourceMetrics")[0].at("resource"));
  EXPECT_EQ(resource["service.name"]["stringValue"], "fleet-svc");
  EXPECT_EQ(resource["service.instance.id"]["stringValue"], "node-7");
  EXPECT_EQ(resource["deployment.environment"]["stringValue"], "test");

  auto metrics = metrics_of(body);
  const json& counter = metrics.at("glassbox_test_requests_total");
  EXPECT_EQ(counter.at("description"), "Requests");
  EXPECT_EQ(counter.at("sum").at("isMonotonic"), true);
  EXPECT_EQ(counter.at("sum").at("aggregationTemporality"), 2);  // cumulative
  const json& point = counter.at("sum").at("dataPoints")[0];
  EXPECT_EQ(point.at("asDouble"), 3.0);
  EXPECT_EQ(attributes(point)["bucket"]["stringValue"], "12");
  EXPECT_LT(std::stoull(point.at("startTimeUnixNano").get<std::string>()),
            std::stoull(point.at("timeUnixNano").get<std::string>()));

  EXPECT_EQ(metrics.at("glassbox_test_reserved_bytes").at("gauge").at("dataPoints")[0].at("asDouble"), 8192.0);
  const json& h = metrics.at("glassbox_test_seconds").at("histogram");
  EXPECT_EQ(h.at("aggregationTemporality"), 2);
  EXPECT_EQ(h.at("dataPoints")[0].at("explicitBounds"), json::parse("[0.001, 0.004]"));
  EXPECT_EQ(h.at("dataPoints")[0].at("bucketCounts"), json::parse(R"(["0", "1", "1"])"));
  EXPECT_EQ(h.at("dataPoints")[0].at("count"), "2");
  EXPECT_EQ(exported(), static_cast<double>(points_of(body)));
}

TEST_F(OtlpMetricsTest, PushesEveryIntervalWithHeadersAndGzip) {
  OtlpCollector collector;
  auto o = options(collector.metrics_url());
  o.interval = 100ms;
  o.http.gzip = true;
  o.http.headers = {{"x-tenant", "fleet"}};
  ge::OtlpMetricExporter exporter(o);
  ASSERT_TRUE(collector.wait_for_requests(3, 10s));
  for (const auto& r : collector.requests()) {
    EXPECT_EQ(r.headers.find("Content-Encoding")->second, "gzip");
    EXPECT_EQ(r.headers.find("x-tenant")->second, "fleet");
    EXPECT_TRUE(json::parse(r.body).contains("resourceMetrics"));  // httplib undid the gzip
  }
}

TEST_F(OtlpMetricsTest, ACollectorThatIsDownIsCountedAndRetried) {
  auto o = options("http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/metrics");
  o.http.retry.max_attempts = 3;
  ge::OtlpMetricExporter exporter(o);
  ASSERT_TRUE(exporter.force_flush(10s));
  EXPECT_EQ(exported(), 0);
  EXPECT_GT(dropped("export_failed"), 0);
  EXPECT_EQ(retries(), 2);  // three attempts
}

TEST_F(OtlpMetricsTest, RejectionsAndPartialSuccessesCountThePointsTheyName) {
  OtlpCollector collector([](std::size_t n) {
    return n == 0 ? answer(400) : answer(200, R"({"partialSuccess":{"rejectedDataPoints":"2"}})");
  });
  ge::OtlpMetricExporter exporter(options(collector.metrics_url()));
  ASSERT_TRUE(exporter.force_flush(10s));
  const double first = dropped("rejected");
  EXPECT_EQ(first, static_cast<double>(points_of(json::parse(collector.requests()[0].body))));
  ASSERT_TRUE(exporter.force_flush(10s));
  EXPECT_EQ(dropped("rejected"), first + 2);
  EXPECT_EQ(exported(), static_cast<double>(points_of(json::parse(collector.requests()[1].body)) - 2));
}

TEST_F(OtlpMetricsTest, AHangingCollectorBlocksNothingAndShutdownKeepsItsDeadline) {
  OtlpCollector collector([](std::size_t) { return hanging(); });
  auto o = options(collector.metrics_url());
  o.http.timeout = 30s;
  o.export_timeout = 30s;
  ge::OtlpMetricExporter exporter(o);
  exporter.force_flush(0ms);  // starts an export without waiting for it
  ASSERT_TRUE(collector.wait_for_requests(1));
  // Updates and scrapes go on while the export hangs: nothing waits for it.
  auto start = std::chrono::steady_clock::now();
  auto requests = registry.counter("glassbox_test_requests_total", "Requests", {"bucket"}).with({"12"});
  for (int i = 0; i < 1000; ++i) requests.inc();
  EXPECT_EQ(metric_value(registry, "glassbox_test_requests_total", {{"bucket", "12"}}), 1003);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  start = std::chrono::steady_clock::now();
  exporter.shutdown(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_GT(dropped("shutdown"), 0);
}
