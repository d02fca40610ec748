// TlsContext and TlsSession: OpenSSL behind memory BIOs (see tls.h).
//
// Invariants: a session's SSL owns its two memory BIOs (SSL_set_bio); the read BIO holds
// ciphertext not yet consumed by OpenSSL, the write BIO ciphertext not yet taken by the
// server.  After a failure nothing more is decrypted.
#include "node/daemon/http/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fstream>

namespace caesium::daemon {

namespace {

constexpr unsigned char kHandshakeRecord = 0x16;  // TLS record type of a ClientHello

// A readable regular file, or an Error naming `what` and the path.
Status readable(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(what + " " + path + " cannot be read");
  return Status::success();
}

}  // namespace

std::string tls_error_text() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

Result<std::shared_ptr<TlsContext>> TlsContext::server(const TlsFiles& files) {
  ERR_clear_error();
  if (files.cert.empty() || files.key.empty()) return Error("TLS needs both a certificate and a key file");
  if (Status s = readable(files.cert, "the TLS certificate file"); !s.ok()) return s.error();
  if (Status s = readable(files.key, "the TLS key file"); !s.ok()) return s.error();
  if (files.verify_client && files.client_ca.empty()) {
    return Error("verifying client certificates needs a CA file to verify them with");
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Error("OpenSSL could not make a TLS context: " + tls_error_text());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Renegotiation is a CPU-exhaustion lever for a client and nothing the API needs.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return Error("the TLS certificate file " + files.cert + " holds no usable PEM certificate: " + tls_error_text());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL 3 compares the key with the certificate already here.
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    return Error("the TLS key file " + files.key +
                 (mismatch ? " does not match the certificate in " + files.cert : " holds no usable PEM private key") +
                 ": " + tls_error_text());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error("the TLS key file " + files.key + " does not match the certificate in " + files.cert + ": " +
                 tls_error_text());
  }
  if (!files.client_ca.empty()) {
    if (Status s = readable(files.client_ca, "the TLS CA file"); !s.ok()) return s.error();
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca.c_str(), nullptr) != 1) {
      return Error("the TLS CA file " + files.client_ca + " holds no usable PEM certificate: " + tls_error_text());
    }
    if (files.verify_client) {
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
      if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  }
  ERR_clear_error();
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(std::shared_ptr<const TlsContext> context) : context_(std::move(context)) {
  ssl_ = SSL_new(context_->native());
  if (ssl_ == nullptr) {
    error_ = "OpenSSL could not make a session: " + tls_error_text();
    return;
  }
  SSL_set_bio(ssl_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

bool TlsSession::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  ERR_clear_error();
  return false;
}

bool TlsSession::on_input(std::string_view ciphertext, std::string& plaintext) {
  if (ssl_ == nullptr || !error_.empty()) return false;
  if (ciphertext.empty()) return true;
  if (!first_byte_seen_) {
    first_byte_seen_ = true;
    if (static_cast<unsigned char>(ciphertext[0]) != kHandshakeRecord) {
      plaintext_seen_ = true;
      return fail("the client did not start a TLS handshake (plain HTTP to the HTTPS port?)");
    }
  }
  BIO_write(SSL_get_rbio(ssl_), ciphertext.data(), static_cast<int>(ciphertext.size()));
  char buf[16 * 1024];
  for (;;) {
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      plaintext.append(buf, static_cast<size_t>(n));
      continue;
    }
    const int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;  // more input needed
    if (e == SSL_ERROR_ZERO_RETURN) return true;  // close_notify: the socket's EOF follows
    std::string why = tls_error_text();
    if (const long v = SSL_get_verify_result(ssl_); v != X509_V_OK) {
      why = std::string("client certificate refused: ") + X509_verify_cert_error_string(v);
    }
    return fail("TLS failed: " + (why.empty() ? "error " + std::to_string(e) : why));
  }
}

bool TlsSession::write(std::string_view plaintext) {
  if (ssl_ == nullptr || !error_.empty()) return false;
  if (plaintext.empty()) return true;
  const int n = SSL_write(ssl_, plaintext.data(), static_cast<int>(plaintext.size()));
  if (n != static_cast<int>(plaintext.size())) return fail("TLS write failed: " + tls_error_text());
  return true;
}

void TlsSession::shutdown() {
  if (ssl_ == nullptr || shut_ || !error_.empty() || !SSL_is_init_finished(ssl_)) return;
  shut_ = true;
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

std::string TlsSession::take_output() {
  std::string out;
  if (ssl_ == nullptr) return out;
  BIO* w = SSL_get_wbio(ssl_);
  const size_t pending = BIO_ctrl_pending(w);
  if (pending == 0) return out;
  out.resize(pending);
  const int n = BIO_read(w, out.data(), static_cast<int>(pending));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

bool TlsSession::handshake_done() const { return ssl_ != nullptr && SSL_is_init_finished(ssl_); }

}  // namespace caesium::daemon
