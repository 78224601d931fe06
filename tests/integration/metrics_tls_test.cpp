// /metrics over TLS, end to end on loopback, with a CA and certificates made
// at test time by the openssl tool: HTTPS with the server's certificate,
// mutual TLS, certificates renewed on disk while serving, hanging TLS
// clients, clear errors for bad files, and Debian's Prometheus scraping it
// with `scheme: https` and `tls_config`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "child_process.hpp"
#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
#include "held_connections.hpp"
#include "metric_value.hpp"
#include "raw_http.hpp"
#include "scoped_env.hpp"
#include "test_pki.hpp"
#include "tls_client.hpp"

namespace ge = glassbox::exporters;
namespace gm = glassbox::metrics;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using glassbox::testing::metric_value;
using glassbox::testing::status_of;
using glassbox::testing::TestPki;
using glassbox::testing::TlsClient;
using glassbox::testing::TlsClientOptions;

namespace {

constexpr const char* kScrape = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

// A CA, a server certificate "server" and a client certificate "client" it
// signed, and a client certificate "stranger" from another CA.
struct Pki : TestPki {
  Pki() {
    make_ca("ca");
    issue("server", "ca", true);
    issue("client", "ca", false);
    make_ca("other-ca");
    issue("stranger", "other-ca", false);
  }
  ge::TlsConfig server(bool mutual = false) const {
    return {path("server.crt"), path("server.key"), mutual ? path("ca.crt") : ""};
  }
  TlsClientOptions client(const std::string& name = "") const {
    return {path("ca.crt"), name.empty() ? "" : path(name + ".crt"), name.empty() ? "" : path(name + ".key")};
  }
};

struct Served {
  gm::Registry registry;
  Served() { registry.counter("glassbox_test_requests_total", "Requests.").with().inc(); }
  double counted(const char* family, const char* label, const char* value) const {
    return metric_value(registry, family, {{label, value}});
  }
};

ge::PrometheusOptions with_tls(Served& s, ge::TlsConfig tls, const std::string& address = "127.0.0.1:0") {
  ge::PrometheusOptions o(address, &s.registry);
  o.tls = std::move(tls);
  return o;
}

// The status of a scrape through TLS, or 0 when the connection or the
// handshake fails.
int tls_scrape(std::uint16_t port, const TlsClientOptions& client) {
  try {
    return status_of(TlsClient(port, client).request(kScrape));
  } catch (const std::runtime_error&) {
    return 0;
  }
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout; !done();) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

void copy_over(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// The files a reload test rewrites, holding the "server" pair to start with.
struct LiveFiles {
  explicit LiveFiles(Pki& pki) : cert(pki.path("live.crt")), key(pki.path("live.key")) {
    copy_over(pki.path("server.crt"), cert);
    copy_over(pki.path("server.key"), key);
  }
  std::string cert, key;
};

}  // namespace

TEST(MetricsTls, ServesHttpsWithItsCertificateAndNothingInTheClear) {
  Pki pki;
  Served s;
  ge::PrometheusExporter exporter(with_tls(s, pki.server()));
  EXPECT_EQ(exporter.url(), "https://127.0.0.1:" + std::to_string(exporter.port()) + "/metrics");
  TlsClient client(exporter.port(), pki.client());
  EXPECT_EQ(client.server_name(), "server");
  std::string response = client.request(kScrape);
  EXPECT_EQ(status_of(response), 200);
  EXPECT_NE(response.find("glassbox_test_requests_total 1"), std::string::npos);
  EXPECT_EQ(status_of(client.request(kScrape)), 200) << "kept alive";

  glassbox::testing::RawConnection plain(exporter.port());
  plain.send(kScrape);
  EXPECT_EQ(status_of(plain.read_response(5s)), 0) << "plain HTTP was answered on the TLS port";
  EXPECT_TRUE(eventually(
      [&] { return s.counted("glassbox_metrics_http_connections_rejected_total", "reason", "tls_error") == 1; }));
}

TEST(MetricsTls, MutualTlsServesOnlyClientsWithACertificateFromTheCa) {
  Pki pki;
  Served s;
  ge::PrometheusExporter exporter(with_tls(s, pki.server(/*mutual=*/true)));
  EXPECT_EQ(tls_scrape(exporter.port(), pki.client("client")), 200);
  EXPECT_EQ(tls_scrape(exporter.port(), pki.client()), 0) << "a client without a certificate was served";
  EXPECT_EQ(tls_scrape(exporter.port(), pki.client("stranger")), 0) << "a certificate from another CA was accepted";
  EXPECT_TRUE(eventually([&] {
    return s.counted("glassbox_metrics_http_connections_rejected_total", "reason", "tls_error") == 2;
  })) << s.counted("glassbox_metrics_http_connections_rejected_total", "reason", "tls_error");
}

// A renewed certificate is served without a restart; files that do not load
// leave the last good one in use.
TEST(MetricsTls, ChangedCertificateFilesAreReadAgain) {
  Pki pki;
  pki.issue("renewed", "ca", true);
  const auto [cert, key] = LiveFiles(pki);
  Served s;
  ge::PrometheusExporter exporter(with_tls(s, {cert, key, ""}));
  EXPECT_EQ(TlsClient(exporter.port(), pki.client()).server_name(), "server");

  copy_over(pki.path("renewed.key"), key);
  copy_over(pki.path("renewed.crt"), cert);
  EXPECT_TRUE(eventually([&] { return TlsClient(exporter.port(), pki.client()).server_name() == "renewed"; }));
  EXPECT_EQ(s.counted("glassbox_metrics_tls_certificate_reloads_total", "result", "ok"), 1);

  std::ofstream(cert) << "not a certificate\n";
  EXPECT_TRUE(eventually([&] {
    (void)tls_scrape(exporter.port(), pki.client());  // reloads are checked as connections arrive
    // Broken files are tried again at each check, so the count can have moved on.
    return s.counted("glassbox_metrics_tls_certificate_reloads_total", "result", "failed") >= 1;
  }));
  TlsClient after(exporter.port(), pki.client());
  EXPECT_EQ(after.server_name(), "renewed");
  EXPECT_EQ(status_of(after.request(kScrape)), 200);
}

// Files that failed to load are tried again at the next check even when
// what fixed them left their stamps as they were: here a key rewritten in
// place with the same size (P-256 keys' PEM is) and its old modification time.
TEST(MetricsTls, FilesThatFailedToLoadAreTriedAgain) {
  Pki pki;
  pki.issue("renewed", "ca", true);
  pki.issue("other", "ca", true);
  const auto [cert, key] = LiveFiles(pki);
  Served s;
  ge::PrometheusExporter exporter(with_tls(s, {cert, key, ""}));
  EXPECT_EQ(TlsClient(exporter.port(), pki.client()).server_name(), "server");

  // No connection arrives while the files change, so the one check below
  // sees both: a certificate and a key that does not match it.
  copy_over(pki.path("renewed.crt"), cert);
  copy_over(pki.path("other.key"), key);
  std::this_thread::sleep_for(1100ms);  // past the once-a-second rate limit
  EXPECT_EQ(TlsClient(exporter.port(), pki.client()).server_name(), "server");
  EXPECT_EQ(s.counted("glassbox_metrics_tls_certificate_reloads_total", "result", "failed"), 1);

  struct stat broken {};
  ASSERT_EQ(::stat(key.c_str(), &broken), 0);
  ASSERT_EQ(fs::file_size(pki.path("renewed.key")), static_cast<std::uintmax_t>(broken.st_size));
  {
    std::ifstream good(pki.path("renewed.key"), std::ios::binary);
    std::ofstream(key, std::ios::binary | std::ios::in | std::ios::out) << good.rdbuf();  // same inode
  }
  const timespec times[2] = {broken.st_atim, broken.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, key.c_str(), times, 0), 0);
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(TlsClient(exporter.port(), pki.client()).server_name(), "renewed");
  EXPECT_EQ(s.counted("glassbox_metrics_tls_certificate_reloads_total", "result", "ok"), 1);
}

