// /metrics with HTTP basic auth, end to end: a real exporter on an ephemeral
// port and a real HTTP client, credentials from code, the environment and a
// file; and the refusal to serve beyond loopback without authentication.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
#include "scoped_env.hpp"

namespace ge = glassbox::exporters;
namespace gm = glassbox::metrics;
using glassbox::testing::ScopedEnv;

namespace {

const ge::BasicAuth kCredentials{"prometheus", "pa:ss word"};  // ':' and ' ' in a password are allowed

struct Answer {
  int status = 0;
  std::string www_authenticate;
  std::string body;
};

// GET /metrics with an Authorization header when one is given.
Answer get(std::uint16_t port, std::optional<std::string> authorization) {
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers;
  if (authorization) headers.emplace("Authorization", *authorization);
  auto res = client.Get("/metrics", headers);
  if (!res) throw std::runtime_error("request failed: " + httplib::to_string(res.error()));
  return {res->status, res->get_header_value("WWW-Authenticate"), res->body};
}

std::string basic(const std::string& user, const std::string& password) {
  return httplib::make_basic_authentication_header(user, password).second;
}

ge::PrometheusOptions with_auth(const std::string& address, gm::Registry& registry) {
  ge::PrometheusOptions o(address, &registry);
  o.basic_auth = kCredentials;
  return o;
}

// A registry with one series, so a 200 has something to show.
struct Served {
  gm::Registry registry;
  Served() { registry.counter("glassbox_test_requests_total", "Requests.").with().inc(); }
};

// `secret` (the credentials given) must not appear in the message.
void expect_rejects_without_echoing(const std::string& variable, const std::string& value, const std::string& secret) {
  ScopedEnv env;
  env.unset("GLASSBOX_METRICS_BASIC_AUTH").unset("GLASSBOX_METRICS_BASIC_AUTH_FILE").set(variable, value);
  try {
    ge::BasicAuth::from_env();
    FAIL() << variable << "='" << value << "' was accepted";
  } catch (const glassbox::ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(variable), std::string::npos) << m;
    EXPECT_NE(m.find("USER:PASSWORD"), std::string::npos) << m;
    EXPECT_EQ(m.find(secret), std::string::npos) << "credentials echoed: " << m;
  }
}

}  // namespace

TEST(MetricsAuth, NoOrWrongCredentialsGet401WithAChallengeAndTheRightOnesGet200) {
  Served s;
  ge::PrometheusExporter exporter(with_auth("127.0.0.1:0", s.registry));

  Answer none = get(exporter.port(), std::nullopt);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.www_authenticate, R"(Basic realm="glassbox metrics", charset="UTF-8")");
  EXPECT_EQ(none.body.find("glassbox_test_requests_total"), std::string::npos);

  for (const std::string& wrong :
       {basic("prometheus", "pa:ss wor"), basic("prometheus", "pa:ss words"), basic("Prometheus", "pa:ss word"),
        basic("prometheus", ""), std::string("Bearer ") + basic("prometheus", "pa:ss word").substr(6),
        basic("prometheus", "pa:ss word") + "x", std::string("Basic"), std::string()}) {
    Answer a = get(exporter.port(), wrong);
    EXPECT_EQ(a.status, 401) << "Authorization: " << wrong;
    EXPECT_FALSE(a.www_authenticate.empty()) << wrong;
  }

  Answer right = get(exporter.port(), basic("prometheus", "pa:ss word"));
  EXPECT_EQ(right.status, 200);
  EXPECT_NE(right.body.find("glassbox_test_requests_total 1"), std::string::npos) << right.body;

  // The scheme is case-insensitive (RFC 7235).
  EXPECT_EQ(get(exporter.port(), "basic " + basic("prometheus", "pa:ss word").substr(6)).status, 200);
}

TEST(MetricsAuth, OtherPathsNeedCredentialsToo) {
  Served s;
  ge::PrometheusExporter exporter(with_auth("127.0.0.1:0", s.registry));
  httplib::Client client("127.0.0.1", exporter.port());
  auto res = client.Get("/nothing-here");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
}

TEST(MetricsAuth, CredentialsFromTheEnvironment) {
  Served s;
  ScopedEnv env;
  env.unset("GLASSBOX_METRICS_BASIC_AUTH_FILE").set("GLASSBOX_METRICS_BASIC_AUTH", "scraper:from-env");
  ge::PrometheusOptions o = ge::PrometheusOptions::from_env();
  ASSERT_TRUE(o.basic_auth);
  o.address = "127.0.0.1:0";
  o.registry = &s.registry;
  ge::PrometheusExporter exporter(o);
  EXPECT_EQ(get(exporter.port(), std::nullopt).status, 401);
  EXPECT_EQ(get(exporter.port(), basic("scraper", "from-env")).status, 200);
}

