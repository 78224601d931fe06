// Span API: parenting (also across a thread hand-off), samplers, ids, the
// zero-cost default, and configuration errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>
#include <thread>

#include "glassbox/error.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/span.hpp"

namespace gt = glassbox::trace;

namespace {

// Installs an in-memory processor with the given sampler for one test.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override { install(gt::always_on()); }
  void TearDown() override {
    gt::set_span_processor(nullptr);
    gt::set_sampler(nullptr);
  }
  void install(std::shared_ptr<gt::Sampler> s) {
    gt::set_sampler(std::move(s));
    gt::set_span_processor(processor);
  }
  const gt::SpanData* find(const std::vector<gt::SpanData>& spans, const std::string& name) {
    for (const auto& s : spans) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
  std::shared_ptr<gt::InMemorySpanProcessor> processor = std::make_shared<gt::InMemorySpanProcessor>();
};

}  // namespace

TEST(TraceDefault, WithoutAProcessorSpansRecordNothing) {
  gt::set_span_processor(nullptr);
  gt::Span s("nothing");
  EXPECT_FALSE(s.recording());
  EXPECT_FALSE(s.context().valid());
  EXPECT_FALSE(gt::current_context().valid());
}

TEST_F(TraceTest, ChildSharesTraceAndPointsAtParent) {
  {
    gt::Span parent("parent");
    EXPECT_EQ(gt::current_context(), parent.context());
    gt::Span child("child");
  }
  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 2u);
  const auto* parent = find(spans, "parent");
  const auto* child = find(spans, "child");
  EXPECT_EQ(child->context.trace_id, parent->context.trace_id);
  EXPECT_EQ(child->parent_span_id, parent->context.span_id);
  EXPECT_FALSE(parent->parent_span_id.valid());
  EXPECT_LE(parent->start_unix_ns, child->start_unix_ns);
  EXPECT_GE(parent->end_unix_ns, child->end_unix_ns);
  EXPECT_FALSE(gt::current_context().valid());
}

TEST_F(TraceTest, ParentCarriesAcrossAThreadHandOff) {
  std::uint64_t parent_thread = 0;
  {
    gt::Span parent("request");
    gt::SpanContext captured = gt::current_context();
    std::thread worker([captured] {
      gt::ContextScope scope(captured);
      gt::Span child("work on worker");
    });
    worker.join();
  }
  auto spans = processor->take();
  const auto* parent = find(spans, "request");
  const auto* child = find(spans, "work on worker");
  ASSERT_TRUE(parent && child);
  parent_thread = parent->thread_id;
  EXPECT_EQ(child->context.trace_id, parent->context.trace_id);
  EXPECT_EQ(child->parent_span_id, parent->context.span_id);
  EXPECT_NE(child->thread_id, parent_thread);
}

TEST_F(TraceTest, ContextScopeRestoresThePreviousContext) {
  gt::Span outer("outer");
  gt::SpanContext other{gt::TraceId::random(), gt::SpanId::random(), true, true};
  {
    gt::ContextScope scope(other);
    EXPECT_EQ(gt::current_context(), other);
  }
  EXPECT_EQ(gt::current_context(), outer.context());
}

TEST_F(TraceTest, AttributesAndStatusAreRecorded) {
  {
    gt::Span s("op");
    s.set_attribute("glassbox.device", 3).set_attribute("name", "cublas").set_attribute("ok", true);
    s.set_attribute("ratio", 0.5);
    s.set_status(gt::StatusCode::error, "boom");
  }
  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 1u);
  const auto& a = spans[0].attributes;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(std::get<std::int64_t>(a[0].value), 3);
  EXPECT_EQ(std::get<std::string>(a[1].value), "cublas");
  EXPECT_EQ(std::get<bool>(a[2].value), true);
  EXPECT_EQ(std::get<double>(a[3].value), 0.5);
  EXPECT_EQ(spans[0].status, gt::StatusCode::error);
  EXPECT_EQ(spans[0].status_message, "boom");
}

TEST_F(TraceTest, EndIsIdempotent) {
  gt::Span s("once");
  s.end();
  s.end();
  EXPECT_EQ(processor->take().size(), 1u);
}

TEST(TraceIds, RandomIdsAreValidHexAndDistinct) {
  std::set<std::string> traces, spans;
  const std::regex trace_hex("[0-9a-f]{32}"), span_hex("[0-9a-f]{16}");
  for (int i = 0; i < 10000; ++i) {
    auto t = gt::TraceId::random();
    auto s = gt::SpanId::random();
    ASSERT_TRUE(t.valid() && s.valid());
    ASSERT_TRUE(std::regex_match(t.hex(), trace_hex));
    ASSERT_TRUE(std::regex_match(s.hex(), span_hex));
    traces.insert(t.hex());
    spans.insert(s.hex());
  }
  EXPECT_EQ(traces.size(), 10000u);
  EXPECT_EQ(spans.size(), 10000u);
  EXPECT_FALSE(gt::TraceId{}.valid());
  EXPECT_FALSE(gt::SpanId{}.valid());
}