// TLS clients that connect and never say hello are slowloris clients too.
TEST(MetricsTls, ScrapesStayFastWhileAThousandTlsConnectionsHang) {
  ASSERT_GE(glassbox::testing::raise_fd_limit(4096), 2200u);
  Pki pki;
  Served s;
  ge::PrometheusExporter exporter(with_tls(s, pki.server()));
  glassbox::testing::HeldConnections held(exporter.port(), 1000, {"", "\x16\x03\x01"});  // nothing, or half a hello
  std::vector<std::chrono::microseconds> took;
  for (int i = 0; i < 100; ++i) {
    auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(tls_scrape(exporter.port(), pki.client()), 200) << "scrape " << i;
    took.push_back(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start));
  }
  std::sort(took.begin(), took.end());
  std::printf("TLS, 1000 hanging connections: scrape p50 %lld us, p99 %lld us (handshake included)\n",
              static_cast<long long>(took[49].count()), static_cast<long long>(took[98].count()));
  EXPECT_LE(took[98], 100ms);
}

TEST(MetricsTls, BadFilesAndSettingsAreClearErrors) {
  Pki pki;
  Served s;
  auto expect_error = [&](ge::TlsConfig tls, const std::string& expected) {
    try {
      ge::PrometheusExporter exporter(with_tls(s, std::move(tls)));
      ADD_FAILURE() << "served with " << expected;
    } catch (const glassbox::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  expect_error({"/nonexistent/cert.pem", pki.path("server.key"), ""},
               "'/nonexistent/cert.pem' (GLASSBOX_METRICS_TLS_CERT_FILE)");
  expect_error({pki.path("server.crt"), pki.path("client.key"), ""},
               "'" + pki.path("client.key") + "' (GLASSBOX_METRICS_TLS_KEY_FILE)");
  expect_error({pki.path("server.crt"), pki.path("server.key"), pki.path("server.key")},
               "(GLASSBOX_METRICS_TLS_CLIENT_CA_FILE)");

  glassbox::testing::ScopedEnv env;
  env.set("GLASSBOX_METRICS_TLS_CERT_FILE", pki.path("server.crt")).unset("GLASSBOX_METRICS_TLS_KEY_FILE");
  try {
    ge::PrometheusOptions::from_env();
    ADD_FAILURE() << "a certificate without a key was accepted";
  } catch (const glassbox::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GLASSBOX_METRICS_TLS_KEY_FILE"), std::string::npos) << e.what();
  }
  env.set("GLASSBOX_METRICS_TLS_KEY_FILE", pki.path("server.key"));
  auto tls = ge::PrometheusOptions::from_env().tls;
  ASSERT_TRUE(tls);
  EXPECT_EQ(tls->key_file, pki.path("server.key"));
}

// TLS hides the password, not the metrics: beyond loopback it still needs a
// login, basic auth or a client certificate.
TEST(MetricsTls, BeyondLoopbackTlsStillNeedsAuthentication) {
  Pki pki;
  Served s;
  EXPECT_THROW(ge::PrometheusExporter(with_tls(s, pki.server(), "0.0.0.0:0")), glassbox::ConfigError);
  ge::PrometheusExporter mutual(with_tls(s, pki.server(/*mutual=*/true), "0.0.0.0:0"));
  EXPECT_EQ(tls_scrape(mutual.port(), pki.client("client")), 200);
  auto o = with_tls(s, pki.server(), "0.0.0.0:0");
  o.basic_auth = ge::BasicAuth{"prometheus", "s3cret"};
  ge::PrometheusExporter with_password(o);
  EXPECT_EQ(tls_scrape(with_password.port(), pki.client()), 401);
}

// Debian's Prometheus scrapes two exporters over HTTPS: one with basic auth
// (the documented way to expose the port), one with mutual TLS. Both targets
// must be up.
TEST(MetricsTls, PrometheusScrapesOverHttps) {
  const std::string prometheus_bin = GLASSBOX_PROMETHEUS;
  ASSERT_FALSE(prometheus_bin.empty() || prometheus_bin.ends_with("NOTFOUND"))
      << "prometheus not found at configure time; run scripts/install-deps (Debian package 'prometheus')";
  Pki pki;
  Served s;
  auto o = with_tls(s, pki.server());
  o.basic_auth = ge::BasicAuth{"prometheus", "s3cret"};
  ge::PrometheusExporter password(o);
  ge::PrometheusExporter mutual(with_tls(s, pki.server(/*mutual=*/true)));

  std::ofstream(pki.path("password")) << "s3cret";
  std::ofstream(pki.path("prometheus.yml"))
      << "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
      << "scrape_configs:\n"
      << "  - job_name: tls_basic_auth\n    scheme: https\n"
      << "    tls_config: {ca_file: " << pki.path("ca.crt") << "}\n"
      << "    basic_auth: {username: prometheus, password_file: " << pki.path("password") << "}\n"
      << "    static_configs: [{targets: ['127.0.0.1:" << password.port() << "']}]\n"
      << "  - job_name: mutual_tls\n    scheme: https\n"
      << "    tls_config: {ca_file: " << pki.path("ca.crt") << ", cert_file: " << pki.path("client.crt")
      << ", key_file: " << pki.path("client.key") << "}\n"
      << "    static_configs: [{targets: ['127.0.0.1:" << mutual.port() << "']}]\n";
  glassbox::testing::ChildProcess prometheus(
      prometheus_bin, {"--config.file=" + pki.path("prometheus.yml"), "--storage.tsdb.path=" + pki.path("tsdb"),
                       "--web.listen-address=127.0.0.1:0"});
  const std::string web =
      prometheus.wait_for_log(std::regex(R"(msg="Listening on" address=(127\.0\.0\.1:[0-9]+))"), 60s);
  ASSERT_FALSE(web.empty()) << "Prometheus did not start:\n" << prometheus.log();

  httplib::Client api("http://" + web);
  std::map<std::string, std::string> up;  // job -> value of up
  bool both_up = eventually(
      [&] {
        auto res = api.Get("/api/v1/query", httplib::Params{{"query", "up"}}, httplib::Headers{});
        if (!res || res->status != 200) return false;
        const nlohmann::json answer = nlohmann::json::parse(res->body);  // outlives the loop over its parts
        for (const auto& series : answer["data"]["result"]) up[series["metric"]["job"]] = series["value"][1];
        return up["tls_basic_auth"] == "1" && up["mutual_tls"] == "1";
      },
      30s);
  EXPECT_TRUE(both_up) << "up{job=tls_basic_auth}=" << up["tls_basic_auth"]
                       << ", up{job=mutual_tls}=" << up["mutual_tls"] << "\nPrometheus log:\n"
                       << prometheus.log();
  prometheus.signal(SIGTERM);
  EXPECT_EQ(prometheus.wait(30s), 0);
}
