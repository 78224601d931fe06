#pragma once
// A TLS client on the system's OpenSSL for tests of a TLS server on loopback:
// it checks the server's certificate against a CA file and the name
// 127.0.0.1, can present a client certificate, and tells which certificate
// the server showed. Blocking, with every socket wait bounded.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "raw_http.hpp"

namespace glassbox::testing {

struct TlsClientOptions {
  std::string ca_file;    ///< the CA the server's certificate must chain to
  std::string cert_file;  ///< a client certificate to present, or none
  std::string key_file;
};

/// SIGPIPE blocked in this thread for a scope: OpenSSL writes with write(),
/// and a server that closed first must fail the client's call, not kill the
/// test. A SIGPIPE raised meanwhile is taken before the mask is restored, so
/// the thread's mask (which threads started later inherit) is left as it was.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    sigpending(&pending);
    timespec zero{0, 0};
    if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe_, nullptr, &zero);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_, old_;
};

class TlsClient {
 public:
  /// Connects and completes the handshake; throws std::runtime_error with
  /// OpenSSL's reason when it fails.
  TlsClient(std::uint16_t port, const TlsClientOptions& o)
      : socket_(port), ctx_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free) {
    timeval limit{5, 0};
    ::setsockopt(socket_.fd(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(socket_.fd(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
    check(SSL_CTX_load_verify_locations(ctx_.get(), o.ca_file.c_str(), nullptr), "loading the CA");
    if (!o.cert_file.empty()) {
      check(SSL_CTX_use_certificate_file(ctx_.get(), o.cert_file.c_str(), SSL_FILETYPE_PEM), "the client cert");
      check(SSL_CTX_use_PrivateKey_file(ctx_.get(), o.key_file.c_str(), SSL_FILETYPE_PEM), "the client key");
    }
    ssl_.reset(SSL_new(ctx_.get()));
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_.get()), "127.0.0.1");
    SSL_set_fd(ssl_.get(), socket_.fd());
    SigpipeBlocked blocked;
    check(SSL_connect(ssl_.get()), "the handshake");
  }

  /// Sends `request` and reads one response (or what came before the server
  /// closed or failed the connection).
  std::string request(const std::string& request) {
    SigpipeBlocked blocked;
    if (SSL_write(ssl_.get(), request.data(), static_cast<int>(request.size())) <= 0) return "";
    std::string in;
    char buf[16384];
    while (!complete(in)) {
      int n = SSL_read(ssl_.get(), buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
    }
    return in;
  }

  /// The common name of the certificate the server presented.
  std::string server_name() const {
    X509* cert = SSL_get1_peer_certificate(ssl_.get());
    char name[256] = "";
    if (cert) X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
    X509_free(cert);
    return name;
  }

 private:
  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };

  static void check(int rc, const std::string& what) {
    if (rc == 1) return;
    char reason[256] = "no reason given";
    if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    throw std::runtime_error("TLS client: " + what + " failed: " + reason);
  }
  static bool complete(const std::string& in) {
    std::size_t head = in.find("\r\n\r\n");
    if (head == std::string::npos) return false;
    std::string length = header_of(in, "Content-Length");
    return in.size() >= head + 4 + (length.empty() ? 0 : std::stoul(length));
  }

  RawConnection socket_;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

}  // namespace glassbox::testing
