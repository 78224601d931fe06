#pragma once
// The head of an HTTP/1.x request (RFC 9112: the request line, the header
// fields and the blank line that ends them), found in bytes that arrive a
// piece at a time and then parsed. It is the only part of a request /metrics
// reads: a body is never parsed. A detail/ header so that the fuzz target
// (fuzz/http_request_head_fuzz.cpp) and the unit tests reach it.
//
// Strict where leniency has let a proxy in front and the server read one
// request differently (request smuggling): whitespace between a header's
// name and its colon, obsolete line folding, control characters, more than
// one Content-Length, or Content-Length together with Transfer-Encoding are
// all rejected (400), as is an HTTP/1.1 request without exactly one Host.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace glassbox::exporters::detail {

/// Finds the end of a head in a buffer that grows between calls, looking at
/// each byte once (a client that sends one byte at a time costs no more than
/// one that sends the head at once). Lines end in CRLF or a bare LF; empty
/// lines before the request line are skipped, as RFC 9112 section 2.2 allows.
class HeadScanner {
 public:
  /// The head's length (through its blank line) from the start of `buffer`,
  /// or 0 while it is incomplete. `buffer` must begin with every byte given
  /// to earlier calls since construction or reset().
  std::size_t scan(std::string_view buffer);
  void reset() { *this = HeadScanner(); }

 private:
  std::size_t scanned_ = 0;
  std::size_t line_start_ = 0;
  bool seen_request_line_ = false;
};

/// Header names (and tokens such as "close") compare without case.
bool equals_ignoring_case(std::string_view a, std::string_view b);

struct HttpHeader {
  std::string_view name;
  std::string_view value;  ///< without the whitespace around it
};

/// Views into the bytes given to parse_request_head().
struct RequestHead {
  std::string_view method;
  std::string_view target;  ///< as sent
  std::string_view path;    ///< the target's path, without the query: "/metrics"
  int minor_version = 1;    ///< HTTP/1.minor_version
  std::vector<HttpHeader> headers;

  /// The first header named `name` (compared without case), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  /// Whether the client expects the connection to stay open after the answer
  /// (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive").
  bool keep_alive() const;
  /// Whether a body follows the head: Transfer-Encoding, or Content-Length > 0.
  bool has_body() const;
};

struct ParsedHead {
  int error_status = 0;  ///< 0 when `head` is valid; else 400 (malformed) or 505 (a version other than HTTP/1.x)
  RequestHead head;
};

/// Parses a head as HeadScanner delimits it: the request line (optionally
/// after empty lines), header lines, and the blank line.
ParsedHead parse_request_head(std::string_view bytes);

}  // namespace glassbox::exporters::detail
