// glassbox-demo v0: DataParallel-like handle churn with live /metrics.
//
//   glassbox-demo --iterations 600 --threads 8 --device auto
//   curl -s http://127.0.0.1:9464/metrics | grep glassbox_handles
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/metrics/registry.hpp"
#include "handle_churn.hpp"
#include "tracing_setup.hpp"
#if GLASSBOX_HAVE_CUDA
#include "glassbox/backend/cuda_check.hpp"
#endif

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

struct Options {
  int iterations = 600;
  int threads = 8;
  int interval_ms = 50;
  std::string metrics_addr;
  std::string device = "auto";
};

std::string resolve_device(const std::string& requested) {
  if (requested != "auto") return requested;
#if GLASSBOX_HAVE_CUDA
  return glassbox::backend::cuda_device_count() > 0 ? "cuda" : "cpu";
#else
  return "cpu";
#endif
}

// "cublas in_use=8 hwm=8 created=8  cudnn ..." from the registry's snapshot.
std::string handle_summary(const glassbox::metrics::Snapshot& snap,
                           const std::vector<glassbox::demo::HandleSource>& sources) {
  std::string out;
  auto value = [&](const char* name, const std::string& lib) {
    double total = 0;
    for (const auto& f : snap) {
      if (f.name != name) continue;
      for (const auto& s : f.series) {
        for (const auto& [k, v] : s.labels) total += (k == "library" && v == lib) ? s.value : 0;
      }
    }
    return static_cast<long long>(total);
  };
  for (const auto& s : sources) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %s in_use=%lld hwm=%lld created=%lld", s.library.c_str(),
                  value("glassbox_handles_in_use", s.library), value("glassbox_handles_high_water_mark", s.library),
                  value("glassbox_handles_created_total", s.library));
    out += buf;
  }
  return out;
}

int run(const Options& o) {
  glassbox::exporters::PrometheusOptions popts = glassbox::exporters::PrometheusOptions::from_env();
  if (!o.metrics_addr.empty()) {
    glassbox::exporters::validate_listen_address(o.metrics_addr, "--metrics-addr");
    popts.address = o.metrics_addr;
  }
  glassbox::exporters::PrometheusExporter exporter(popts);
  // Flushed and closed when run() returns, also after SIGINT/SIGTERM.
  auto tracing = glassbox::demo::TracingSetup::from_env();
  std::string device = resolve_device(o.device);
  int devices = 0;
  auto sources = glassbox::demo::make_sources(device, devices);
  if (devices <= 0) throw glassbox::Error("--device " + device + ": no device found");
  std::printf("glassbox-demo: device=%s (%d device(s)), %d threads per round, metrics at %s, %s\n", device.c_str(),
              devices, o.threads, exporter.url().c_str(), tracing.description().c_str());
  std::fflush(stdout);

  auto start = std::chrono::steady_clock::now();
  auto next_report = start + std::chrono::seconds(1);
  int round = 0;
  for (; !g_stop && (o.iterations == 0 || round < o.iterations); ++round) {
    glassbox::demo::run_round(sources, o.threads, devices);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
    if (std::chrono::steady_clock::now() >= next_report) {
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
      std::printf("[%3llds] rounds=%d%s\n", static_cast<long long>(secs), round + 1,
                  handle_summary(glassbox::metrics::Registry::global().snapshot(), sources).c_str());
      std::fflush(stdout);
      next_report += std::chrono::seconds(1);
    }
  }
  std::printf("glassbox-demo: %s after %d rounds of %d threads;%s\n", g_stop ? "stopped by signal" : "done", round,
              o.threads, handle_summary(glassbox::metrics::Registry::global().snapshot(), sources).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"glassbox-demo: DataParallel-like handle churn with live /metrics"};
  Options o;
  app.add_option("--iterations", o.iterations, "Rounds to run; 0 runs until SIGINT/SIGTERM")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--threads", o.threads, "Fresh threads per round")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--interval-ms", o.interval_ms, "Pause between rounds")->check(CLI::Range(0, 60000))
      ->capture_default_str();
  app.add_option("--metrics-addr", o.metrics_addr, "Listen address for /metrics (default: GLASSBOX_METRICS_ADDR or 127.0.0.1:9464)");
  app.add_option("--device", o.device, "cuda, cpu, or auto (cuda when a GPU is present)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "glassbox-demo: %s\n", e.what());
    return 1;
  }
}