TEST_F(TraceTest, AlwaysOffDropsButStillPropagatesContext) {
  install(gt::parent_based(gt::always_off()));
  {
    gt::Span root("dropped root");
    EXPECT_FALSE(root.recording());
    EXPECT_TRUE(root.context().valid());
    EXPECT_FALSE(root.context().sampled);
    gt::Span child("dropped child");
    EXPECT_FALSE(child.recording());
    EXPECT_EQ(child.context().trace_id, root.context().trace_id);
  }
  EXPECT_TRUE(processor->take().empty());
}

TEST_F(TraceTest, ParentBasedFollowsASampledRemoteParent) {
  install(gt::parent_based(gt::always_off()));
  gt::SpanContext remote{gt::TraceId::random(), gt::SpanId::random(), true, true};
  {
    gt::ContextScope scope(remote);
    gt::Span s("continues remote trace");
    EXPECT_TRUE(s.recording());
  }
  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].context.trace_id, remote.trace_id);
  EXPECT_EQ(spans[0].parent_span_id, remote.span_id);
}

TEST(Samplers, TraceIdRatioSamplesAboutTheRatioAndIsDeterministic) {
  auto half = gt::trace_id_ratio(0.25);
  int sampled = 0;
  for (int i = 0; i < 20000; ++i) {
    auto id = gt::TraceId::random();
    bool a = half->should_sample({}, id, "x");
    EXPECT_EQ(a, half->should_sample({}, id, "x"));
    sampled += a;
  }
  EXPECT_NEAR(sampled, 5000, 400);  // binomial sd ~61: 6.5 sd of slack
  auto none = gt::trace_id_ratio(0), all = gt::trace_id_ratio(1);
  auto id = gt::TraceId::random();
  EXPECT_FALSE(none->should_sample({}, id, "x"));
  EXPECT_TRUE(all->should_sample({}, id, "x"));
}

TEST(Samplers, EnvironmentNamesEveryStandardSampler) {
  EXPECT_EQ(gt::make_sampler("", "")->description(), "ParentBased{root=AlwaysOnSampler}");
  EXPECT_EQ(gt::make_sampler("always_off", "")->description(), "AlwaysOffSampler");
  EXPECT_EQ(gt::make_sampler("always_on", "")->description(), "AlwaysOnSampler");
  EXPECT_EQ(gt::make_sampler("parentbased_always_off", "")->description(), "ParentBased{root=AlwaysOffSampler}");
  EXPECT_EQ(gt::make_sampler("traceidratio", "0.5")->description(), "TraceIdRatioBased{0.500000}");
  EXPECT_EQ(gt::make_sampler("parentbased_traceidratio", "")->description(),
            "ParentBased{root=TraceIdRatioBased{1.000000}}");
}

TEST(Samplers, BadEnvironmentValuesNameTheVariable) {
  try {
    gt::make_sampler("sometimes", "");
    FAIL();
  } catch (const glassbox::ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("OTEL_TRACES_SAMPLER='sometimes'"), std::string::npos) << m;
    EXPECT_NE(m.find("parentbased_traceidratio"), std::string::npos) << m;
  }
  for (const char* bad : {"1.5", "-0.1", "half", "0.5x"}) {
    try {
      gt::make_sampler("traceidratio", bad);
      FAIL() << bad;
    } catch (const glassbox::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("OTEL_TRACES_SAMPLER_ARG"), std::string::npos) << e.what();
    }
  }
}

TEST(Samplers, InstallingAProcessorReadsTheEnvironment) {
  gt::set_sampler(nullptr);
  ::setenv("OTEL_TRACES_SAMPLER", "always_off", 1);
  gt::set_span_processor(std::make_shared<gt::InMemorySpanProcessor>());
  EXPECT_EQ(gt::sampler()->description(), "AlwaysOffSampler");
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);
  ::setenv("OTEL_TRACES_SAMPLER", "bogus", 1);
  EXPECT_THROW(gt::set_span_processor(std::make_shared<gt::InMemorySpanProcessor>()), glassbox::ConfigError);
  ::unsetenv("OTEL_TRACES_SAMPLER");
  EXPECT_FALSE(gt::tracing_enabled());
}
