// The extension behind the Python module glassbox_torch (glassbox_torch.py,
// which imports torch first: this extension's PyTorch symbols resolve against
// the libraries torch loaded): glassbox's pinned-host allocator as PyTorch's,
// with /metrics and the trace exporters a Python process has no other way to
// start.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "glassbox/exporters/prometheus_exporter.hpp"
#include "glassbox/exporters/tracing_setup.hpp"
#include "glassbox/torch/install.hpp"

namespace py = pybind11;
namespace ge = glassbox::exporters;

namespace {
// What install() started; stopped at interpreter exit, so that the trace
// file is complete JSON.
struct Exporters {
  std::unique_ptr<ge::PrometheusExporter> metrics;
  std::optional<ge::TracingSetup> tracing;
};
Exporters& exporters() {
  static auto* e = new Exporters;  // never destroyed: stopped by shutdown()
  return *e;
}

void shutdown() {
  Exporters& e = exporters();
  if (e.tracing) e.tracing->shutdown();
  e.metrics.reset();
}

py::dict install(std::optional<std::string> metrics_addr) {
  glassbox::torch::install();
  Exporters& e = exporters();
  if (!e.metrics && (metrics_addr || std::getenv("GLASSBOX_METRICS_ADDR") != nullptr)) {
    ge::PrometheusOptions options = ge::PrometheusOptions::from_env();
    if (metrics_addr) {
      ge::validate_listen_address(*metrics_addr, "metrics_addr");
      options.address = *metrics_addr;
    }
    e.metrics = std::make_unique<ge::PrometheusExporter>(options);
  }
  if (!e.tracing) {
    e.tracing.emplace(ge::TracingSetup::from_env());
    py::module_::import("atexit").attr("register")(py::cpp_function(&shutdown));
  }
  py::dict d;
  d["metrics_url"] = e.metrics ? e.metrics->url() : std::string();
  d["traces"] = e.tracing->description();
  return d;
}

py::dict stat(const glassbox::host_allocator::Stat& s) {
  py::dict d;
  d["current"] = s.current;
  d["peak"] = s.peak;
  d["allocated"] = s.allocated;
  d["freed"] = s.freed;
  return d;
}

// glassbox's own statistics, beside what torch.cuda.host_memory_stats() maps.
py::dict stats() {
  auto* a = glassbox::torch::installed();
  if (a == nullptr) throw py::value_error("glassbox_torch.stats(): call glassbox_torch.install() first");
  const glassbox::host_allocator::HostStats s = a->allocator().stats();
  py::dict d;
  d["allocations"] = stat(s.allocations);
  d["allocated_bytes"] = stat(s.allocated_bytes);
  d["active_requests"] = stat(s.active_requests);
  d["active_bytes"] = stat(s.active_bytes);
  d["num_host_alloc"] = s.num_host_alloc;
  d["num_host_free"] = s.num_host_free;
  d["pending_events"] = s.pending_events;
  d["cached_blocks"] = s.cached_blocks;
  d["cached_bytes"] = s.cached_bytes;
  std::int64_t requests = 0, hits = 0;
  for (const auto& c : s.classes) {
    requests += c.requests;
    hits += c.cache_hits;
  }
  d["requests"] = requests;
  d["cache_hits"] = hits;
  return d;
}
}  // namespace

PYBIND11_MODULE(_glassbox_torch, m) {
  m.doc() = "glassbox's caching pinned-host allocator as PyTorch's, with Prometheus metrics, spans and NVTX";
  m.def("install", &install, py::arg("metrics_addr") = py::none(),
        "Registers glassbox's pinned-host allocator as PyTorch's for CUDA (once per process; safe after PyTorch "
        "handed out pinned memory: those blocks stay PyTorch's). Serves /metrics at metrics_addr (host:port, port 0 "
        "picks one) or GLASSBOX_METRICS_ADDR, and exports spans as OTEL_* / GLASSBOX_TRACE_FILE ask. Returns "
        "{'metrics_url', 'traces'}.");
  m.def("installed", [] { return glassbox::torch::installed() != nullptr; });
  m.def("stats", &stats, "glassbox's statistics of the installed allocator (requests and cache_hits included).");
  m.def("shutdown", &shutdown, "Stops /metrics and flushes the trace exporters (also run at exit).");
}
