// The Perfetto / Chrome Trace Event file: spans made through the Span API on
// named threads, written as batches arrive, parsed back: valid JSON, well
// formed events, consistent nesting per thread, flows that connect a parent
// to its children on other threads, and a bound on what waits for a parent;
// and a disk that is full, or fills up while spans stream in.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/exporters/trace_file_exporter.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#include "metric_value.hpp"
#include "trace_file_reader.hpp"

namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
namespace gm = glassbox::metrics;
namespace fs = std::filesystem;
using glassbox::testing::read_trace_file;
using namespace std::chrono_literals;

namespace {

class TraceFileTest : public ::testing::Test {
 protected:
  void SetUp() override { path = glassbox::testing::test_trace_path("glassbox-trace-"); }
  void TearDown() override {
    gt::set_span_processor(nullptr);
    gt::set_sampler(nullptr);
    fs::remove(path);
  }
  std::shared_ptr<ge::TraceFileProcessor> install(std::size_t max_pending_flows = 16384) {
    ge::TraceFileOptions o;
    o.path = path;
    o.max_pending_flows = max_pending_flows;
    o.resource = ge::Resource::make("trace-file-test", "");
    ge::BatchOptions b;
    b.schedule_delay = 10ms;
    b.registry = &registry;
    auto p = std::make_shared<ge::TraceFileProcessor>(o, b);
    gt::set_sampler(gt::always_on());
    gt::set_span_processor(p);
    return p;
  }
  // A parent on this thread hands work to `workers` named threads, each of
  // which nests a span inside its own.
  void handoff(int workers) {
    gt::Span parent("request");
    parent.set_attribute("glassbox.threads", workers).set_attribute("tag", "x").set_attribute("ratio", 0.5);
    { gt::Span local("prepare"); }
    gt::SpanContext handed = gt::current_context();
    std::vector<std::thread> threads;
    for (int i = 0; i < workers; ++i) {
      threads.emplace_back([handed, i] {
        ::pthread_setname_np(::pthread_self(), ("worker-" + std::to_string(i)).c_str());
        gt::ContextScope scope(handed);
        gt::Span work("work");
        gt::Span inner("inner");
      });
    }
    for (auto& t : threads) t.join();
  }

  std::string path;
  gm::Registry registry;
};

}  // namespace

TEST_F(TraceFileTest, SpansOnSeveralThreadsReadBackAsAConsistentTrace) {
  ::pthread_setname_np(::pthread_self(), "test-main");
  auto p = install();
  handoff(3);
  p->shutdown(5s);

  auto t = read_trace_file(path, static_cast<std::uint64_t>(::getpid()));
  EXPECT_EQ(t.process_name, "trace-file-test");
  ASSERT_EQ(t.slices.size(), 1u + 1u + 3u * 2u);
  EXPECT_EQ(t.flows, 3u);  // request -> each worker's "work"; "prepare" and "inner" nest on their threads

  const glassbox::testing::Slice* request = nullptr;
  for (const auto& s : t.slices) {
    if (s.name == "request") request = &s;
  }
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->args.at("glassbox.threads"), 3);
  EXPECT_EQ(request->args.at("tag"), "x");
  EXPECT_EQ(request->args.at("ratio"), 0.5);
  EXPECT_FALSE(request->args.contains("parent_span_id"));
  EXPECT_EQ(t.thread_names.at(request->tid), "test-main");
  std::set<std::string> worker_names;
  for (const auto& s : t.slices) {
    EXPECT_EQ(s.args.at("trace_id"), request->args.at("trace_id"));
    if (s.name == "work") {
      worker_names.insert(t.thread_names.at(s.tid));
      EXPECT_EQ(s.args.at("parent_span_id"), request->args.at("span_id"));
      EXPECT_GE(s.ts, request->ts);
    }
  }
  EXPECT_EQ(worker_names, (std::set<std::string>{"worker-0", "worker-1", "worker-2"}));
  EXPECT_EQ(glassbox::testing::metric_value(registry, "glassbox_spans_exported_total", {{"exporter", "trace_file"}}),
            8);
}

TEST_F(TraceFileTest, EventsReachTheDiskBeforeShutdown) {
  auto p = install();
  { gt::Span s("early"); }
  ASSERT_TRUE(p->force_flush(5s));
  std::string partial = glassbox::testing::read_all(path);
  EXPECT_NE(partial.find("\"early\""), std::string::npos);
  EXPECT_EQ(partial.find("]}"), std::string::npos);  // still open: valid only once closed
  p->shutdown(5s);
  EXPECT_NO_THROW(read_trace_file(path, static_cast<std::uint64_t>(::getpid())));
}

TEST_F(TraceFileTest, AFileWithNoSpansIsStillValid) {
  auto p = install();
  p->shutdown(5s);
  auto t = read_trace_file(path, static_cast<std::uint64_t>(::getpid()));
  EXPECT_TRUE(t.slices.empty());
  EXPECT_EQ(t.process_name, "trace-file-test");
}

