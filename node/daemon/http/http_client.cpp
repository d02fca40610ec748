// libcurl multi on libuv.  The wiring, in one place:
//
//   curl says "watch socket s for IN/OUT"   (on_socket)  -> uv_poll_start on a SocketWatch
//   curl says "call me in N ms"            (on_curl_timer) -> uv_timer_start
//   the poll or the timer fires                            -> curl_multi_socket_action,
//                                                             then collect finished transfers
//
// Invariants:
//   - every SocketWatch in `watches` is polling a socket curl still owns; curl says
//     CURL_POLL_REMOVE before it closes a socket, and we stop polling at once (the
//     handle's memory lives until its close callback);
//   - a Transfer is in `transfers` exactly while its easy handle is in the multi;
//   - user callbacks run only from collect_finished(), never inside a curl callback,
//     and each one is the last use of the Transfer it belonged to.  `closed` is
//     checked after each, because a callback may destroy the client.
#include "node/daemon/http/http_client.h"

#include <curl/curl.h>
#include <uv.h>

#include <cassert>
#include <map>
#include <set>

#include "node/daemon/runtime/deferred_queue.h"

namespace caesium::daemon {

namespace {

struct Transfer {
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string response;
  std::vector<std::pair<std::string, std::string>> response_headers;
  size_t max_response_bytes = 0;
  HttpClient::ResponseFn fn;
  char error[CURL_ERROR_SIZE] = {};

  Transfer() = default;
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

struct SocketWatch {
  uv_poll_t poll{};
  curl_socket_t fd = CURL_SOCKET_BAD;
  HttpClient::State* state = nullptr;
};

}  // namespace

struct HttpClient::State {
  uv_loop_s* loop = nullptr;
  CURLM* multi = nullptr;
  uv_timer_t timer{};
  std::map<uint64_t, std::unique_ptr<Transfer>> transfers;
  std::set<SocketWatch*> watches;
  // Requests that failed before reaching curl, answered on a later turn.
  std::map<uint64_t, ResponseFn> failed;
  std::unique_ptr<DeferredQueue> deferred;
  uint64_t next_id = 1;
  bool closed = false;
};

namespace {

using State = HttpClient::State;

void close_watch(State* st, SocketWatch* w) {
  st->watches.erase(w);
  uv_poll_stop(&w->poll);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->poll),
           [](uv_handle_t* h) { delete static_cast<SocketWatch*>(h->data); });
}

void collect_finished(State* st) {
  int left = 0;
  while (!st->closed) {
    CURLMsg* msg = curl_multi_info_read(st->multi, &left);
    if (msg == nullptr) break;
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    const CURLcode code = msg->data.result;  // read before remove_handle frees msg
    char* priv = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    auto* t = reinterpret_cast<Transfer*>(priv);
    HttpResponse r;
    if (code == CURLE_OK) {
      r.answered = true;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.status);
      r.body = std::move(t->response);
      r.headers = std::move(t->response_headers);
    } else {
      r.timed_out = code == CURLE_OPERATION_TIMEDOUT;
      r.error = t->error[0] != '\0' ? t->error : curl_easy_strerror(code);
    }
    curl_multi_remove_handle(st->multi, easy);
    auto node = st->transfers.extract(t->id);
    assert(!node.empty());
    HttpClient::ResponseFn fn = std::move(node.mapped()->fn);
    node.mapped().reset();
    fn(r);
  }
}

void on_poll(uv_poll_t* handle, int status, int events) {
  auto* w = static_cast<SocketWatch*>(handle->data);
  State* st = w->state;
  int flags = 0;
  if (status < 0) flags |= CURL_CSELECT_ERR;
  if ((events & UV_READABLE) != 0) flags |= CURL_CSELECT_IN;
  if ((events & UV_WRITABLE) != 0) flags |= CURL_CSELECT_OUT;
  int running = 0;
  curl_multi_socket_action(st->multi, w->fd, flags, &running);
  collect_finished(st);
}

void on_timeout(uv_timer_t* timer) {
  auto* st = static_cast<State*>(timer->data);
  int running = 0;
  curl_multi_socket_action(st->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  collect_finished(st);
}

int on_socket(CURL* /*easy*/, curl_socket_t s, int what, void* userp, void* socketp) {
  auto* st = static_cast<State*>(userp);
  auto* w = static_cast<SocketWatch*>(socketp);
  if (st->closed) return 0;
  if (what == CURL_POLL_REMOVE) {
    if (w != nullptr) {
      close_watch(st, w);
      curl_multi_assign(st->multi, s, nullptr);
    }
    return 0;
  }
  if (w == nullptr) {
    w = new SocketWatch;
    w->fd = s;
    w->state = st;
    if (uv_poll_init_socket(st->loop, &w->poll, s) != 0) {
      delete w;
      return -1;  // curl fails the transfer that owns this socket
    }
    w->poll.data = w;
    st->watches.insert(w);
    curl_multi_assign(st->multi, s, w);
  }
  int events = 0;
  if ((what & CURL_POLL_IN) != 0) events |= UV_READABLE;
  if ((what & CURL_POLL_OUT) != 0) events |= UV_WRITABLE;
  uv_poll_start(&w->poll, events, on_poll);
  return 0;
}

int on_curl_timer(CURLM* /*multi*/, long timeout_ms, void* userp) {
  auto* st = static_cast<State*>(userp);
  if (st->closed) return 0;
  if (timeout_ms < 0) {
    uv_timer_stop(&st->timer);
  } else {
    // Even 0 goes through the loop: curl must not be re-entered from its own callback.
    uv_timer_start(&st->timer, on_timeout, static_cast<uint64_t>(timeout_ms), 0);
  }
  return 0;
}

size_t on_body(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t n = size * nmemb;
  if (t->response.size() < t->max_response_bytes) {
    const size_t room = t->max_response_bytes - t->response.size();
    t->response.append(data, n < room ? n : room);
  }
  return n;
}

// One header line of the answer.  A status line starts a new header block (after a
// "100 Continue" or a redirect), so only the final answer's fields are kept.
size_t on_header(char* data, size_t size, size_t nitems, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t n = size * nitems;
  std::string_view line(data, n);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.substr(0, 5) == "HTTP/") {
    t->response_headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || t->response_headers.size() >= 100) return n;
  std::string name(line.substr(0, colon));
  for (char& c : name) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  t->response_headers.emplace_back(std::move(name), std::string(value));
  return n;
}

