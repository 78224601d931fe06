#include "glassbox/exporters/basic_auth.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "env_values.hpp"
#include "glassbox/error.hpp"

namespace glassbox::exporters {

namespace {

constexpr const char* kCredentialsVariable = "GLASSBOX_METRICS_BASIC_AUTH";
constexpr const char* kFileVariable = "GLASSBOX_METRICS_BASIC_AUTH_FILE";

// Runs over all of `expected` whatever `given` holds: its time depends on the
// expected length only, never on where the first difference is.
bool constant_time_equal(std::string_view given, std::string_view expected) {
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | (g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

// "Basic <token>" with the scheme in any case (RFC 7235); empty when not basic.
std::string_view basic_token(std::string_view authorization) {
  constexpr std::string_view scheme = "basic ";
  if (authorization.size() < scheme.size()) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return {};
  }
  std::string_view token = authorization.substr(scheme.size());
  token.remove_prefix(std::min(token.find_first_not_of(' '), token.size()));
  return token;
}

std::string base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock ends it with a NUL
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string read_credentials_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(std::string(kFileVariable) + "='" + path + "': cannot read the file (" + std::strerror(errno) +
                      "); expected a readable file holding USER:PASSWORD");
  }
  std::stringstream content;
  content << in.rdbuf();
  std::string text = content.str();
  // Files written by `echo` or editors end in a newline that is not part of the password.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

BasicAuth BasicAuth::parse(std::string_view credentials, const std::string& source) {
  std::size_t colon = credentials.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == credentials.size()) {
    throw ConfigError(source +
                      " is not accepted (value not shown: it holds a password); expected USER:PASSWORD with a "
                      "non-empty USER without ':' and a non-empty PASSWORD, e.g. prometheus:s3cret");
  }
  return {std::string(credentials.substr(0, colon)), std::string(credentials.substr(colon + 1))};
}

std::optional<BasicAuth> BasicAuth::from_env() {
  auto inline_value = detail::env(kCredentialsVariable);
  auto file = detail::env(kFileVariable);
  if (inline_value && file) {
    throw ConfigError(std::string(kCredentialsVariable) + " and " + kFileVariable +
                      " are both set; set only one (the file keeps the password out of the environment)");
  }
  if (inline_value) return parse(*inline_value, kCredentialsVariable);
  if (file) return parse(read_credentials_file(*file), std::string(kFileVariable) + "='" + *file + "' (its content)");
  return std::nullopt;
}

bool BasicAuth::matches(std::string_view authorization) const {
  return constant_time_equal(basic_token(authorization), base64(user + ":" + password));
}

}  // namespace glassbox::exporters
