// TLS for the API server, over the libuv streams it already has: OpenSSL with memory
// BIOs, so no socket is handed to OpenSSL and the server keeps its own reads, writes,
// timeouts and limits.  The server puts the bytes it reads into a TlsSession and gets
// plaintext back; it gives plaintext to write and takes the ciphertext to put on the
// socket (handshake records and alerts included).  No I/O here.
//
// TlsContext is the configuration of one server: its certificate chain and key, and
// optionally a CA whose client certificates it requires (mutual TLS).  TLS 1.2 at
// least; OpenSSL's default cipher suites.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

struct ssl_ctx_st;
struct ssl_st;

namespace caesium::daemon {

struct TlsFiles {
  std::string cert;        // PEM: the certificate, then any intermediates
  std::string key;         // PEM: its private key
  std::string client_ca;   // PEM: CAs whose client certificates are accepted ("" = none asked)
  bool verify_client = false;  // require a client certificate signed by client_ca
};

class TlsContext {
 public:
  // Loads and checks the files: an Error naming the file and OpenSSL's reason when one
  // cannot be read, is not PEM, or the key does not match the certificate.
  static Result<std::shared_ptr<TlsContext>> server(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* native() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// One server-side connection.  Keeps its context alive.
class TlsSession {
 public:
  explicit TlsSession(std::shared_ptr<const TlsContext> context);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Bytes read from the socket: drives the handshake and appends what they decrypt to
  // `plaintext`.  False on a TLS failure (a bad handshake, a certificate refused, a
  // corrupt record): error() says why; the connection is then useless (take_output()
  // may still hold an alert worth sending).
  bool on_input(std::string_view ciphertext, std::string& plaintext);
  // Encrypts `plaintext` for sending.  REQUIRES: handshake_done().  False on failure.
  bool write(std::string_view plaintext);
  // Sends close_notify (once).
  void shutdown();
  // Ciphertext to write to the socket now (possibly empty).
  std::string take_output();

  bool handshake_done() const;
  // Whether the peer's first bytes cannot be a TLS handshake: a plain HTTP request sent
  // to the TLS port (the server then answers in plain text that it speaks HTTPS).
  bool plaintext_seen() const { return plaintext_seen_; }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string why);

  std::shared_ptr<const TlsContext> context_;
  ssl_st* ssl_ = nullptr;
  bool first_byte_seen_ = false;
  bool plaintext_seen_ = false;
  bool shut_ = false;
  std::string error_;
};

// The text of OpenSSL's error queue (emptied), "" when it is empty.
std::string tls_error_text();

}  // namespace caesium::daemon