void fail_later(State* st, uint64_t id, HttpClient::ResponseFn fn, std::string error) {
  st->failed.emplace(id, std::move(fn));
  st->deferred->post([st, id, error = std::move(error)] {
    auto it = st->failed.find(id);
    if (it == st->failed.end()) return;  // cancelled
    HttpClient::ResponseFn f = std::move(it->second);
    st->failed.erase(it);
    HttpResponse r;
    r.error = error;
    f(r);
  });
}

}  // namespace

HttpClient::HttpClient(uv_loop_s* loop, long max_host_connections) : state_(new State) {
  // curl_global_init is not thread-safe; the daemon makes its client on the loop
  // thread before any other thread could use curl.
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)global;
  state_->loop = loop;
  state_->multi = curl_multi_init();
  assert(state_->multi != nullptr);
  state_->deferred = std::make_unique<DeferredQueue>(loop);
  uv_timer_init(loop, &state_->timer);
  state_->timer.data = state_;
  curl_multi_setopt(state_->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(state_->multi, CURLMOPT_SOCKETDATA, state_);
  curl_multi_setopt(state_->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(state_->multi, CURLMOPT_TIMERDATA, state_);
  if (max_host_connections > 0) curl_multi_setopt(state_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, max_host_connections);
}

HttpClient::~HttpClient() {
  State* st = state_;
  st->closed = true;  // from here on curl's callbacks are ignored
  for (SocketWatch* w : std::set<SocketWatch*>(st->watches)) close_watch(st, w);
  for (auto& [id, t] : st->transfers) curl_multi_remove_handle(st->multi, t->easy);
  st->transfers.clear();
  curl_multi_cleanup(st->multi);
  st->multi = nullptr;
  st->failed.clear();
  st->deferred.reset();
  uv_timer_stop(&st->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(&st->timer),
           [](uv_handle_t* h) { delete static_cast<State*>(h->data); });
}

uint64_t HttpClient::post(HttpRequest request, ResponseFn fn) {
  request.method = "POST";
  return this->request(std::move(request), std::move(fn));
}

uint64_t HttpClient::request(HttpRequest request, ResponseFn fn) {
  State* st = state_;
  const uint64_t id = st->next_id++;
  auto t = std::make_unique<Transfer>();
  t->id = id;
  t->body = std::move(request.body);
  t->max_response_bytes = request.max_response_bytes;
  t->fn = std::move(fn);
  t->easy = curl_easy_init();
  if (t->easy == nullptr) {
    fail_later(st, id, std::move(t->fn), "libcurl could not make a request handle");
    return id;
  }
  const bool get = request.method == "GET";
  if (!get) {
    // "Content-Type:" with no value stops curl sending its form-encoded default.
    const std::string ct = request.content_type.empty() ? "Content-Type:" : "Content-Type: " + request.content_type;
    t->headers = curl_slist_append(t->headers, ct.c_str());
  }
  t->headers = curl_slist_append(t->headers, "Expect:");  // no 100-continue round trip
  for (const auto& [name, value] : request.headers) {
    t->headers = curl_slist_append(t->headers, (name + ": " + value).c_str());
  }
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  if (get) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    if (request.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms > 0 ? request.timeout_ms : 1));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "caesium");
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  if (!request.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, request.ca_file.c_str());
  if (!request.cert_file.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, request.cert_file.c_str());
  if (!request.key_file.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, request.key_file.c_str());
  const CURLMcode rc = curl_multi_add_handle(st->multi, e);
  if (rc != CURLM_OK) {
    fail_later(st, id, std::move(t->fn), std::string("libcurl refused the request: ") +
                                             curl_multi_strerror(rc));
    return id;
  }
  st->transfers.emplace(id, std::move(t));
  return id;
}

void HttpClient::cancel(uint64_t id) {
  State* st = state_;
  auto it = st->transfers.find(id);
  if (it != st->transfers.end()) {
    curl_multi_remove_handle(st->multi, it->second->easy);
    st->transfers.erase(it);
    return;
  }
  st->failed.erase(id);
}

size_t HttpClient::in_flight() const { return state_->transfers.size() + state_->failed.size(); }

}  // namespace caesium::daemon