TEST(MetricsAuth, CredentialsFromAFileLoseTheirTrailingNewline) {
  Served s;
  auto path = std::filesystem::temp_directory_path() / ("glassbox-auth-" + std::to_string(::getpid()));
  std::ofstream(path) << "scraper:from-file\n";
  ScopedEnv env;
  env.unset("GLASSBOX_METRICS_BASIC_AUTH").set("GLASSBOX_METRICS_BASIC_AUTH_FILE", path.string());
  ge::PrometheusOptions o = ge::PrometheusOptions::from_env();
  std::filesystem::remove(path);
  o.address = "127.0.0.1:0";
  o.registry = &s.registry;
  ge::PrometheusExporter exporter(o);
  EXPECT_EQ(get(exporter.port(), basic("scraper", "from-file\n")).status, 401);
  EXPECT_EQ(get(exporter.port(), basic("scraper", "from-file")).status, 200);
}

TEST(MetricsAuth, BadCredentialSettingsAreClearErrorsThatHideThePassword) {
  for (const char* bad : {"no-colon", ":password-without-user", "user-without-password:"}) {
    expect_rejects_without_echoing("GLASSBOX_METRICS_BASIC_AUTH", bad, bad);
  }
  auto path = std::filesystem::temp_directory_path() / ("glassbox-auth-bad-" + std::to_string(::getpid()));
  std::ofstream(path) << "only-a-user\n";
  expect_rejects_without_echoing("GLASSBOX_METRICS_BASIC_AUTH_FILE", path.string(), "only-a-user");
  std::filesystem::remove(path);

  ScopedEnv env;
  env.set("GLASSBOX_METRICS_BASIC_AUTH_FILE", "/nonexistent/glassbox-credentials").unset("GLASSBOX_METRICS_BASIC_AUTH");
  try {
    ge::BasicAuth::from_env();
    FAIL() << "a missing credentials file was accepted";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GLASSBOX_METRICS_BASIC_AUTH_FILE='/nonexistent/glassbox-credentials'"),
              std::string::npos)
        << e.what();
  }
  env.set("GLASSBOX_METRICS_BASIC_AUTH", "a:b");
  EXPECT_THROW(ge::BasicAuth::from_env(), glassbox::ConfigError) << "both variables set";

  ScopedEnv allow;
  allow.unset("GLASSBOX_METRICS_BASIC_AUTH")
      .unset("GLASSBOX_METRICS_BASIC_AUTH_FILE")
      .set("GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED", "yes");
  try {
    ge::PrometheusOptions::from_env();
    FAIL() << "GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED=yes was accepted";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED='yes'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("true or false"), std::string::npos) << e.what();
  }
}

TEST(MetricsAuth, BeyondLoopbackWithoutAuthIsRefused) {
  Served s;
  for (const char* address : {"0.0.0.0:0", "[::]:0"}) {
    try {
      ge::PrometheusExporter exporter({address, &s.registry});
      FAIL() << address << " served without authentication";
    } catch (const glassbox::ConfigError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(std::string("refusing to serve ") + address), std::string::npos) << m;
      EXPECT_NE(m.find("GLASSBOX_METRICS_BASIC_AUTH"), std::string::npos) << m;
    }
  }
  for (const char* loopback : {"127.0.0.1:0", "127.1.2.3:0", "localhost:0"}) {
    EXPECT_NO_THROW(ge::PrometheusExporter({loopback, &s.registry})) << loopback;
  }
}

TEST(MetricsAuth, BeyondLoopbackServesWithAuthOrWhenExplicitlyAllowed) {
  Served s;
  ge::PrometheusExporter authenticated(with_auth("0.0.0.0:0", s.registry));
  EXPECT_EQ(get(authenticated.port(), std::nullopt).status, 401);
  EXPECT_EQ(get(authenticated.port(), basic(kCredentials.user, kCredentials.password)).status, 200);

  ScopedEnv env;
  env.unset("GLASSBOX_METRICS_BASIC_AUTH")
      .unset("GLASSBOX_METRICS_BASIC_AUTH_FILE")
      .unset("GLASSBOX_METRICS_ADDR")
      .set("GLASSBOX_METRICS_ALLOW_UNAUTHENTICATED", "true");
  ge::PrometheusOptions o = ge::PrometheusOptions::from_env();
  o.address = "0.0.0.0:0";
  o.registry = &s.registry;
  ge::PrometheusExporter open(o);
  EXPECT_EQ(get(open.port(), std::nullopt).status, 200);
}
