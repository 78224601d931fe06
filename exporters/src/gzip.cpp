#include "gzip.hpp"

#include <zlib.h>

#include "glassbox/error.hpp"

namespace glassbox::exporters::detail {

std::string gzip(std::string_view data) {
  z_stream zs{};
  // windowBits 15 + 16 asks zlib for a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error("gzip: deflate did not finish (" + std::to_string(rc) + ")");
  return out;
}

}  // namespace glassbox::exporters::detail
