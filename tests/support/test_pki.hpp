#pragma once
// Certificates made at test time with the openssl command-line tool: CAs, and
// server and client certificates they sign (P-256 keys, valid for two days),
// in a temporary folder removed with the object. Servers' certificates name
// 127.0.0.1 and localhost, so clients that check the name accept them.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "run_command.hpp"

namespace glassbox::testing {

class TestPki {
 public:
  TestPki() { std::filesystem::create_directories(dir_); }
  ~TestPki() { std::filesystem::remove_all(dir_); }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  /// NAME.crt and NAME.key: a self-signed CA.
  void make_ca(const std::string& name) {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj '/CN=" + name +
        "' -keyout " + name + ".key -out " + name + ".crt");
  }
  /// NAME.crt and NAME.key, signed by CA `ca`, with `name` as its common name.
  void issue(const std::string& name, const std::string& ca, bool server) {
    const std::string ext = server ? "subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth"
                                   : "extendedKeyUsage=clientAuth";
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=" + name + "' -keyout " + name +
        ".key -out " + name + ".csr && printf '" + ext + "\\n' > " + name + ".ext && openssl x509 -req -in " + name +
        ".csr -CA " + ca + ".crt -CAkey " + ca + ".key -CAcreateserial -days 2 -extfile " + name + ".ext -out " + name +
        ".crt");
  }
  /// The path of a file in the folder ("ca.crt").
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  void run(const std::string& command) const {
    CommandResult r = run_command("(cd '" + dir_.string() + "' && " + command + ")");
    if (r.status != 0)
      throw std::runtime_error("openssl failed (is the Debian package 'openssl' installed?):\n" + r.output);
  }
  static std::string unique_name() {
    static std::atomic<int> counter{0};
    return "glassbox-pki-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  }
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() / unique_name();
};

}  // namespace glassbox::testing
