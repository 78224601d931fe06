#pragma once
// Debian's Prometheus, started by a test on an ephemeral loopback port with
// the project's own dashboards/prometheus/ config (copied into a temporary
// folder, scrape and evaluation intervals shortened, targets the test's),
// and queried through its HTTP API. The dashboard and fleet tests share it.
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "prometheus_rules.hpp"
#include "source_dir.hpp"

namespace glassbox::testing {

/// A folder under the system's temporary one, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("glassbox-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// The last few lines of a log, for failure messages.
inline std::string log_tail(const std::string& log, std::size_t lines = 15) {
  std::size_t at = log.size();
  for (std::size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) at = log.rfind('\n', at - 1);
  return at == std::string::npos ? log : log.substr(at + 1);
}

/// A rewrite of one config file's text before Prometheus reads it: (file name, text) -> text.
using ConfigEdit = std::function<std::string(const std::string&, const std::string&)>;

/// The project's dashboards/prometheus/ in `dir`, as it is but for the scrape
/// and evaluation intervals (`interval`), what `edit` changes, and a
/// targets.yml that names `targets`.
inline void write_prometheus_config(const std::filesystem::path& dir, const std::vector<std::string>& targets,
                                    const std::string& interval, const ConfigEdit& edit = {}) {
  namespace fs = std::filesystem;
  const fs::path project = source_dir() / "dashboards/prometheus";
  for (const auto& e : fs::directory_iterator(project)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    std::string text = read_text_file(e.path());
    if (name == "prometheus.yml") {
      static const std::regex intervals(R"(\b(scrape_interval|evaluation_interval):[ \t]*\S+)");
      if (!std::regex_search(text, intervals)) {
        throw std::runtime_error(
            "dashboards/prometheus/prometheus.yml sets no scrape_interval for the test to shorten");
      }
      text = std::regex_replace(text, intervals, "$1: " + interval);
    }
    std::ofstream(dir / name) << (edit ? edit(name, text) : text);
  }
  std::ofstream out(dir / "targets.yml");
  out << "- targets: [";
  for (std::size_t i = 0; i < targets.size(); ++i) out << (i ? ", " : "") << '"' << targets[i] << '"';
  out << "]\n";
}

/// Prometheus on `dir`/prometheus.yml, its TSDB and log in `dir`.
class LivePrometheus {
 public:
  /// Starts it and waits until it listens; throws with its log when it does not.
  explicit LivePrometheus(const std::filesystem::path& dir)
      : process_(GLASSBOX_PROMETHEUS,
                 {"--config.file=" + (dir / "prometheus.yml").string(),
                  "--storage.tsdb.path=" + (dir / "tsdb").string(), "--web.listen-address=127.0.0.1:0",
                  // Stores the exemplars /metrics sends in OpenMetrics (the dashboard test reads them back).
                  "--enable-feature=exemplar-storage"},
                 {}, (dir / "prometheus.log").string()) {
    address_ = process_.wait_for_log(std::regex(R"(msg="Listening on" address=(127\.0\.0\.1:[0-9]+))"),
                                     std::chrono::seconds(60));
    if (address_.empty()) throw std::runtime_error("Prometheus did not start:\n" + process_.log());
    api_ = std::make_unique<httplib::Client>("http://" + address_);
    api_->set_read_timeout(10, 0);
  }

  /// Whether the configure step found Debian's prometheus; why not, in `why`.
  static bool available(std::string& why) {
    const std::string bin = GLASSBOX_PROMETHEUS;
    if (!bin.empty() && !bin.ends_with("NOTFOUND")) return true;
    why = "prometheus not found at configure time; run scripts/install-deps (Debian package 'prometheus')";
    return false;
  }

  httplib::Client& api() { return *api_; }
  ChildProcess& process() { return process_; }

  /// GET `path` with `params`; the parsed body when Prometheus answered
  /// "success", else null with the answer in `problem`.
  nlohmann::json get(const std::string& path, const httplib::Params& params, std::string& problem) {
    auto res = api_->Get(path, params, httplib::Headers{});
    if (!res) {
      problem = "no answer: " + httplib::to_string(res.error());
      return nullptr;
    }
    auto body = nlohmann::json::parse(res->body, nullptr, false);
    if (res->status != 200 || body.is_discarded() || body.value("status", "") != "success") {
      problem = "HTTP " + std::to_string(res->status) + ": " + res->body;
      return nullptr;
    }
    return body;
  }
  /// An instant query's result vector (empty on failure, with `problem` set).
  nlohmann::json query(const std::string& promql, std::string& problem) {
    nlohmann::json body = get("/api/v1/query", httplib::Params{{"query", promql}}, problem);
    return body.is_null() ? nlohmann::json::array() : body["data"]["result"];
  }

 private:
  ChildProcess process_;
  std::string address_;
  std::unique_ptr<httplib::Client> api_;
};

}  // namespace glassbox::testing
