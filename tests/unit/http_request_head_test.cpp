// The /metrics server's request head parser (detail/http_request_head.hpp):
// where a head ends in bytes that arrive piece by piece, and what is valid.
#include "glassbox/exporters/detail/http_request_head.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>

namespace gd = glassbox::exporters::detail;

namespace {

// A parsed head views its bytes, so every input is kept until the program ends.
gd::ParsedHead parse(std::string bytes) {
  static std::deque<std::string> kept;
  return gd::parse_request_head(kept.emplace_back(std::move(bytes)));
}

}  // namespace

TEST(HttpRequestHead, TheScannerFindsTheEndOncePerByteWhateverThePieces) {
  const std::string request = "\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
  const std::size_t head = request.find("GET /next");
  gd::HeadScanner at_once;
  EXPECT_EQ(at_once.scan(request), head);
  gd::HeadScanner by_byte;
  std::size_t found = 0;
  for (std::size_t n = 1; n <= request.size() && found == 0; ++n)
    found = by_byte.scan(std::string_view(request).substr(0, n));
  EXPECT_EQ(found, head);
  gd::HeadScanner bare_lf;
  EXPECT_EQ(bare_lf.scan("GET / HTTP/1.1\nHost: x\n\n"), 24u);
  gd::HeadScanner unfinished;
  EXPECT_EQ(unfinished.scan("GET /metrics HTTP/1.1\r\nHost: x\r\n"), 0u);
}

TEST(HttpRequestHead, AScrapeParsesIntoItsParts) {
  auto p = parse("GET /metrics?name[]=up HTTP/1.1\r\nHost: 10.0.0.5:9464\r\naccept-encoding:  gzip \r\n\r\n");
  ASSERT_EQ(p.error_status, 0);
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/metrics?name[]=up");
  EXPECT_EQ(p.head.path, "/metrics");
  EXPECT_EQ(p.head.minor_version, 1);
  EXPECT_EQ(p.head.header("Accept-Encoding"), "gzip");
  EXPECT_EQ(p.head.header("X-Missing"), std::nullopt);
  EXPECT_TRUE(p.head.keep_alive());
  EXPECT_FALSE(p.head.has_body());
}

TEST(HttpRequestHead, AbsoluteFormTargetsGiveTheirPath) {
  EXPECT_EQ(parse("GET http://h:9464/metrics?x HTTP/1.1\r\nHost: h\r\n\r\n").head.path, "/metrics");
  EXPECT_EQ(parse("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n").head.path, "/");
  EXPECT_EQ(parse("GET ftp://h/metrics HTTP/1.1\r\nHost: h\r\n\r\n").error_status, 400);
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").error_status, 400);
}

TEST(HttpRequestHead, KeepAliveFollowsTheVersionAndConnection) {
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, CLOSE\r\n\r\n").head.keep_alive());
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive());
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive());
}

TEST(HttpRequestHead, BodiesAreSeenAndAmbiguousFramingRefused) {
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n").head.has_body());
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 000\r\n\r\n").head.has_body());
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").head.has_body());
  for (const char* bad :
       {"Content-Length: 1\r\nContent-Length: 1\r\n", "Content-Length: 1\r\nTransfer-Encoding: x\r\n",
        "Content-Length: +1\r\n", "Content-Length: \r\n", "Content-Length: 1234567890123456789\r\n"}) {
    EXPECT_EQ(parse(std::string("GET / HTTP/1.1\r\nHost: x\r\n") + bad + "\r\n").error_status, 400) << bad;
  }
}

TEST(HttpRequestHead, MalformedHeadsAre400AndOtherVersions505) {
  for (const char* bad :
       {"GET / HTTP/1.1\r\n\r\n", "GET /  HTTP/1.1\r\nHost: x\r\n\r\n", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\x7f\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\tfold\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r\nextra", "GET / HTTP/1.10\r\n\r\n",
        "GET / http/1.1\r\nHost: x\r\n\r\n", ""}) {
    EXPECT_EQ(parse(bad).error_status, 400) << bad;
  }
  EXPECT_EQ(parse("GET / HTTP/2.0\r\nHost: x\r\n\r\n").error_status, 505);
  EXPECT_EQ(parse("GET / HTTP/1.2\r\nHost: x\r\n\r\n").error_status, 505);
}
