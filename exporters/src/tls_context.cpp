#include "tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <climits>
#include <cstdio>
#include <tuple>

#include "glassbox/error.hpp"

namespace glassbox::exporters::detail {

namespace {

constexpr auto kCheckEvery = std::chrono::seconds(1);

// OpenSSL's queued errors, oldest first, and the queue emptied.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    out += out.empty() ? text : std::string("; ") + text;
  }
  return out.empty() ? "no reason given" : out;
}

[[noreturn]] void cannot_load(const std::string& what, const std::string& path, const char* variable) {
  throw ConfigError("glassbox /metrics TLS: cannot load " + what + " from '" + path + "' (" + variable +
                    "): " + openssl_errors());
}

void load_client_cas(SSL_CTX* ctx, const std::string& path) {
  constexpr const char* variable = "GLASSBOX_METRICS_TLS_CLIENT_CA_FILE";
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(path.c_str());
  if (!names || SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) != 1) {
    if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
    cannot_load("the client CA certificates", path, variable);
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // tells clients which certificate to present
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
}

std::shared_ptr<SSL_CTX> load(const TlsConfig& c) {
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) throw ConfigError("glassbox /metrics TLS: SSL_CTX_new failed: " + openssl_errors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // A client that closes without close_notify has just left (OpenSSL 3 would
  // call it an error): nothing a request head needs can be truncated.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Writes may be partial and resume from a moved buffer, as the connection's
  // are; idle sessions give their buffers back (1 000 idle connections).
  SSL_CTX_set_mode(ctx.get(),
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), c.cert_file.c_str()) != 1) {
    cannot_load("the certificate chain", c.cert_file, "GLASSBOX_METRICS_TLS_CERT_FILE");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), c.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    cannot_load("a private key that matches the certificate", c.key_file, "GLASSBOX_METRICS_TLS_KEY_FILE");
  }
  if (!c.client_ca_file.empty()) load_client_cas(ctx.get(), c.client_ca_file);
  return ctx;
}

class TlsTransport final : public Transport {
 public:
  explicit TlsTransport(SSL* ssl) : ssl_(ssl) {}
  ~TlsTransport() override { SSL_free(ssl_); }
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  IoResult read(char* into, std::size_t size) override {
    ERR_clear_error();
    int n = SSL_read(ssl_, into, clamp(size));
    return n > 0 ? IoResult{static_cast<std::size_t>(n), IoStatus::done} : failure(n);
  }
  IoResult write(const char* from, std::size_t size) override {
    ERR_clear_error();
    int n = SSL_write(ssl_, from, clamp(size));
    return n > 0 ? IoResult{static_cast<std::size_t>(n), IoStatus::done} : failure(n);
  }
  void say_goodbye() override {
    ERR_clear_error();
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
  }

 private:
  static int clamp(std::size_t size) { return static_cast<int>(std::min<std::size_t>(size, INT_MAX)); }

  IoResult failure(int rc) {
    switch (SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        return {0, IoStatus::want_read};
      case SSL_ERROR_WANT_WRITE:
        return {0, IoStatus::want_write};
      case SSL_ERROR_SSL:
        ERR_clear_error();
        return {0, IoStatus::failed};
      default:  // SSL_ERROR_ZERO_RETURN: close_notify; SSL_ERROR_SYSCALL: EOF or reset
        return {0, IoStatus::closed};
    }
  }

  SSL* ssl_;
};

}  // namespace

struct TlsContext::FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  timespec modified{};
  bool operator==(const FileStamp& o) const {
    return std::tie(device, inode, size, modified.tv_sec, modified.tv_nsec) ==
           std::tie(o.device, o.inode, o.size, o.modified.tv_sec, o.modified.tv_nsec);
  }
};

TlsContext::TlsContext(TlsConfig config, metrics::Counter reloaded, metrics::Counter reload_failed)
    : config_(std::move(config)),
      ctx_(load(config_)),
      loaded_(stamps()),
      next_check_(Clock::now() + kCheckEvery),
      reloaded_(reloaded),
      reload_failed_(reload_failed) {}

TlsContext::~TlsContext() = default;

// stat() follows symbolic links, so a Kubernetes secret's swapped link shows as a change too.
std::vector<TlsContext::FileStamp> TlsContext::stamps() const {
  std::vector<FileStamp> out;
  for (const std::string* path : {&config_.cert_file, &config_.key_file, &config_.client_ca_file}) {
    struct stat s {};
    FileStamp f;
    if (!path->empty() && ::stat(path->c_str(), &s) == 0) f = {s.st_dev, s.st_ino, s.st_size, s.st_mtim};
    out.push_back(f);
  }
  return out;
}

void TlsContext::reload_if_changed(Clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + kCheckEvery;
  std::vector<FileStamp> current = stamps();
  if (current == loaded_) return;
  // loaded_ moves only once the files load: a failed set is tried again at the
  // next check, since what fixes it need not change the stamps (a permission,
  // a key rewritten in place within the clock's resolution).
  try {
    ctx_ = load(config_);
    loaded_ = std::move(current);
    reloaded_.inc();
  } catch (const ConfigError& e) {
    reload_failed_.inc();
    std::fprintf(stderr, "glassbox: %s; /metrics keeps serving the certificate it had\n", e.what());
  }
}

std::unique_ptr<Transport> TlsContext::wrap(int fd, Clock::time_point now) {
  reload_if_changed(now);
  SSL* ssl = SSL_new(ctx_.get());
  if (!ssl) return nullptr;
  SSL_set_fd(ssl, fd);
  SSL_set_accept_state(ssl);
  return std::make_unique<TlsTransport>(ssl);
}

}  // namespace glassbox::exporters::detail
