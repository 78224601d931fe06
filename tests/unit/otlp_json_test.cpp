// The OTLP/HTTP JSON encoding's corner cases; the common fields are checked
// on a real request in tests/integration/otlp_http_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "glassbox/exporters/otlp_json.hpp"

namespace ge = glassbox::exporters;
namespace gt = glassbox::trace;
using nlohmann::json;

namespace {

json encode_one(const gt::SpanData& s) {
  json j = json::parse(ge::otlp_json(std::span(&s, 1), ge::Resource::make("svc", "")));
  return j["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
}

gt::SpanData sample() {
  gt::SpanData s;
  s.name = "op";
  for (std::uint8_t i = 0; i < 16; ++i) s.context.trace_id.bytes[i] = static_cast<std::uint8_t>(0xa0 + i);
  for (std::uint8_t i = 0; i < 8; ++i) s.context.span_id.bytes[i] = static_cast<std::uint8_t>(0x0f * (i + 1));
  s.context.sampled = true;
  s.start_unix_ns = 18'446'744'073'709'551'615ULL;  // uint64 max: must survive as text
  s.end_unix_ns = 18'446'744'073'709'551'615ULL;
  return s;
}

}  // namespace

TEST(OtlpJson, IdsAreLowercaseHexAndTimesDecimalStrings) {
  json span = encode_one(sample());
  EXPECT_EQ(span["traceId"], "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(span["spanId"], "0f1e2d3c4b5a6978");
  EXPECT_EQ(span["startTimeUnixNano"], "18446744073709551615");
  EXPECT_EQ(span["endTimeUnixNano"], "18446744073709551615");
  EXPECT_FALSE(span.contains("parentSpanId"));  // empty bytes: the proto3 default, left out
  EXPECT_FALSE(span.contains("status"));
  EXPECT_FALSE(span.contains("attributes"));
}

TEST(OtlpJson, Int64ExtremesAndNonFiniteDoublesFollowProto3Json) {
  gt::SpanData s = sample();
  s.attributes = {{"min", std::numeric_limits<std::int64_t>::min()},
                  {"max", std::numeric_limits<std::int64_t>::max()},
                  {"nan", std::nan("")},
                  {"inf", std::numeric_limits<double>::infinity()},
                  {"-inf", -std::numeric_limits<double>::infinity()},
                  {"tiny", 5e-324}};
  json a = encode_one(s)["attributes"];
  EXPECT_EQ(a[0]["value"], json({{"intValue", "-9223372036854775808"}}));
  EXPECT_EQ(a[1]["value"], json({{"intValue", "9223372036854775807"}}));
  EXPECT_EQ(a[2]["value"], json({{"doubleValue", "NaN"}}));
  EXPECT_EQ(a[3]["value"], json({{"doubleValue", "Infinity"}}));
  EXPECT_EQ(a[4]["value"], json({{"doubleValue", "-Infinity"}}));
  EXPECT_EQ(a[5]["value"]["doubleValue"].get<double>(), 5e-324);
}

TEST(OtlpJson, StatusOkHasNoMessageAndKindsAreIntegers) {
  gt::SpanData s = sample();
  s.status = gt::StatusCode::ok;
  s.kind = gt::SpanKind::consumer;
  json span = encode_one(s);
  EXPECT_EQ(span["status"], json({{"code", 1}}));
  EXPECT_EQ(span["kind"], 5);
}

TEST(OtlpJson, EventsCarryTheirTimeNameAndAttributes) {
  gt::SpanData s = sample();
  EXPECT_FALSE(encode_one(s).contains("events"));
  s.events.push_back({"glassbox.host_allocator.oom", 42, {{"glassbox.size", std::int64_t{100}}}});
  json events = encode_one(s)["events"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["timeUnixNano"], "42");
  EXPECT_EQ(events[0]["name"], "glassbox.host_allocator.oom");
  EXPECT_EQ(events[0]["attributes"][0], json({{"key", "glassbox.size"}, {"value", {{"intValue", "100"}}}}));
}

TEST(OtlpJson, StringsAreEscapedAndValidUtf8Kept) {
  gt::SpanData s = sample();
  s.name = "q\"b\\s\n\x01\x1f \xc3\xa9 \xf0\x9f\x98\x80 end";  // quote, backslash, controls, é, an emoji
  EXPECT_EQ(encode_one(s)["name"], s.name);
}

TEST(OtlpJson, InvalidUtf8IsReplacedNotFatal) {
  gt::SpanData s = sample();
  s.name = "bad \xff name";
  s.attributes = {{"k", std::string("\xc3")}};
  json span = encode_one(s);
  EXPECT_EQ(span["name"], "bad \xEF\xBF\xBD name");
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"], "\xEF\xBF\xBD");
  const std::string r = "\xEF\xBF\xBD";
  s.name = "\xed\xa0\x80|\xc0\xaf|\xf4\x90\x80\x80";  // a surrogate, an overlong '/', past U+10FFFF
  EXPECT_EQ(encode_one(s)["name"], r + r + r + "|" + r + r + "|" + r + r + r + r);
}

TEST(OtlpJson, ManySpansShareOneResourceAndScope) {
  std::vector<gt::SpanData> spans(3, sample());
  json j = json::parse(ge::otlp_json(spans, ge::Resource::make("svc", "")));
  ASSERT_EQ(j["resourceSpans"].size(), 1u);
  ASSERT_EQ(j["resourceSpans"][0]["scopeSpans"].size(), 1u);
  EXPECT_EQ(j["resourceSpans"][0]["scopeSpans"][0]["spans"].size(), 3u);
  EXPECT_EQ(j["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"], ge::kScopeName);
}
