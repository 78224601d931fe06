// The OpenTelemetry SDK's environment variables as the OTLP exporter and the
// resource read them, and the errors a malformed value gives.
#include <gtest/gtest.h>

#include "glassbox/error.hpp"
#include "glassbox/exporters/otlp_http_exporter.hpp"
#include "glassbox/exporters/otlp_metric_exporter.hpp"
#include "glassbox/exporters/resource.hpp"
#include "scoped_env.hpp"

namespace ge = glassbox::exporters;
using glassbox::testing::ScopedEnv;
using namespace std::chrono_literals;

namespace {

const char* const kVariables[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_METRICS_EXPORTER",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_METRIC_EXPORT_TIMEOUT",
};

// Starts every test from a clean environment and restores it afterwards.
class OtlpConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVariables) env.unset(v);
  }
  // The ConfigError message, or "" when none was thrown.
  std::string error_of(const std::string& var, const std::string& value) {
    ScopedEnv one;
    one.set(var, value);
    try {
      ge::OtlpHttpOptions::from_env();
      ge::OtlpMetricOptions::from_env();
      ge::otlp_metrics_enabled_in_env();
    } catch (const glassbox::ConfigError& e) {
      return e.what();
    }
    return "";
  }
  ScopedEnv env;
};

}  // namespace

TEST_F(OtlpConfig, DefaultsAreTheSpecifications) {
  auto o = ge::OtlpHttpOptions::from_env();
  EXPECT_EQ(o.url, "http://localhost:4318/v1/traces");
  EXPECT_EQ(o.timeout, 10000ms);
  EXPECT_FALSE(o.gzip);
  EXPECT_TRUE(o.headers.empty());
  EXPECT_FALSE(ge::otlp_configured_in_env());
}

TEST_F(OtlpConfig, TheGeneralEndpointGetsTheSignalPathAppended) {
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().url, "http://collector:4318/v1/traces");
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "https://gw.example/otlp/");
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().url, "https://gw.example/otlp/v1/traces");
  EXPECT_TRUE(ge::otlp_configured_in_env());
}

TEST_F(OtlpConfig, TheTracesEndpointIsUsedAsIsAndWins) {
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  env.set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://tempo:4318/custom/path");
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().url, "http://tempo:4318/custom/path");
}

TEST_F(OtlpConfig, HeadersArePercentDecodedAndTheSignalSpecificOnesReplaceTheGeneral) {
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc, x-note = a%20b%2Cc ");
  auto h = ge::OtlpHttpOptions::from_env().headers;
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"api-key", "abc"}));
  EXPECT_EQ(h[1], (std::pair<std::string, std::string>{"x-note", "a b,c"}));
  env.set("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "only=this");
  h = ge::OtlpHttpOptions::from_env().headers;
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].first, "only");
}

TEST_F(OtlpConfig, TimeoutCompressionAndProtocol) {
  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "2500").set("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  auto o = ge::OtlpHttpOptions::from_env();
  EXPECT_EQ(o.timeout, 2500ms);
  EXPECT_TRUE(o.gzip);
  env.set("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700").set("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none");
  o = ge::OtlpHttpOptions::from_env();
  EXPECT_EQ(o.timeout, 700ms);
  EXPECT_FALSE(o.gzip);
}

