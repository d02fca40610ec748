// The API on the daemon's loop: HttpServer (sockets) + ApiHandler (decisions) + the two
// things that take time, carried out here:
//   - writes answered only once durable (and on w replicas): each waiting request is
//     checked on every loop turn (a uv_check handle, active only while something waits),
//     so it is answered in the same turn as the storage notification that completes
//     it; a timer answers 503 at its deadline;
//   - forwarding to a replica through HttpClient (curl multi on the loop): the first
//     target that gives an HTTP answer is relayed (status, body, Content-Type,
//     Location, WWW-Authenticate, Allow); a target that refuses the connection is
//     skipped for the next one; a timeout ends the attempt (the request may have been
//     applied there, so it is not sent to another replica).
//
// Threading: the loop's thread only.  Destroying the server drops every waiting
// request and forward (their connections are closed, nothing is answered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "node/daemon/api/api.h"
#include "node/daemon/http/http_server.h"

struct uv_loop_s;

namespace caesium::daemon {

class HttpClient;

struct ApiServerOptions {
  HttpServerOptions http;
  ApiOptions api;
  int64_t forward_timeout_ms = 15'000;  // above the remote's write timeout, so its 503 arrives
  size_t max_forward_response_bytes = size_t{16} << 20;
  // Forwarding to the other nodes' APIs: "https" when this node's API speaks TLS (the
  // cluster's nodes are configured alike), verified with forward_ca_file and presenting
  // forward_cert_file/forward_key_file (this node's own, for clusters that verify clients).
  std::string forward_scheme = "http";
  std::string forward_ca_file;
  std::string forward_cert_file;
  std::string forward_key_file;
};

class ApiServer {
 public:
  // REQUIRES: `backend` outlives the server.
  ApiServer(uv_loop_s* loop, ApiServerOptions options, ApiBackend& backend);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  Status listen(const std::string& host_port);
  std::string address() const { return http_->address(); }
  // Stops accepting, closes connections, drops waiting requests (idempotent).
  void close();

  const ApiCounters& counters() const { return handler_.counters(); }
  // Replaces the tokens (SIGHUP); requests being handled keep their answer.
  void set_tokens(std::string token, TokenSet tokens) { handler_.set_tokens(std::move(token), std::move(tokens)); }
  size_t token_count() const { return handler_.options().tokens.size(); }
  // Replaces the TLS certificate for connections accepted from now on.
  void set_tls(std::shared_ptr<const TlsContext> tls) { http_->set_tls(std::move(tls)); }
  HttpServerStats http_stats() const { return http_->stats(); }
  size_t waiting_writes() const { return waiters_.size(); }
  size_t forwards_in_flight() const;
  // Answers the waiting writes whose condition now holds or whose deadline passed.
  // Runs on every loop turn while something waits; callable any time.
  void poll_waiters();

  struct Ticker;  // public for the C callbacks in api_server.cpp

 private:
  struct Waiter {
    WriteWait wait;
    ServerResponse response;
    HttpServer::Respond respond;
  };
  struct Forward;

  void on_request(ServerRequest request, HttpServer::Respond respond);
  void await(WriteWait wait, ServerResponse response, HttpServer::Respond respond);
  void forward_next(std::shared_ptr<Forward> f);
  void rearm();

  uv_loop_s* loop_;
  ApiServerOptions options_;
  ApiBackend& backend_;
  ApiHandler handler_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpClient> client_;  // made for the first forward
  std::vector<Waiter> waiters_;
  Ticker* ticker_ = nullptr;  // freed by its handles' close callbacks
  bool closed_ = false;
};

}  // namespace caesium::daemon
