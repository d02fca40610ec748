// A small asynchronous HTTP client on a libuv loop: libcurl's multi interface, with
// curl's sockets watched by uv_poll handles and curl's timeout by a uv_timer
// (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION), so a request never blocks the
// loop.  Name resolution uses libcurl's own resolver (threaded in Debian's build).
//
// Used from the loop's thread only.  Only http:// and https:// URLs are followed; no
// redirects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct uv_loop_s;

namespace caesium::daemon {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // sent in this order
  std::string body;                                        // POSTed as is
  // request() only (post() always POSTs): GET sends no body; other methods send `body`.
  std::string method = "POST";
  std::string content_type = "application/json";  // "" = no Content-Type header
  int64_t timeout_ms = 10'000;  // the whole request: connect, send, answer
  size_t max_response_bytes = 1024;  // the rest of the answer is read and dropped
  // https:// only: the CA file to verify the server with ("" = the system's CAs), and a
  // client certificate and key to present ("" = none).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

struct HttpResponse {
  // false: no HTTP answer at all (refused, unreachable, name unknown, timed out);
  // `error` says why.  true: `status` holds the answer's status code.
  bool answered = false;
  long status = 0;
  bool timed_out = false;
  std::string error;
  std::string body;  // the first max_response_bytes bytes of the answer
  // The final answer's header fields, names in lower case, in order (at most 100).
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpClient {
 public:
  using ResponseFn = std::function<void(const HttpResponse&)>;

  // `max_host_connections`: open connections to one host at most (0 = no limit); more
  // requests to it wait for a connection to free up.  The API's forwarding sets it so
  // that a node stays below the other nodes' per-client connection limit.
  explicit HttpClient(uv_loop_s* loop, long max_host_connections = 0);
  // Aborts every request; their callbacks are never called.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts a POST.  `fn` is called exactly once, on a later loop turn (never from
  // inside post()), unless cancel() or the destructor comes first.  `fn` may call
  // post(), cancel() and destroy the client.  Returns an id for cancel().
  uint64_t post(HttpRequest request, ResponseFn fn);
  // The same for any method (request.method); the API uses it to forward requests.
  uint64_t request(HttpRequest request, ResponseFn fn);
  // Aborts one request (no callback).  Unknown or finished ids are ignored.
  void cancel(uint64_t id);
  size_t in_flight() const;

  struct State;  // public for the C callbacks in http_client.cpp

 private:
  State* state_;  // freed by the timer's close callback, after this object is gone
};

}  // namespace caesium::daemon
