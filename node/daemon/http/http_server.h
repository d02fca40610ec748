// An HTTP/1.1 server on a libuv loop: accepts TCP connections, parses requests with
// RequestParser (http_request.h), hands each complete request to a handler and writes
// the response it gives back — possibly much later (a write waits for durability, a
// forwarded request for another node).
//
// Per connection, one request at a time: while a request is being handled the server
// stops reading from that connection (pipelined bytes already read stay buffered and
// are parsed after the response).  Keep-alive unless the client or the response says
// otherwise.
//
// Limits and timeouts (a slow or hostile client costs bounded memory and time):
//   - head and body sizes: HttpLimits (431 / 413, then the connection closes);
//   - a request must arrive whole within request_timeout_ms of its first byte (408,
//     then close) — the slowloris defence;
//   - an idle keep-alive connection is closed after idle_timeout_ms;
//   - a response must be written within write_timeout_ms (a client that does not read);
//   - at most max_connections at once, and at most max_connections_per_client from one
//     client address, so that one client cannot hold every slot: when every slot is
//     taken, a new connection takes the slot of the connection idle the longest (a
//     keep-alive connection between requests); when none is idle, or the client is at
//     its own limit, the new connection is closed at once;
//   - under pressure (more than half of max_connections open) an idle keep-alive
//     connection is closed after idle_timeout_under_pressure_ms instead.
// TLS (tls.h): with a TlsContext every connection speaks TLS; a client whose first
// bytes are not a TLS handshake gets a plain-text 400 saying so, then a close.
// After an answer that closes the connection, the server shuts down its side and reads
// (and drops) what the client still sends for up to kLingerMs, so the client reads the
// answer instead of a reset.
//
// Threading: everything on the loop's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "node/daemon/http/http_request.h"
#include "node/daemon/http/tls.h"

struct uv_loop_s;

namespace caesium::daemon {

struct HttpServerOptions {
  HttpLimits limits;
  int64_t request_timeout_ms = 10'000;
  int64_t idle_timeout_ms = 60'000;
  int64_t write_timeout_ms = 30'000;
  size_t max_connections = 512;
  size_t max_connections_per_client = 64;  // per client IP address
  int64_t idle_timeout_under_pressure_ms = 5'000;
  std::shared_ptr<const TlsContext> tls;  // null = plain HTTP
};

struct HttpServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections (none idle to close instead)
  uint64_t connections_refused_per_client = 0;  // over max_connections_per_client
  uint64_t idle_closed_for_new = 0;  // idle connections closed to make room for a new one
  uint64_t tls_failures = 0;         // handshakes or records that failed (connection closed)
  uint64_t requests = 0;             // complete requests handed to the handler
  uint64_t bad_requests = 0;         // refused by the parser (4xx/5xx, connection closed)
  uint64_t timeouts = 0;             // request, idle-with-partial-request or write timeouts
  uint64_t open_connections = 0;     // gauge
};

inline constexpr int64_t kLingerMs = 2'000;

class HttpServer {
 public:
  // `respond` sends the answer to one request.  Call it at most once, on the loop
  // thread, now or later; after the connection went away (or the server was
  // destroyed) it does nothing.
  using Respond = std::function<void(ServerResponse)>;
  using Handler = std::function<void(ServerRequest request, Respond respond)>;

  HttpServer(uv_loop_s* loop, HttpServerOptions options, Handler handler);
  // Closes the listener and every connection; their handles finish closing on later
  // loop turns (keep running the loop until it has no handles).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens on "host:port" (an IP literal; port 0 = any free port).
  Status listen(const std::string& host_port);
  // "127.0.0.1:40123" once listening ("" before).
  std::string address() const;
  uint16_t port() const;
  // Stops accepting and closes every connection (idempotent).
  void close();
  HttpServerStats stats() const;
  // Serves connections accepted from now on with `tls` (a renewed certificate).
  // REQUIRES: the server was made with TLS, and `tls` is not null.
  void set_tls(std::shared_ptr<const TlsContext> tls);

  struct State;  // public for the C callbacks in http_server.cpp

 private:
  std::shared_ptr<State> state_;
};

}  // namespace caesium::daemon
