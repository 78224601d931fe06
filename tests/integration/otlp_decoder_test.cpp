// Our OTLP JSON checked by the OpenTelemetry project's own decoder (the
// protobufjs classes generated from opentelemetry-proto, shipped in
// @opentelemetry/otlp-transformer), through scripts/validate-otlp-json.js.
// Skips when node or the package is missing: scripts/install-otlp-decoder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "glassbox/exporters/otlp_json.hpp"
#include "glassbox/exporters/otlp_metrics_json.hpp"
#include "glassbox/metrics/registry.hpp"
#include "run_command.hpp"
#include "source_dir.hpp"

namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
namespace fs = std::filesystem;

namespace {

std::string decoder_modules() {
  const char* v = std::getenv("GLASSBOX_OTLP_DECODER_MODULES");
  return v && *v ? v : GLASSBOX_OTLP_DECODER_MODULES;
}

class OtlpDecoder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GLASSBOX_NODE).empty()) GTEST_SKIP() << "node not found: apt-get install nodejs";
    if (!fs::exists(fs::path(decoder_modules()) / "@opentelemetry/otlp-transformer/build/src/generated/root.js")) {
      GTEST_SKIP() << "no OTLP decoder in " << decoder_modules() << ": run scripts/install-otlp-decoder "
                   << fs::path(decoder_modules()).parent_path().string();
    }
  }
  void TearDown() override { fs::remove(payload); }
  glassbox::testing::CommandResult validate(const std::string& json) {
    std::ofstream(payload) << json;
    const fs::path validator = glassbox::testing::source_dir() / "scripts/validate-otlp-json.js";
    return glassbox::testing::run_command(std::string(GLASSBOX_NODE) + " " + validator.string() + " " + payload + " " +
                                          decoder_modules());
  }
  std::string payload =
      (fs::temp_directory_path() / ("glassbox-otlp-" + std::to_string(::getpid()) + ".json")).string();
};

std::vector<gt::SpanData> sample_spans() {
  gt::SpanData parent;
  parent.name = "backward";
  parent.context = {gt::TraceId::random(), gt::SpanId::random(), true, false};
  parent.kind = gt::SpanKind::server;
  parent.start_unix_ns = 1'763'800'000'123'456'789ULL;
  parent.end_unix_ns = parent.start_unix_ns + 5'000'000;
  parent.thread_id = 11;
  parent.attributes = {{"glassbox.device", std::int64_t{0}},
                       {"big", std::numeric_limits<std::int64_t>::min()},
                       {"ok", false},
                       {"ratio", 0.125},
                       {"nan", std::nan("")},
                       {"inf", -std::numeric_limits<double>::infinity()},
                       {"library", std::string("cudnn \"v9\" \xe2\x9c\x93")}};
  gt::SpanData child = parent;
  child.name = "node";
  child.context.span_id = gt::SpanId::random();
  child.parent_span_id = parent.context.span_id;
  child.kind = gt::SpanKind::internal;
  child.attributes.clear();
  child.status = gt::StatusCode::error;
  child.status_message = "CUDA out of memory";
  gt::SpanData ok = child;
  ok.context.span_id = gt::SpanId::random();
  ok.status = gt::StatusCode::ok;
  ok.status_message.clear();
  return {child, ok, parent};
}

// One family of each kind the registry has, labelled and not, with a
// histogram series that has observations and one that has none.
glassbox::metrics::Snapshot sample_metrics() {
  static glassbox::metrics::Registry r;
  static const bool filled = [] {
    r.counter("glassbox_test_requests_total", "Requests", {"bucket"}).with({"12"}).inc(7);
    r.counter("glassbox_test_plain_total", "No labels").with().inc(0.5);
    r.gauge("glassbox_test_reserved_bytes", "Bytes \"held\"").with().set(-1.25e9);
    r.gauge("glassbox_test_nan", "Not a number").with().set(std::nan(""));
    r.up_down_counter("glassbox_test_depth", "Depth", {"device"}).with({"0"}).add(3);
    auto& h = r.histogram("glassbox_test_seconds", "Latency", {"library"}, {1e-6, 4e-6, 1.6e-5});
    h.with({"cudnn"}).observe(2e-6);
    h.with({"cudnn"}).observe(1.0);
    h.with({"cublas"});
    return true;
  }();
  (void)filled;
  return r.snapshot();
}

constexpr ge::PointTimes kTimes{1'763'800'000'000'000'000ULL, 1'763'800'060'123'456'789ULL};

}  // namespace

TEST_F(OtlpDecoder, AcceptsOurMetricsEncodingExactly) {
  auto snapshot = sample_metrics();
  auto r = validate(ge::otlp_metrics_json(snapshot, ge::Resource::make("svc", "service.instance.id=a"), kTimes));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ok: 1 resourceMetrics, 6 metrics, 7 dataPoints"), std::string::npos) << r.output;
  EXPECT_EQ(ge::otlp_data_points(snapshot), 7u);
}

TEST_F(OtlpDecoder, RejectsMetricsTheSpecificationForbids) {
  std::string good = ge::otlp_metrics_json(sample_metrics(), ge::Resource::make("svc", ""), kTimes);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  for (const auto& [what, bad] : std::vector<std::pair<std::string, std::string>>{
           {"temporality as a name", with("\"aggregationTemporality\":2", "\"aggregationTemporality\":\"CUMULATIVE\"")},
           {"bool as a string", with("\"isMonotonic\":true", "\"isMonotonic\":\"true\"")},
           {"fixed64 as a number", with("\"bucketCounts\":[\"0\",\"1\"", "\"bucketCounts\":[0,1")},
           {"snake_case key", with("\"explicitBounds\"", "\"explicit_bounds\"")},
       }) {
    auto r = validate(bad);
    EXPECT_NE(r.status, 0) << what << " was accepted: " << r.output;
  }
}

TEST_F(OtlpDecoder, AcceptsOurEncodingExactly) {
  auto spans = sample_spans();
  auto r = validate(ge::otlp_json(spans, ge::Resource::make("svc", "k8s.pod.name=trainer-0")));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ok: 1 resourceSpans, 3 spans"), std::string::npos) << r.output;
}

// The check has teeth: each of these is a mistake an encoder could make.
TEST_F(OtlpDecoder, RejectsWhatTheSpecificationForbids) {
  auto spans = sample_spans();
  std::string good = ge::otlp_json(spans, ge::Resource::make("svc", ""));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::string start = "\"startTimeUnixNano\":\"" + std::to_string(spans[0].start_unix_ns) + "\"";
  for (const auto& [what, bad] : std::vector<std::pair<std::string, std::string>>{
           {"enum as a name", with("\"kind\":1", "\"kind\":\"SPAN_KIND_INTERNAL\"")},
           {"snake_case key", with("\"startTimeUnixNano\"", "\"start_time_unix_nano\"")},
           {"base64 id", with(spans[0].context.span_id.hex(), "AAECAwQFBgc=")},
           {"int64 as a number", with(start, "\"startTimeUnixNano\":1763800000123456789")},
           {"bool as a string", with("\"boolValue\":false", "\"boolValue\":\"false\"")},
           {"status enum as a name", with("\"code\":2", "\"code\":\"STATUS_CODE_ERROR\"")},
       }) {
    auto r = validate(bad);
    EXPECT_NE(r.status, 0) << what << " was accepted: " << r.output;
  }
}
