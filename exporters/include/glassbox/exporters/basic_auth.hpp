#pragma once
// HTTP basic authentication (RFC 7617) for /metrics, for serving it beyond
// loopback. Credentials come from code or from the environment; error
// messages name the source but never echo a password.
#include <optional>
#include <string>
#include <string_view>

namespace glassbox::exporters {

struct BasicAuth {
  std::string user;
  std::string password;

  /// "USER:PASSWORD", split at the first ':' (so a user has none); both parts
  /// non-empty. Throws ConfigError naming `source` without showing the value.
  static BasicAuth parse(std::string_view credentials, const std::string& source);

  /// From GLASSBOX_METRICS_BASIC_AUTH (USER:PASSWORD) or
  /// GLASSBOX_METRICS_BASIC_AUTH_FILE (a file holding USER:PASSWORD, so the
  /// secret is in neither argv nor the environment); nullopt when neither is
  /// set. Both set, an unreadable file or a malformed value throw ConfigError.
  static std::optional<BasicAuth> from_env();

  /// True when `authorization` (an Authorization header's value) carries these
  /// credentials. The comparison takes the same time wherever the first
  /// differing byte is, so timing does not reveal a prefix of the secret.
  bool matches(std::string_view authorization) const;
};

}  // namespace glassbox::exporters
