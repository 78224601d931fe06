#include "live_page.hpp"

namespace glassbox::exporters::detail {

HttpResponse live_page() {
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = live_page_html();
  // Inline style and script only; fetch() only to this origin's /metrics.
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                         "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

}  // namespace glassbox::exporters::detail
