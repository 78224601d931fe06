// Tracing on the caller's thread and on the export thread:
// - a span the sampler drops (target: at most 20 ns),
// - a recorded span with three attributes, handed to a BatchSpanProcessor
//   whose thread exports in the background (target: at most 300 ns),
// - how many spans per second the export thread gets out: OTLP JSON encoding
//   alone, OTLP/HTTP to a loopback collector, and the trace file.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "glassbox/exporters/batch_span_processor.hpp"
#include "glassbox/exporters/otlp_http_exporter.hpp"
#include "glassbox/exporters/otlp_json.hpp"
#include "glassbox/exporters/trace_file_exporter.hpp"
#include "glassbox/trace/span.hpp"

namespace {

namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
namespace gm = glassbox::metrics;
using namespace std::chrono_literals;

gm::Registry& bench_registry() {
  static gm::Registry registry;
  return registry;
}

// Takes batches and lets them go: the caller-side cost without an export's CPU
// time competing for this machine's two cores.
class DiscardExporter final : public ge::SpanExporter {
 public:
  std::string_view name() const noexcept override { return "discard"; }
  ge::ExportResult export_spans(std::span<const gt::SpanData> spans, Clock::time_point) override {
    benchmark::DoNotOptimize(spans.data());
    return {};
  }
};

// Accepts every POST without reading the JSON, on an ephemeral loopback port.
// TCP_NODELAY as real collectors set it: without it the reply's headers and
// body wait on Nagle and delayed ACKs, 40 ms a request.
class LoopbackCollector {
 public:
  LoopbackCollector() {
    server_.set_tcp_nodelay(true);
    server_.Post("/v1/traces",
                 [](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~LoopbackCollector() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

double counter(const char* name, const char* exporter, const char* reason = nullptr) {
  gm::LabelPairs labels{{"exporter", exporter}};
  if (reason) labels.emplace_back("reason", reason);
  auto snap = bench_registry().snapshot();
  const auto* s = gm::find_series(snap, name, labels);
  return s ? s->value : 0;
}

void install(std::shared_ptr<gt::SpanProcessor> processor, std::shared_ptr<gt::Sampler> sampler) {
  gt::set_sampler(std::move(sampler));
  gt::set_span_processor(std::move(processor));
}

void uninstall(gt::SpanProcessor& p) {
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  p.shutdown(30s);
}

ge::BatchOptions batch_options() {
  ge::BatchOptions o;  // the OpenTelemetry defaults: queue 2048, batch 512, 5 s
  o.registry = &bench_registry();
  return o;
}

void BM_SpanOff(benchmark::State& state) {
  gt::set_span_processor(nullptr);
  for (auto _ : state) {
    gt::Span s("glassbox.bench.span");
    benchmark::DoNotOptimize(s.recording());
  }
}
BENCHMARK(BM_SpanOff);

void BM_SpanDroppedBySampler(benchmark::State& state) {
  auto p = std::make_shared<ge::BatchSpanProcessor>(std::make_unique<DiscardExporter>(), batch_options());
  install(p, gt::parent_based(gt::always_off()));
  for (auto _ : state) {
    gt::Span s("glassbox.bench.span");
    benchmark::DoNotOptimize(s.recording());
  }
  uninstall(*p);
}
BENCHMARK(BM_SpanDroppedBySampler);

// Three attributes as instrumented code sets them: an integer, a string, a bool.
template <class MakeExporter>
void recorded_span(benchmark::State& state, MakeExporter make_exporter, const char* exporter) {
  auto p = std::make_shared<ge::BatchSpanProcessor>(make_exporter(), batch_options());
  install(p, gt::always_on());
  double dropped_before = counter("glassbox_spans_dropped_total", exporter, "queue_full");
  double exported_before = counter("glassbox_spans_exported_total", exporter);
  for (auto _ : state) {
    gt::Span s("glassbox.handle_pool.create");
    s.set_attribute("glassbox.device", 3)
        .set_attribute("glassbox.library", "cublas")
        .set_attribute("glassbox.reused", true);
  }
  uninstall(*p);
  double dropped = counter("glassbox_spans_dropped_total", exporter, "queue_full") - dropped_before;
  double exported = counter("glassbox_spans_exported_total", exporter) - exported_before;
  state.counters["dropped_pct"] = 100.0 * dropped / std::max(1.0, dropped + exported);
  state.SetItemsProcessed(state.iterations());
}

void BM_SpanRecordedDiscardExport(benchmark::State& state) {
  recorded_span(
      state, [] { return std::make_unique<DiscardExporter>(); }, "discard");
}
BENCHMARK(BM_SpanRecordedDiscardExport);

void BM_SpanRecordedOtlpExport(benchmark::State& state) {
  LoopbackCollector collector;
  recorded_span(
      state,
      [&] {
        ge::OtlpHttpOptions o;
        o.url = collector.url();
        o.registry = &bench_registry();
        return std::make_unique<ge::OtlpHttpExporter>(o);
      },
      "otlp");
}
BENCHMARK(BM_SpanRecordedOtlpExport);

std::vector<gt::SpanData> batch_of_spans(std::size_t n) {
  std::vector<gt::SpanData> spans(n);
  auto parent = gt::SpanId::random();
  auto trace = gt::TraceId::random();
  for (auto& s : spans) {
    s.name = "glassbox.handle_pool.create";
    s.context = {trace, gt::SpanId::random(), true, false};
    s.parent_span_id = parent;
    s.start_unix_ns = 1'763'800'000'000'000'000ULL;
    s.end_unix_ns = s.start_unix_ns + 2'000'000;
    s.thread_id = 4242;
    s.attributes = {
        {"glassbox.device", std::int64_t{3}}, {"glassbox.library", std::string("cublas")}, {"glassbox.reused", true}};
  }
  return spans;
}

void BM_ExportOtlpJsonEncode(benchmark::State& state) {
  auto spans = batch_of_spans(512);
  auto resource = ge::Resource::make("bench", "");
  std::size_t bytes = 0;
  for (auto _ : state) bytes = ge::otlp_json(spans, resource).size();
  state.SetItemsProcessed(state.iterations() * 512);
  state.counters["bytes_per_span"] = static_cast<double>(bytes) / 512.0;
}
BENCHMARK(BM_ExportOtlpJsonEncode)->Unit(benchmark::kMicrosecond);

void BM_ExportOtlpHttp(benchmark::State& state) {
  LoopbackCollector collector;
  ge::OtlpHttpOptions o;
  o.url = collector.url();
  o.gzip = state.range(0) != 0;
  o.registry = &bench_registry();
  ge::OtlpHttpExporter exporter(o);
  auto spans = batch_of_spans(512);
  for (auto _ : state) {
    auto r = exporter.export_spans(spans, ge::SpanExporter::Clock::now() + 10s);
    if (r.dropped != 0) state.SkipWithError("the loopback collector refused a batch");
  }
  state.SetItemsProcessed(state.iterations() * 512);
}
BENCHMARK(BM_ExportOtlpHttp)->Arg(0)->Arg(1)->ArgName("gzip")->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ExportTraceFile(benchmark::State& state) {
  auto path = std::filesystem::temp_directory_path() / "glassbox-bench-trace.json";
  ge::TraceFileOptions o;
  o.path = path.string();
  ge::TraceFileExporter file(o);
  auto spans = batch_of_spans(512);
  for (auto _ : state) file.export_spans(spans, {});
  file.shutdown();
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * 512);
}
BENCHMARK(BM_ExportTraceFile)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
