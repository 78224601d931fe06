// glassbox-demo: trains a small convolutional network on synthetic images
// with every glassbox part in play, and serves /metrics while it runs.
//
//   glassbox-demo --steps 150 --threads 4 --device auto
//   open http://127.0.0.1:9464/ (the live page), or
//   curl -s http://127.0.0.1:9464/metrics | grep glassbox_
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "data.hpp"
#include "glassbox/exporters/otlp_metric_exporter.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/exporters/tracing_setup.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/trace/span.hpp"
#include "model.hpp"
#include "progress.hpp"
#include "runtime.hpp"
#include "summary.hpp"
#include "training.hpp"
#if GLASSBOX_HAVE_CUDA
#include "glassbox/cuda/cuda_check.hpp"
#endif

namespace {

namespace demo = glassbox::demo;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

struct Options {
  int steps = 150;
  int threads = 4;
  int batch = 32;
  float learning_rate = 0.05F;
  unsigned seed = 1;
  int interval_ms = 0;
  std::string metrics_addr;
  std::string device = "auto";
};

std::string resolve_device(const std::string& requested) {
  if (requested != "auto") return requested;
#if GLASSBOX_HAVE_CUDA
  return glassbox::cuda::cuda_device_count() > 0 ? "cuda" : "cpu";
#else
  return "cpu";
#endif
}

// OTLP metric push beside /metrics when OTEL_METRICS_EXPORTER=otlp: what a
// fleet behind an OpenTelemetry Collector uses instead of scrapes.
std::unique_ptr<glassbox::exporters::OtlpMetricExporter> start_metrics_push(std::string& description) {
  namespace ge = glassbox::exporters;
  if (!ge::otlp_metrics_enabled_in_env()) {
    description = "metrics push: off";
    return nullptr;
  }
  auto options = ge::OtlpMetricOptions::from_env();
  description =
      "metrics push: otlp -> " + options.http.url + " every " + std::to_string(options.interval.count()) + " ms";
  return std::make_unique<ge::OtlpMetricExporter>(std::move(options));
}

// One training step in its span; returns the batch's loss.
float step(demo::Runtime& runtime, demo::SmallCnn& model, demo::SyntheticImages& data, const Options& o, int index) {
  glassbox::trace::Span span("glassbox.demo.step");
  span.set_attribute("glassbox.step", index);
  return demo::train_step(model, runtime, data.next(o.batch), {o.threads, o.learning_rate});
}

int run(const Options& o) {
  glassbox::exporters::PrometheusOptions popts = glassbox::exporters::PrometheusOptions::from_env();
  if (!o.metrics_addr.empty()) {
    glassbox::exporters::validate_listen_address(o.metrics_addr, "--metrics-addr");
    popts.address = o.metrics_addr;
  }
  glassbox::exporters::PrometheusExporter exporter(popts);
  // First, so a newcomer sees the runtime move before anything else.
  if (exporter.page_url().empty()) {
    std::printf("glassbox-demo: live page off (GLASSBOX_METRICS_UI=false)\n");
  } else {
    std::printf("glassbox-demo: live page at %s (open it in a browser; no Grafana needed)\n",
                exporter.page_url().c_str());
  }
  std::fflush(stdout);
  // Flushed and closed when run() returns, also after SIGINT/SIGTERM.
  auto tracing = glassbox::exporters::TracingSetup::from_env();
  std::string push_description;
  auto metrics_push = start_metrics_push(push_description);
  auto runtime = demo::make_runtime(resolve_device(o.device));
  std::printf("glassbox-demo: device=%s, %d worker threads per step, batch %d, metrics at %s, %s, %s\n",
              runtime->description().c_str(), o.threads, o.batch, exporter.url().c_str(), tracing.description().c_str(),
              push_description.c_str());
  std::fflush(stdout);

  demo::SmallCnn model(demo::SyntheticImages::kClasses, o.seed, runtime->tensor_device());
  demo::SyntheticImages data(o.seed + 1);
  demo::Progress progress(o.steps, ::isatty(STDOUT_FILENO) == 1);
  demo::LossLog losses;
  int done = 0;
  while (!g_stop && (o.steps == 0 || done < o.steps)) {
    const float loss = step(*runtime, model, data, o, done);
    ++done;
    losses.add(loss);
    progress.update(done, loss);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
  }
  progress.finish();
  if (metrics_push) metrics_push->shutdown(std::chrono::seconds(5));  // the last counts, bounded on the way out
  std::printf("glassbox-demo: %s after %d steps\n%s", g_stop ? "stopped by signal" : "done", done,
              demo::summary(glassbox::metrics::Registry::global().snapshot(), runtime->host_stats(),
                            runtime->handle_sources(), losses)
                  .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"glassbox-demo: trains a small CNN with every glassbox part in play, serving /metrics"};
  Options o;
  app.add_option("--steps,--iterations", o.steps, "Training steps; 0 runs until SIGINT/SIGTERM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Fresh worker threads per step (the batch is split over them)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Images per step")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--lr", o.learning_rate, "SGD learning rate")->check(CLI::Range(0.0, 10.0))->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the initial weights and the data")->capture_default_str();
  app.add_option("--interval-ms", o.interval_ms, "Pause between steps")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  app.add_option("--metrics-addr", o.metrics_addr,
                 "Listen address for /metrics (default: GLASSBOX_METRICS_ADDR or 127.0.0.1:9464)");
  app.add_option("--device", o.device, "cuda, cpu, or auto (cuda when a GPU is present)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
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
