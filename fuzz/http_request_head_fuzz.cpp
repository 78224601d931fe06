// The /metrics server's request head parser, which reads whatever a client
// on the network sends. Input: one byte choosing how many bytes arrive at a
// time, then the bytes. Properties: HeadScanner finds the same end whether
// the bytes arrive at once or piece by piece; parsing what it delimits
// yields a valid head or 400/505, and parsing the whole input succeeds only
// when it is exactly one head; a valid head has a path starting with '/',
// token names and clean values; printed back canonically it parses to the
// same request.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "glassbox/exporters/detail/http_request_head.hpp"

namespace gd = glassbox::exporters::detail;

namespace {

std::size_t scan_in_pieces(std::string_view bytes, std::size_t piece) {
  gd::HeadScanner scanner;
  for (std::size_t have = piece;; have += piece) {
    if (std::size_t end = scanner.scan(bytes.substr(0, have))) return end;
    if (have >= bytes.size()) return 0;
  }
}

std::string canonical(const gd::RequestHead& h) {
  std::string out = std::string(h.method) + " " + std::string(h.target) + " HTTP/1." + std::to_string(h.minor_version);
  out += "\r\n";
  for (const auto& f : h.headers) out += std::string(f.name) + ": " + std::string(f.value) + "\r\n";
  return out + "\r\n";
}

void check_valid(const gd::RequestHead& h, std::string_view context) {
  fuzz_check(!h.path.empty() && h.path.front() == '/', "a valid head's path starts with '/'", context);
  fuzz_check(h.path.find('?') == std::string_view::npos, "the path has no query", context);
  fuzz_check(h.minor_version == 0 || h.minor_version == 1, "the version is HTTP/1.0 or 1.1", context);
  for (const auto& f : h.headers) {
    fuzz_check(!f.name.empty() && f.name.find_first_of(" \t:\r\n") == std::string_view::npos,
               "a header name is a token", f.name);
    fuzz_check(f.value.find_first_of("\r\n") == std::string_view::npos, "a header value has no CR or LF", f.value);
    fuzz_check(f.value.empty() || (f.value.front() != ' ' && f.value.back() != ' '), "a value is trimmed", f.value);
    fuzz_check(h.header(f.name).has_value(), "every header is found by its name", f.name);
  }
  fuzz_check(h.header("Transfer-Encoding") ? h.has_body() : true, "Transfer-Encoding means a body", context);
}

void check_reprint(const gd::RequestHead& h) {
  const std::string printed = canonical(h);
  gd::ParsedHead again = gd::parse_request_head(printed);
  fuzz_check(again.error_status == 0, "a valid head printed back parses", printed);
  const gd::RequestHead& a = again.head;
  bool same = a.method == h.method && a.target == h.target && a.path == h.path && a.minor_version == h.minor_version &&
              a.headers.size() == h.headers.size() && a.keep_alive() == h.keep_alive() && a.has_body() == h.has_body();
  for (std::size_t i = 0; same && i < a.headers.size(); ++i) {
    same = a.headers[i].name == h.headers[i].name && a.headers[i].value == h.headers[i].value;
  }
  fuzz_check(same, "printed back, a head parses to the same request", printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 16;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  gd::HeadScanner whole;
  const std::size_t end = whole.scan(bytes);
  fuzz_check(scan_in_pieces(bytes, piece) == end, "the scanner finds the same end in pieces", bytes);

  const gd::ParsedHead all = gd::parse_request_head(bytes);
  fuzz_check(all.error_status == 0 ? end == bytes.size() : true, "only exactly one head parses", bytes);
  if (end == 0) return 0;

  const gd::ParsedHead parsed = gd::parse_request_head(bytes.substr(0, end));
  fuzz_check(parsed.error_status == 0 || parsed.error_status == 400 || parsed.error_status == 505,
             "a head is valid, 400 or 505", bytes.substr(0, end));
  if (parsed.error_status != 0) return 0;
  check_valid(parsed.head, bytes.substr(0, end));
  check_reprint(parsed.head);
  return 0;
}
