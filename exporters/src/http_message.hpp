#pragma once
// A request as /metrics's handlers see it, and the answer they give, with the
// bytes that go on the wire. The request owns its strings: handlers run on the
// server's worker thread while the connection's buffer stays with the loop.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glassbox/exporters/detail/http_request_head.hpp"

namespace glassbox::exporters::detail {

struct HttpRequest {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpRequest from(const RequestHead& head);
  /// The first header named `name` (compared without case); "" when absent.
  std::string_view header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< beyond the ones to_bytes() writes

  /// A short text/plain answer ("404 Not Found: ...").
  static HttpResponse text(int status, std::string message);
};

/// The status line, Date, Content-Type, Content-Length, Connection (when the
/// connection closes, or stays open for HTTP/1.0), `response.headers`, and the
/// body unless `head_only` (HEAD: the same headers, no body).
std::string to_bytes(const HttpResponse& response, bool head_only, bool keep_alive, int minor_version);

}  // namespace glassbox::exporters::detail