TEST_F(OtlpConfig, MalformedValuesNameTheVariableTheValueAndWhatIsAccepted) {
  struct Case {
    const char* var;
    const char* value;
    const char* accepted;
  };
  for (const Case& c : {
           Case{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "http:// or https://"},
           Case{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x/v1/traces", "http:// or https://"},
           Case{"OTEL_EXPORTER_OTLP_HEADERS", "novalue", "key=value"},
           Case{"OTEL_EXPORTER_OTLP_HEADERS", "k=%zz", "percent-encoded"},
           Case{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "milliseconds"},
           Case{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0", "milliseconds from 1"},
           Case{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "gzip or none"},
           Case{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/json"},
           Case{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf", "http/json"},
           Case{"OTEL_RESOURCE_ATTRIBUTES", "=x", "key=value"},
           Case{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4318", "http:// or https://"},
           Case{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "novalue", "key=value"},
           Case{"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "br", "gzip or none"},
           Case{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc", "http/json"},
           Case{"OTEL_METRICS_EXPORTER", "prometheus", "otlp"},
           Case{"OTEL_METRIC_EXPORT_INTERVAL", "1m", "milliseconds from 1"},
           Case{"OTEL_METRIC_EXPORT_TIMEOUT", "0", "milliseconds from 1"},
       }) {
    std::string m = error_of(c.var, c.value);
    EXPECT_NE(m.find(std::string(c.var) + "='" + c.value + "'"), std::string::npos) << c.var << ": " << m;
    EXPECT_NE(m.find(c.accepted), std::string::npos) << m;
  }
}

TEST_F(OtlpConfig, ServiceNameComesFromOtelServiceNameThenResourceAttributes) {
  env.set("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,host.name=gpu7");
  ge::Resource r = ge::Resource::from_env();
  EXPECT_EQ(r.service_name(), "from-attrs");
  EXPECT_EQ(r.get("host.name"), "gpu7");
  env.set("OTEL_SERVICE_NAME", "from-name");
  EXPECT_EQ(ge::Resource::from_env().service_name(), "from-name");
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().resource.service_name(), "from-name");
}

TEST_F(OtlpConfig, WithoutAServiceNameItIsUnknownServiceWithTheExecutable) {
  ge::Resource r = ge::Resource::from_env();
  EXPECT_EQ(r.service_name(), "unknown_service:glassbox-test-otlp-config");
  EXPECT_EQ(r.get("telemetry.sdk.name"), "glassbox");
  EXPECT_EQ(r.get("telemetry.sdk.language"), "cpp");
  EXPECT_EQ(r.get("telemetry.sdk.version"), std::string(ge::glassbox_version()));
}

TEST_F(OtlpConfig, TheSdkAttributesCannotBeOverridden) {
  env.set("OTEL_RESOURCE_ATTRIBUTES", "telemetry.sdk.name=other,telemetry.sdk.language=rust");
  ge::Resource r = ge::Resource::from_env();
  EXPECT_EQ(r.get("telemetry.sdk.name"), "glassbox");
  EXPECT_EQ(r.get("telemetry.sdk.language"), "cpp");
  int sdk_names = 0;
  for (const auto& a : r.attributes) sdk_names += a.key == "telemetry.sdk.name";
  EXPECT_EQ(sdk_names, 1);
}

TEST_F(OtlpConfig, MetricsReadTheirOwnVariablesFirstAndTheSharedOnesAfter) {
  auto o = ge::OtlpMetricOptions::from_env();
  EXPECT_EQ(o.http.url, "http://localhost:4318/v1/metrics");
  EXPECT_EQ(o.interval, 60000ms);
  EXPECT_EQ(o.export_timeout, 30000ms);
  EXPECT_FALSE(ge::otlp_metrics_enabled_in_env());
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318").set("OTEL_EXPORTER_OTLP_HEADERS", "a=1");
  env.set("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "traces=only").set("OTEL_EXPORTER_OTLP_TIMEOUT", "900");
  env.set("OTEL_METRIC_EXPORT_INTERVAL", "250").set("OTEL_METRICS_EXPORTER", "otlp");
  o = ge::OtlpMetricOptions::from_env();
  EXPECT_EQ(o.http.url, "http://collector:4318/v1/metrics");
  ASSERT_EQ(o.http.headers.size(), 1u);
  EXPECT_EQ(o.http.headers[0].first, "a");  // the traces' own headers are not the metrics'
  EXPECT_EQ(o.http.timeout, 900ms);
  EXPECT_EQ(o.interval, 250ms);
  EXPECT_TRUE(ge::otlp_metrics_enabled_in_env());
  env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://mimir:4318/otlp/v1/metrics");
  env.set("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip");
  o = ge::OtlpMetricOptions::from_env();
  EXPECT_EQ(o.http.url, "http://mimir:4318/otlp/v1/metrics");
  EXPECT_TRUE(o.http.gzip);
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().url, "http://collector:4318/v1/traces");
  env.set("OTEL_METRICS_EXPORTER", "none");
  EXPECT_FALSE(ge::otlp_metrics_enabled_in_env());
}

TEST_F(OtlpConfig, OneProcessIsOneInstanceForTracesAndMetricsUnlessTheAttributesNameIt) {
  const std::string id = ge::Resource::from_env().get("service.instance.id");
  EXPECT_EQ(id.size(), 36u) << id;  // a UUID
  EXPECT_EQ(ge::OtlpHttpOptions::from_env().resource.get("service.instance.id"), id);
  EXPECT_EQ(ge::OtlpMetricOptions::from_env().http.resource.get("service.instance.id"), id);
  env.set("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=trainer-3");
  EXPECT_EQ(ge::Resource::from_env().get("service.instance.id"), "trainer-3");
}
