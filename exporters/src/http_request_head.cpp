#include "glassbox/exporters/detail/http_request_head.hpp"

#include <algorithm>
#include <cctype>

namespace glassbox::exporters::detail {

namespace {

constexpr ParsedHead kBadRequest{400, {}};

// RFC 9110 section 5.6.2: the characters of a method or a header name.
bool is_token_char(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); });
}

// A request target: visible ASCII only, so no whitespace and no control bytes.
bool is_target(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

// RFC 9110 section 5.5: visible characters, space, tab and obs-text; no CR, LF or NUL.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= ' ' && c != 0x7f);
  });
}

std::string_view trim_whitespace(std::string_view s) {
  std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string_view{} : s.substr(b, e - b + 1);
}

// The next line of `rest` without its CRLF or LF, and `rest` moved past it;
// nullopt when no LF ends it.
std::optional<std::string_view> next_line(std::string_view& rest) {
  std::size_t lf = rest.find('\n');
  if (lf == std::string_view::npos) return std::nullopt;
  std::string_view line = rest.substr(0, lf);
  rest.remove_prefix(lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Whether a comma-separated header value lists `token` (Connection: keep-alive, Upgrade).
bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    if (equals_ignoring_case(trim_whitespace(value.substr(0, comma)), token)) return true;
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
  }
  return false;
}

// The path of an origin-form ("/metrics?x") or absolute-form
// ("http://host/metrics") target, which RFC 9112 section 3.2.2 says a server
// must accept; empty for any other form.
std::string_view path_of(std::string_view target) {
  if (target.front() != '/') {
    std::size_t scheme_end = target.find("://");
    std::string_view scheme = target.substr(0, scheme_end);
    if (scheme_end == std::string_view::npos ||
        !(equals_ignoring_case(scheme, "http") || equals_ignoring_case(scheme, "https")))
      return {};
    std::string_view rest = target.substr(scheme_end + 3);
    std::size_t slash = rest.find_first_of("/?");
    if (slash == std::string_view::npos || rest[slash] == '?') return "/";
    target = rest.substr(slash);
  }
  return target.substr(0, target.find('?'));
}

// "METHOD SP TARGET SP HTTP/1.x", each part checked.
int parse_request_line(std::string_view line, RequestHead& head) {
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return 400;
  head.method = line.substr(0, sp1);
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(head.method) || !is_target(head.target)) return 400;
  if (version.size() != 8 || !version.starts_with("HTTP/") || !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' || !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return 400;
  }
  if (version[5] != '1' || version[7] > '1') return 505;
  head.minor_version = version[7] - '0';
  head.path = path_of(head.target);
  return head.path.empty() ? 400 : 0;
}

// "name: value", the name a token directly followed by its colon.
bool parse_header_line(std::string_view line, RequestHead& head) {
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return false;
  std::string_view value = trim_whitespace(line.substr(colon + 1));
  if (!is_field_value(value)) return false;
  head.headers.push_back({line.substr(0, colon), value});
  return true;
}

std::size_t count_headers(const RequestHead& head, std::string_view name) {
  return static_cast<std::size_t>(std::count_if(head.headers.begin(), head.headers.end(), [&](const HttpHeader& h) {
    return equals_ignoring_case(h.name, name);
  }));
}

// The framing rules that keep a request from being read two ways.
bool framing_is_unambiguous(const RequestHead& head) {
  std::size_t lengths = count_headers(head, "Content-Length");
  if (lengths > 1 || (lengths == 1 && count_headers(head, "Transfer-Encoding") > 0)) return false;
  if (lengths == 1) {
    std::string_view n = *head.header("Content-Length");
    bool digits = std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (n.empty() || n.size() > 18 || !digits) return false;
  }
  return head.minor_version == 0 || count_headers(head, "Host") == 1;
}

}  // namespace

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::size_t HeadScanner::scan(std::string_view buffer) {
  for (; scanned_ < buffer.size(); ++scanned_) {
    if (buffer[scanned_] != '\n') continue;
    std::size_t length = scanned_ - line_start_;
    if (length > 0 && buffer[scanned_ - 1] == '\r') --length;
    line_start_ = scanned_ + 1;
    if (length > 0) {
      seen_request_line_ = true;
    } else if (seen_request_line_) {
      return ++scanned_;
    }
  }
  return 0;
}

std::optional<std::string_view> RequestHead::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (equals_ignoring_case(h.name, name)) return h.value;
  }
  return std::nullopt;
}

bool RequestHead::keep_alive() const {
  bool close = false, keep = false;
  for (const auto& h : headers) {
    if (!equals_ignoring_case(h.name, "Connection")) continue;
    close = close || lists_token(h.value, "close");
    keep = keep || lists_token(h.value, "keep-alive");
  }
  return !close && (minor_version == 1 || keep);
}

bool RequestHead::has_body() const {
  if (header("Transfer-Encoding")) return true;
  auto length = header("Content-Length");
  return length && length->find_first_not_of('0') != std::string_view::npos;
}

ParsedHead parse_request_head(std::string_view bytes) {
  ParsedHead out;
  std::optional<std::string_view> line;
  while ((line = next_line(bytes)) && line->empty()) {}
  if (!line) return kBadRequest;
  if ((out.error_status = parse_request_line(*line, out.head)) != 0) return {out.error_status, {}};
  while ((line = next_line(bytes)) && !line->empty()) {
    if (!parse_header_line(*line, out.head)) return kBadRequest;
  }
  // No blank line, or bytes after it: not one head as HeadScanner finds it.
  if (!line || !bytes.empty() || !framing_is_unambiguous(out.head)) return kBadRequest;
  return out;
}

}  // namespace glassbox::exporters::detail
