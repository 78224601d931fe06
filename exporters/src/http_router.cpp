#include "http_router.hpp"

namespace glassbox::exporters::detail {

std::string HttpRouter::page_list() const {
  std::string list;
  for (const auto& [path, handler] : routes_) list += " " + path;
  return list;
}

HttpResponse HttpRouter::route(const HttpRequest& request) const {
  if (auth_ && !auth_->matches(request.header("Authorization"))) {
    HttpResponse r = HttpResponse::text(401, "this port (/metrics and its live page) needs HTTP basic auth");
    r.headers.emplace_back("WWW-Authenticate", R"(Basic realm="glassbox metrics", charset="UTF-8")");
    return r;
  }
  auto it = routes_.find(request.path);
  if (it == routes_.end()) return HttpResponse::text(404, "the pages here are" + page_list());
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = HttpResponse::text(405, request.method + " is not served here; use GET or HEAD");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  return it->second(request);
}

}  // namespace glassbox::exporters::detail
