#include "glassbox/exporters/tracing_setup.hpp"

#include <vector>

#include "glassbox/exporters/otlp_http_exporter.hpp"
#include "glassbox/exporters/trace_file_exporter.hpp"
#include "glassbox/trace/counter_track.hpp"
#include "glassbox/trace/multi_span_processor.hpp"

namespace glassbox::exporters {

TracingSetup TracingSetup::from_env() {
  std::vector<std::shared_ptr<trace::SpanProcessor>> processors;
  std::string description;
  if (otlp_configured_in_env()) {
    auto options = OtlpHttpOptions::from_env();
    description += "otlp -> " + options.url;
    processors.push_back(make_otlp_processor(std::move(options)));
  }
  if (auto file = TraceFileOptions::from_env(); !file.path.empty()) {
    description += (description.empty() ? "file " : ", file ") + file.path + " (open it at https://ui.perfetto.dev)";
    auto file_processor = std::make_shared<TraceFileProcessor>(std::move(file), BatchOptions::from_env());
    trace::set_counter_sink(file_processor);  // pinned bytes and handles as counter tracks
    processors.push_back(std::move(file_processor));
  }
  if (processors.empty()) return TracingSetup(nullptr, "traces: off");
  auto processor =
      processors.size() == 1 ? processors.front() : std::make_shared<trace::MultiSpanProcessor>(std::move(processors));
  trace::set_span_processor(processor);
  return TracingSetup(std::move(processor), "traces: " + description);
}

TracingSetup::TracingSetup(std::shared_ptr<trace::SpanProcessor> processor, std::string description)
    : processor_(std::move(processor)), description_(std::move(description)) {}

TracingSetup::~TracingSetup() { shutdown(); }

void TracingSetup::shutdown(std::chrono::milliseconds timeout) {
  if (!processor_) return;
  trace::set_span_processor(nullptr);
  trace::set_counter_sink(nullptr);  // the file's processor gets the tracks' last values first
  processor_->shutdown(timeout);
  processor_.reset();
}

}  // namespace glassbox::exporters
