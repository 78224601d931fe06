#pragma once
// Which handler answers a request: a table of paths, each served for GET and
// HEAD (the server drops HEAD's body), behind basic auth when it is set. Auth
// is checked first, so that without credentials no path, not even a missing
// one, tells anything (401); then an unknown path gets 404 and a method other
// than GET or HEAD 405. A new page is one add() call.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "glassbox/exporters/basic_auth.hpp"
#include "http_message.hpp"

namespace glassbox::exporters::detail {

class HttpRouter {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  explicit HttpRouter(std::optional<BasicAuth> auth) : auth_(std::move(auth)) {}

  /// Serves `path` (exact, without the query) with `handler`.
  void add(std::string path, Handler handler) { routes_[std::move(path)] = std::move(handler); }

  /// Thread-safe once the routes are added: it only reads the table.
  HttpResponse route(const HttpRequest& request) const;

 private:
  std::string page_list() const;  // " /metrics ...": what a 404 points to

  std::optional<BasicAuth> auth_;
  std::map<std::string, Handler, std::less<>> routes_;
};

}  // namespace glassbox::exporters::detail
