// W3C traceparent/tracestate: the specification's valid and invalid forms,
// and a trace continued from an incoming request into work on another thread.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

#include "glassbox/trace/context.hpp"
#include "glassbox/trace/in_memory_span_processor.hpp"
#include "glassbox/trace/propagation.hpp"
#include "glassbox/trace/span.hpp"

namespace gt = glassbox::trace;

namespace {

constexpr const char* kExample = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

using Headers = std::map<std::string, std::string, std::less<>>;

gt::PropagatedContext extract_from(const Headers& h) {
  return gt::extract([&](std::string_view name) -> std::string_view {
    auto it = h.find(name);
    return it == h.end() ? std::string_view{} : std::string_view(it->second);
  });
}

Headers inject_into(const gt::SpanContext& c, std::string_view state) {
  Headers h;
  gt::inject(c, state, [&](std::string_view name, const std::string& value) { h[std::string(name)] = value; });
  return h;
}

}  // namespace

TEST(Traceparent, ParsesTheSpecificationsExample) {
  auto c = gt::parse_traceparent(kExample);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id.hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_TRUE(c->remote);
  EXPECT_EQ(gt::format_traceparent(*c), kExample);
}

TEST(Traceparent, SampledIsBitZeroOfTheFlags) {
  EXPECT_FALSE(gt::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  EXPECT_TRUE(gt::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")->sampled);
  EXPECT_FALSE(gt::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02")->sampled);
}

TEST(Traceparent, RejectsWhatTheSpecificationCallsInvalid) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 has 4 fields only
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // nor trailing text
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase hex
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // not hex
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // wrong separator
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   // misplaced dash
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version: extra needs a dash
       }) {
    EXPECT_FALSE(gt::parse_traceparent(bad).has_value()) << bad;
  }
}

TEST(Traceparent, ALaterVersionIsReadAsVersion00) {
  auto c = gt::parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->span_id.hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(gt::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").has_value());
}

TEST(Traceparent, AnInvalidContextFormatsAsNothing) {
  EXPECT_EQ(gt::format_traceparent({}), "");
  gt::SpanContext unsampled{gt::TraceId::random(), gt::SpanId::random(), false, false};
  EXPECT_TRUE(gt::format_traceparent(unsampled).ends_with("-00"));
}

TEST(Tracestate, KeepsValidMembersInOrderWithoutBlanks) {
  EXPECT_EQ(gt::normalize_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  EXPECT_EQ(gt::normalize_tracestate(" rojo=1 ,\t, congo=2 "), "rojo=1,congo=2");
  EXPECT_EQ(gt::normalize_tracestate("tenant1@vendor=x,a_b-c*d/e=v w"), "tenant1@vendor=x,a_b-c*d/e=v w");
  EXPECT_EQ(gt::normalize_tracestate("rojo=a b "), "rojo=a b");  // a trailing blank is list whitespace
  EXPECT_EQ(gt::normalize_tracestate(""), "");
}

TEST(Tracestate, DropsTheWholeHeaderWhenAMemberIsInvalid) {
  for (const char* bad : {
           "Rojo=1",               // uppercase key
           "1abc=1",               // simple key must start with a letter
           "rojo",                 // no value
           "rojo=",                // empty value
           "rojo=a=b",             // '=' in value
           "rojo=1,rojo=2",        // duplicate key
           "t@Vendor=1",           // system id must be lowercase
           "t@v12345678901234=1",  // system id longer than 14
       }) {
    EXPECT_EQ(gt::normalize_tracestate(bad), "") << bad;
  }
  std::string many;
  for (int i = 0; i < 33; ++i) many += "k" + std::to_string(i) + "=v,";
  EXPECT_EQ(gt::normalize_tracestate(many), "");
  many.clear();
  for (int i = 0; i < 32; ++i) many += "k" + std::to_string(i) + "=v,";
  EXPECT_NE(gt::normalize_tracestate(many), "");
}

TEST(Propagation, InjectThenExtractRoundTrips) {
  gt::SpanContext c{gt::TraceId::random(), gt::SpanId::random(), true, false};
  Headers h = inject_into(c, "vendor=x");
  EXPECT_EQ(h.at("traceparent"), gt::format_traceparent(c));
  EXPECT_EQ(h.at("tracestate"), "vendor=x");
  auto back = extract_from(h);
  EXPECT_EQ(back.context.trace_id, c.trace_id);
  EXPECT_EQ(back.context.span_id, c.span_id);
  EXPECT_TRUE(back.context.sampled);
  EXPECT_TRUE(back.context.remote);
  EXPECT_EQ(back.tracestate, "vendor=x");
}

TEST(Propagation, NothingIsInjectedForAnInvalidContextAndNoEmptyTracestate) {
  EXPECT_TRUE(inject_into({}, "vendor=x").empty());
  gt::SpanContext c{gt::TraceId::random(), gt::SpanId::random(), true, false};
  EXPECT_EQ(inject_into(c, "").count("tracestate"), 0u);
}

TEST(Propagation, TracestateWithoutAValidTraceparentIsIgnored) {
  auto got = extract_from({{"traceparent", "garbage"}, {"tracestate", "vendor=x"}});
  EXPECT_FALSE(got.context.valid());
  EXPECT_EQ(got.tracestate, "");
  EXPECT_FALSE(extract_from({}).context.valid());
}

// An incoming request's trace continues into a server span, and from there
// into work handed to another thread, as it would into backward()'s workers.
TEST(Propagation, AnIncomingTraceContinuesAcrossAThreadHandOff) {
  auto processor = std::make_shared<gt::InMemorySpanProcessor>();
  gt::set_sampler(gt::parent_based(gt::always_off()));  // only the caller's decision can sample
  gt::set_span_processor(processor);
  auto incoming = extract_from({{"traceparent", kExample}});
  Headers outgoing;
  {
    gt::ContextScope scope(incoming.context);
    gt::Span server("handle request", gt::SpanKind::server);
    gt::SpanContext handed = gt::current_context();
    std::thread worker([handed] {
      gt::ContextScope on_worker(handed);
      gt::Span work("backward on worker");
    });
    worker.join();
    outgoing = inject_into(gt::current_context(), incoming.tracestate);
  }
  gt::set_span_processor(nullptr);
  gt::set_sampler(nullptr);

  auto spans = processor->take();
  ASSERT_EQ(spans.size(), 2u);
  const auto& work = spans[0].name == "backward on worker" ? spans[0] : spans[1];
  const auto& server = spans[0].name == "handle request" ? spans[0] : spans[1];
  EXPECT_EQ(server.context.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(server.parent_span_id.hex(), "00f067aa0ba902b7");
  EXPECT_EQ(server.kind, gt::SpanKind::server);
  EXPECT_EQ(work.context.trace_id, server.context.trace_id);
  EXPECT_EQ(work.parent_span_id, server.context.span_id);
  // Downstream sees this service's server span as its parent.
  EXPECT_EQ(outgoing.at("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-" + server.context.span_id.hex() + "-01");
}
