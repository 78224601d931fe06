#pragma once
// gzip (RFC 1952) for OTLP request bodies with Content-Encoding: gzip.
#include <string>
#include <string_view>

namespace glassbox::exporters::detail {

/// Throws glassbox::Error if zlib fails (it only does when out of memory).
std::string gzip(std::string_view data);

}  // namespace glassbox::exporters::detail
