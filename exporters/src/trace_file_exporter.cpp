#include "glassbox/exporters/trace_file_exporter.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <variant>

#include "env_values.hpp"
#include "glassbox/error.hpp"
#include "json_writer.hpp"

namespace glassbox::exporters {

namespace {

using detail::JsonWriter;

constexpr const char* kCategory = "glassbox";
// v1 flow events pair up by id, category and name.
constexpr const char* kFlowCategory = "glassbox.flow";
constexpr const char* kFlowName = "handoff";

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::uint64_t key(const trace::SpanId& id) {
  std::uint64_t k;
  std::memcpy(&k, id.bytes.data(), sizeof k);
  return k;
}

void arg_value(JsonWriter& w, const trace::AttributeValue& v) {
  struct Visit {
    JsonWriter& w;
    void operator()(bool b) const { w.boolean(b); }
    void operator()(std::int64_t i) const { w.number(i); }
    void operator()(double d) const { w.number(d); }
    void operator()(const std::string& s) const { w.string(s); }
  };
  std::visit(Visit{w}, v);
}

// The fields every event has: name, phase, process and thread.
JsonWriter& event_head(JsonWriter& w, std::string_view name, std::string_view ph, std::uint64_t pid,
                       std::uint64_t tid) {
  return w.begin_object().key("name").string(name).key("ph").string(ph).key("pid").number(pid).key("tid").number(tid);
}

// A point inside [start, end], a little after start: far enough that rounding
// the microsecond text cannot move it onto the slice's own start (where the
// slice and the flow point would tie), and well before any nested span, whose
// start takes far longer than that to record.
std::uint64_t just_inside(std::uint64_t start, std::uint64_t end) {
  constexpr std::uint64_t kOffsetNs = 2;
  return start + std::min(kOffsetNs, (end - start) / 2);
}

}  // namespace

TraceFileOptions TraceFileOptions::from_env() {
  TraceFileOptions o;
  o.path = detail::env("GLASSBOX_TRACE_FILE").value_or("");
  o.resource = Resource::from_env();
  return o;
}

TraceFileExporter::TraceFileExporter(TraceFileOptions options)
    : options_(std::move(options)), origin_ns_(unix_now_ns()), pid_(static_cast<std::uint64_t>(::getpid())) {
  out_ = std::fopen(options_.path.c_str(), "w");
  if (!out_) {
    throw Error("trace file '" + options_.path + "': cannot open for writing: " + std::strerror(errno) +
                " (check GLASSBOX_TRACE_FILE and that its directory exists)");
  }
  buffer_.resize(1 << 18);
  std::setvbuf(out_, buffer_.data(), _IOFBF, buffer_.size());
  std::string header;
  JsonWriter w(header);
  w.begin_object().key("displayTimeUnit").string("ns").key("otherData").begin_object();
  w.key("generator").string("glassbox " + std::string(glassbox_version()));
  w.key("service.name").string(options_.resource.service_name());
  w.key("unix_time_origin_ns").string(std::to_string(origin_ns_));
  w.end_object().key("traceEvents");
  std::fputs((header + "[\n").c_str(), out_);  // the array stays open while events stream in
  event_.clear();
  JsonWriter e(event_);
  event_head(e, "process_name", "M", pid_, pid_).key("args").begin_object().key("name");
  e.string(options_.resource.service_name()).end_object().end_object();
  write(event_);
  if (std::fflush(out_) != 0) {
    int err = errno;
    std::fclose(out_);
    out_ = nullptr;
    throw Error("trace file '" + options_.path + "': cannot write its header: " + std::strerror(err) +
                " (is the disk full?)");
  }
}

TraceFileExporter::~TraceFileExporter() { shutdown(); }

void TraceFileExporter::shutdown() {
  if (!out_) return;
  write_counter_samples();
  std::uint64_t dropped;
  {
    std::lock_guard lock(samples_mu_);
    closed_ = true;
    dropped = samples_dropped_;
  }
  if (dropped > 0) {
    // Said in the file itself, so whoever reads the tracks knows they have gaps.
    event_.clear();
    JsonWriter w(event_);
    event_head(w, "glassbox.counter_samples_dropped", "i", pid_, pid_).key("cat").string(kCategory);
    w.key("s").string("g").key("ts").number(micros(unix_now_ns())).key("args").begin_object();
    w.key("dropped").number(dropped).end_object().end_object();
    write(event_);
  }
  std::fputs("\n]}\n", out_);
  std::fclose(out_);
  out_ = nullptr;
}

void TraceFileExporter::name_thread(std::uint64_t tid, std::string name) {
  std::lock_guard lock(names_mu_);
  new_names_.emplace_back(tid, std::move(name));
}

void TraceFileExporter::add_counter_sample(const trace::CounterSample& sample) noexcept {
  std::lock_guard lock(samples_mu_);
  if (closed_ || samples_.size() >= options_.max_pending_samples) {
    ++samples_dropped_;
    return;
  }
  try {
    samples_.push_back({std::string(sample.track), sample.value, sample.unix_ns});
  } catch (...) {
    ++samples_dropped_;  // out of memory
  }
}

std::uint64_t TraceFileExporter::counter_samples_dropped() const {
  std::lock_guard lock(samples_mu_);
  return samples_dropped_;
}

// Counter events belong to the process; Perfetto draws one track per name.
void TraceFileExporter::write_counter_samples() {
  std::vector<QueuedSample> samples;
  {
    std::lock_guard lock(samples_mu_);
    samples.swap(samples_);
  }
  for (const auto& s : samples) {
    event_.clear();
    JsonWriter w(event_);
    event_head(w, s.track, "C", pid_, pid_).key("cat").string(kCategory).key("ts").number(micros(s.unix_ns));
    w.key("args").begin_object().key("value").number(s.value).end_object().end_object();
    write(event_);
  }
}

ExportResult TraceFileExporter::export_spans(std::span<const trace::SpanData> spans, Clock::time_point) {
  if (!out_) return {spans.size(), DropReason::shutdown};
  write_thread_names();
  write_counter_samples();
  for (const auto& s : spans) {
    write_span(s);
    write_flows_to_children(s);
    wait_for_parent(s);
  }
  if (std::fflush(out_) != 0 || std::ferror(out_)) {
    report_write_failure(errno);
    return {spans.size(), DropReason::export_failed};
  }
  return {};
}

// Once: a full disk fails every later batch too, and one line says it all.
void TraceFileExporter::report_write_failure(int err) {
  if (!write_error_.empty()) return;
  write_error_ = "trace file '" + options_.path + "': writing failed: " + std::strerror(err) +
                 "; its spans are dropped from here on and counted in glassbox_spans_dropped_total"
                 "{exporter=\"trace_file\",reason=\"export_failed\"}";
  std::fprintf(stderr, "glassbox: %s\n", write_error_.c_str());
}

void TraceFileExporter::write(const std::string& event) {
  if (!first_event_) std::fputs(",\n", out_);
  first_event_ = false;
  std::fwrite(event.data(), 1, event.size(), out_);
}

void TraceFileExporter::write_thread_names() {
  std::vector<std::pair<std::uint64_t, std::string>> names;
  {
    std::lock_guard lock(names_mu_);
    names.swap(new_names_);
  }
  for (const auto& [tid, name] : names) {
    event_.clear();
    JsonWriter w(event_);
    event_head(w, "thread_name", "M", pid_, tid).key("args").begin_object().key("name").string(name);
    w.end_object().end_object();
    write(event_);
  }
}

double TraceFileExporter::micros(std::uint64_t unix_ns) const {
  return static_cast<double>(static_cast<std::int64_t>(unix_ns - origin_ns_)) / 1000.0;
}

void TraceFileExporter::write_span(const trace::SpanData& s) {
  std::uint64_t end = std::max(s.end_unix_ns, s.start_unix_ns);
  event_.clear();
  JsonWriter w(event_);
  event_head(w, s.name, "X", pid_, s.thread_id).key("cat").string(kCategory);
  w.key("ts").number(micros(s.start_unix_ns)).key("dur").number(static_cast<double>(end - s.start_unix_ns) / 1000.0);
  w.key("args").begin_object();
  for (const auto& a : s.attributes) {
    w.key(a.key);
    arg_value(w, a.value);
  }
  w.key("trace_id").string(s.context.trace_id.hex()).key("span_id").string(s.context.span_id.hex());
  if (s.parent_span_id.valid()) w.key("parent_span_id").string(s.parent_span_id.hex());
  if (s.status != trace::StatusCode::unset) w.key("status").string(s.status == trace::StatusCode::ok ? "ok" : "error");
  if (!s.status_message.empty()) w.key("status_message").string(s.status_message);
  w.end_object().end_object();
  write(event_);
  for (const auto& e : s.events) write_instant(e, s.thread_id);
}

// A span event as an instant event on the span's thread ("s": "t": thread scope).
void TraceFileExporter::write_instant(const trace::SpanEvent& e, std::uint64_t tid) {
  event_.clear();
  JsonWriter w(event_);
  event_head(w, e.name, "i", pid_, tid).key("cat").string(kCategory).key("s").string("t");
  w.key("ts").number(micros(e.time_unix_ns)).key("args").begin_object();
  for (const auto& a : e.attributes) {
    w.key(a.key);
    arg_value(w, a.value);
  }
  w.end_object().end_object();
  write(event_);
}

void TraceFileExporter::write_flow_point(std::string_view ph, const std::string& id, std::uint64_t tid,
                                         std::uint64_t unix_ns) {
  event_.clear();
  JsonWriter w(event_);
  event_head(w, kFlowName, ph, pid_, tid).key("cat").string(kFlowCategory).key("id").string(id);
  if (ph == "f") w.key("bp").string("e");  // bind to the enclosing slice: the child
  w.key("ts").number(micros(unix_ns)).end_object();
  write(event_);
}

void TraceFileExporter::write_flows_to_children(const trace::SpanData& parent) {
  auto it = waiting_.find(key(parent.context.span_id));
  if (it == waiting_.end()) return;
  std::uint64_t parent_end = std::max(parent.end_unix_ns, parent.start_unix_ns);
  for (const Child& c : it->second.children) {
    if (c.tid == parent.thread_id) continue;  // nesting on one thread shows the relation already
    std::string id = c.id.hex();
    write_flow_point("s", id, parent.thread_id, just_inside(parent.start_unix_ns, parent_end));
    write_flow_point("f", id, c.tid, just_inside(c.start_ns, c.end_ns));
  }
  waiting_children_ -= it->second.children.size();
  ages_.erase(it->second.age);
  waiting_.erase(it);
}

void TraceFileExporter::wait_for_parent(const trace::SpanData& child) {
  if (!child.parent_span_id.valid()) return;
  std::uint64_t parent = key(child.parent_span_id);
  auto [it, inserted] = waiting_.try_emplace(parent);
  if (inserted) it->second.age = ages_.insert(ages_.end(), parent);
  it->second.children.push_back(
      {child.thread_id, child.start_unix_ns, std::max(child.end_unix_ns, child.start_unix_ns), child.context.span_id});
  ++waiting_children_;
  while (waiting_children_ > options_.max_pending_flows) {
    auto oldest = waiting_.find(ages_.front());
    waiting_children_ -= oldest->second.children.size();
    waiting_.erase(oldest);
    ages_.pop_front();
  }
}

TraceFileProcessor::TraceFileProcessor(TraceFileOptions options, BatchOptions batch)
    : TraceFileProcessor(std::make_unique<TraceFileExporter>(std::move(options)), batch) {}

TraceFileProcessor::TraceFileProcessor(std::unique_ptr<TraceFileExporter> file, BatchOptions batch)
    : file_(file.get()), batch_(std::move(file), batch) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
}

bool TraceFileProcessor::force_flush(std::chrono::milliseconds timeout) {
  trace::flush_counter_tracks();
  return batch_.force_flush(timeout);
}

void TraceFileProcessor::shutdown(std::chrono::milliseconds timeout) {
  trace::flush_counter_tracks();
  batch_.shutdown(timeout);
}

void TraceFileProcessor::on_end(trace::SpanData&& span) noexcept {
  thread_local std::uint64_t named_for = 0;
  if (named_for != id_) {
    char name[64] = {};
    ::pthread_getname_np(::pthread_self(), name, sizeof name);
    try {
      file_->name_thread(span.thread_id, name);
      named_for = id_;
    } catch (...) {
      // Out of memory: the thread stays unnamed in the file; its spans still go in.
    }
  }
  batch_.on_end(std::move(span));
}

}  // namespace glassbox::exporters
