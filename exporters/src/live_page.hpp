#pragma once
// The live page at / of the metrics port: one HTML document with its style
// and script inlined (exporters/ui/, embedded at build time by
// cmake/EmbedLivePage.cmake), which polls /metrics on its own origin and draws
// each part's last minutes. Serving it reads a constant; it touches no metric.
#include <string_view>

#include "http_message.hpp"

namespace glassbox::exporters::detail {

/// The page's bytes, compiled into the library.
std::string_view live_page_html();

/// GET /: the page, with a Content-Security-Policy that lets it reach nothing
/// but its own origin (so nothing is fetched from the network).
HttpResponse live_page();

}  // namespace glassbox::exporters::detail