TEST_F(TraceFileTest, ManyBatchesStreamIntoOneValidFile) {
  auto p = install();
  for (int round = 0; round < 20; ++round) handoff(2);
  p->shutdown(10s);
  auto t = read_trace_file(path, static_cast<std::uint64_t>(::getpid()));
  EXPECT_EQ(t.slices.size(), 20u * (2 + 2 * 2));
  EXPECT_EQ(t.flows, 20u * 2);
}

// Children whose parent has not ended wait in a bounded table; past the bound
// the oldest parent's children lose their arrows (the spans themselves stay).
TEST_F(TraceFileTest, ChildrenWaitingForAParentAreBounded) {
  gt::SpanData parent;
  parent.name = "parent";
  parent.context = {gt::TraceId::random(), gt::SpanId::random(), true, false};
  parent.thread_id = 1;
  parent.start_unix_ns = 1000;
  parent.end_unix_ns = 9000;
  std::vector<gt::SpanData> batch;
  for (std::uint64_t i = 0; i < 3; ++i) {
    gt::SpanData child = parent;
    child.name = "child";
    child.context.span_id = gt::SpanId::random();
    child.parent_span_id = parent.context.span_id;
    child.thread_id = 2 + i;
    child.start_unix_ns = 2000;
    child.end_unix_ns = 3000;
    batch.push_back(child);
  }
  batch.push_back(parent);
  for (std::size_t bound : {2u, 3u}) {
    ge::TraceFileOptions o;
    o.path = path;
    o.max_pending_flows = bound;
    ge::TraceFileExporter file(o);
    EXPECT_EQ(file.export_spans(batch, {}).dropped, 0u);
    file.shutdown();
    auto t = read_trace_file(path, static_cast<std::uint64_t>(::getpid()));
    EXPECT_EQ(t.slices.size(), 4u);
    EXPECT_EQ(t.flows, bound == 2 ? 0u : 3u) << "bound " << bound;
  }
}

TEST_F(TraceFileTest, AnUnwritablePathIsAnErrorNamingIt) {
  ge::TraceFileOptions o;
  o.path = "/nonexistent-dir/trace.json";
  try {
    ge::TraceFileExporter e(o);
    FAIL();
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GLASSBOX_TRACE_FILE"), std::string::npos) << e.what();
  }
}

// Disk full, two ways: /dev/full refuses the header at once; a file size limit
// (RLIMIT_FSIZE, SIGXFSZ ignored: writes then fail with EFBIG) lets the file
// grow for a while and then refuses, as a filling disk does.
TEST_F(TraceFileTest, ADiskFullAtOpenIsAnErrorSayingSo) {
  ge::TraceFileOptions o;
  o.path = "/dev/full";
  try {
    ge::TraceFileExporter e(o);
    FAIL() << "expected glassbox::Error";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'/dev/full': cannot write its header: No space left on device"),
              std::string::npos)
        << e.what();
  }
}

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    rlimit limit = previous_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit previous_{};
  void (*previous_handler_)(int);
};

TEST_F(TraceFileTest, AFullDiskDropsAndCountsEveryLaterBatchAndSaysWhy) {
  FileSizeLimit limit(64 * 1024);
  ge::TraceFileOptions o;
  o.path = path;
  ge::TraceFileExporter file(o);
  std::vector<gt::SpanData> batch(100);
  for (auto& s : batch) {
    s.name = "span";
    s.context = {gt::TraceId::random(), gt::SpanId::random(), true, false};
    s.start_unix_ns = 1'700'000'000'000'000'000ULL;
    s.end_unix_ns = s.start_unix_ns + 1000;
  }
  int written = 0;
  ge::ExportResult r;
  while ((r = file.export_spans(batch, {})).dropped == 0 && written < 1000) ++written;
  ASSERT_LT(written, 1000) << "the file size limit never hit";
  EXPECT_GT(written, 0) << "the file took nothing before the limit";
  EXPECT_EQ(r.dropped, batch.size());
  EXPECT_EQ(r.reason, ge::DropReason::export_failed);
  EXPECT_NE(file.write_error().find("trace file '" + path + "': writing failed: File too large"), std::string::npos)
      << file.write_error();
  EXPECT_EQ(file.export_spans(batch, {}).dropped, batch.size()) << "a later batch claimed to reach the full file";
  file.shutdown();  // the process goes on; closing a full file is not an error
}

TEST_F(TraceFileTest, BehindTheProcessorEverySpanOnAFullDiskIsWrittenOrCounted) {
  FileSizeLimit limit(64 * 1024);
  auto p = install();
  constexpr int kSpans = 5000;
  for (int i = 0; i < kSpans; ++i) gt::Span s("work");
  ASSERT_TRUE(p->force_flush(10s));
  auto count = [&](const char* family, gm::LabelPairs labels) {
    labels.emplace_back("exporter", "trace_file");
    return glassbox::testing::metric_value(registry, family, labels);
  };
  double exported = count("glassbox_spans_exported_total", {});
  double failed = count("glassbox_spans_dropped_total", {{"reason", "export_failed"}});
  double queue_full = count("glassbox_spans_dropped_total", {{"reason", "queue_full"}});
  EXPECT_GT(failed, 0);
  EXPECT_EQ(exported + failed + queue_full, kSpans);
  { gt::Span after("after the disk filled"); }  // ending spans still costs the caller nothing
  EXPECT_TRUE(p->force_flush(10s));
}
