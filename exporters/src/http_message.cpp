#include "http_message.hpp"

#include <ctime>

namespace glassbox::exporters::detail {

namespace {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

// RFC 9110 section 6.6.1: an origin server with a clock sends Date.
std::string http_date() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[40];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return text;
}

}  // namespace

HttpRequest HttpRequest::from(const RequestHead& head) {
  HttpRequest r{std::string(head.method), std::string(head.path), {}};
  r.headers.reserve(head.headers.size());
  for (const auto& h : head.headers) r.headers.emplace_back(h.name, h.value);
  return r;
}

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (equals_ignoring_case(n, name)) return v;
  }
  return {};
}

HttpResponse HttpResponse::text(int status, std::string message) {
  HttpResponse r;
  r.status = status;
  r.body = std::to_string(status) + " " + std::string(reason_phrase(status)) + ": " + std::move(message) + "\n";
  return r;
}

std::string to_bytes(const HttpResponse& response, bool head_only, bool keep_alive, int minor_version) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + std::string(reason_phrase(response.status)) +
                    "\r\nDate: " + http_date() + "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\n";
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (minor_version == 0) {
    out += "Connection: keep-alive\r\n";
  }
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace glassbox::exporters::detail
