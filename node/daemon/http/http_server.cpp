// HttpServer: libuv TCP, one RequestParser per connection.
//
// Invariants:
//   - a Conn is in State::conns exactly while it is open (not closing); its two handles
//     (tcp, timer) are closed together and the last close callback frees it, so no
//     libuv callback ever sees a freed Conn;
//   - phase kReading: the socket is read and the parser fed; kHandling: reading is
//     stopped and exactly one Respond for request `serial` is outstanding; kWriting: a
//     response is being written; kLingering: our side is shut down, input is dropped;
//   - Respond closures hold a weak_ptr to State plus (conn id, request serial): they do
//     nothing once the server, the connection or the request is gone;
//   - per_client[a] counts the open connections whose client address is a (entries
//     with no connection are erased), so it never exceeds max_connections_per_client;
//   - with TLS, the parser sees only plaintext, and every byte written to the socket
//     leaves through the connection's TlsSession (write_bytes) except the plain 400 to a
//     client that spoke no TLS, written after the session was dropped.
#include "node/daemon/http/http_server.h"

#include <uv.h>

#include <algorithm>
#include <array>
#include <map>

#include "node/daemon/net/net_addr.h"

namespace caesium::daemon {

namespace {

enum class Phase : uint8_t { kReading, kHandling, kWriting, kLingering };

struct Conn {
  uv_tcp_t tcp{};
  uv_timer_t timer{};
  uint64_t id = 0;
  HttpServer::State* state = nullptr;  // valid while the conn is open
  RequestParser parser;
  Phase phase = Phase::kReading;
  bool reading = false;
  bool close_after_write = false;
  bool request_started = false;  // the current request's first byte has arrived
  uint64_t serial = 0;           // of the request being handled
  int open_handles = 2;
  std::string client;            // the peer's IP address ("" until counted in per_client)
  uint64_t idle_since_ms = 0;    // loop time the connection last became idle
  std::unique_ptr<TlsSession> tls;
  explicit Conn(HttpLimits limits) : parser(limits) {}
};

struct WriteReq {
  uv_write_t req{};
  std::string bytes;
  Conn* conn = nullptr;
  bool response = false;  // false: an interim "100 Continue"
};

}  // namespace

struct HttpServer::State {
  uv_loop_s* loop = nullptr;
  HttpServerOptions options;
  Handler handler;
  uv_tcp_t* listener = nullptr;
  std::map<uint64_t, Conn*> conns;
  std::map<std::string, size_t> per_client;
  bool pressure = false;  // more than half of max_connections open (see note_pressure)
  uint64_t next_conn_id = 1;
  HttpServerStats stats;
  std::string address;
  uint16_t port = 0;
  bool closed = false;
  std::array<char, 64 * 1024> read_buffer{};
  std::weak_ptr<State> self;
};

namespace {

using State = HttpServer::State;

void start_reading(Conn* c);
void process_input(Conn* c);
void write_response(Conn* c, const ServerResponse& r);

void on_handle_closed(uv_handle_t* h) {
  auto* c = static_cast<Conn*>(h->data);
  if (--c->open_handles == 0) delete c;
}

void close_conn(Conn* c) {
  if (c->state == nullptr) return;  // already closing
  State* st = c->state;
  st->conns.erase(c->id);
  st->stats.open_connections = st->conns.size();
  if (st->pressure && st->conns.size() * 2 <= st->options.max_connections) st->pressure = false;
  if (!c->client.empty()) {
    auto it = st->per_client.find(c->client);
    if (it != st->per_client.end() && --it->second == 0) st->per_client.erase(it);
  }
  c->state = nullptr;
  uv_timer_stop(&c->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), on_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), on_handle_closed);
}

void arm_timer(Conn* c, int64_t ms) {
  uv_timer_start(&c->timer, [](uv_timer_t* t) {
    auto* conn = static_cast<Conn*>(t->data);
    State* st = conn->state;
    if (st == nullptr) return;
    if (conn->phase == Phase::kReading && conn->request_started) {
      ++st->stats.timeouts;
      // The client started a request and did not finish it in time: say so, then close.
      ServerResponse r;
      r.status = 408;
      r.body = R"({"error":"the request did not arrive in time"})";
      conn->phase = Phase::kHandling;  // so write_response accepts it
      conn->close_after_write = true;
      write_response(conn, r);
      return;
    }
    if (conn->phase == Phase::kWriting) ++st->stats.timeouts;
    close_conn(conn);  // idle, a write that did not finish, or the end of the linger
  }, static_cast<uint64_t>(ms > 0 ? ms : 1), 0);
}

bool write_raw(Conn* c, std::string bytes, bool response);

// Writes what the TLS session has produced (handshake records, alerts, close_notify).
void flush_tls(Conn* c) {
  if (!c->tls) return;
  std::string out = c->tls->take_output();
  if (!out.empty()) write_raw(c, std::move(out), false);
}

int64_t idle_timeout_ms(const State* st) {
  return st->pressure ? std::min(st->options.idle_timeout_ms, st->options.idle_timeout_under_pressure_ms)
                      : st->options.idle_timeout_ms;
}

bool is_idle(const Conn* c) { return c->phase == Phase::kReading && !c->request_started && !c->parser.started(); }

// Under pressure a keep-alive slot is held for less time, so that idle clients make
// room for active ones.  When pressure begins, the idle connections' timers are cut to
// the shorter timeout (counted from when each became idle); new idle periods use it
// while it lasts.  O(connections) once per change, not per accept.
void note_pressure(State* st) {
  const bool now_pressure = st->conns.size() * 2 > st->options.max_connections;
  if (now_pressure == st->pressure) return;
  st->pressure = now_pressure;
  if (!now_pressure) return;
  const uint64_t now = uv_now(st->loop);
  for (auto& [id, c] : st->conns) {
    if (!is_idle(c)) continue;
    const int64_t idle_for = static_cast<int64_t>(now - c->idle_since_ms);
    arm_timer(c, std::max<int64_t>(1, idle_timeout_ms(st) - idle_for));
  }
}

void linger(Conn* c) {
  c->phase = Phase::kLingering;
  if (c->tls) {
    c->tls->shutdown();
    flush_tls(c);
    if (c->state == nullptr) return;
  }
  auto* req = new uv_shutdown_t;
  req->data = c;
  if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->tcp), [](uv_shutdown_t* r, int) { delete r; }) != 0) {
    delete req;
    close_conn(c);
    return;
  }
  arm_timer(c, kLingerMs);
  start_reading(c);
}

void on_write_done(uv_write_t* req, int status) {
  auto* w = static_cast<WriteReq*>(req->data);
  Conn* c = w->conn;
  const bool response = w->response;
  delete w;
  if (c->state == nullptr) return;  // closed meanwhile
  if (status < 0) {
    close_conn(c);
    return;
  }
  if (!response) return;  // a 100 Continue went out; nothing to do
  if (c->close_after_write || c->state->closed) {
    linger(c);
    return;
  }
  c->phase = Phase::kReading;
  c->request_started = false;
  process_input(c);  // a pipelined request may already be buffered
}

bool write_raw(Conn* c, std::string bytes, bool response) {
  auto* w = new WriteReq;
  w->bytes = std::move(bytes);
  w->conn = c;
  w->response = response;
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, on_write_done) != 0) {
    delete w;
    close_conn(c);
    return false;
  }
  return true;
}

// Writes plaintext: through the TLS session when there is one.
bool write_bytes(Conn* c, std::string bytes, bool response) {
  if (c->tls) {
    if (!c->tls->write(bytes)) {
      ++c->state->stats.tls_failures;
      close_conn(c);
      return false;
    }
    bytes = c->tls->take_output();
  }
  return write_raw(c, std::move(bytes), response);
}

void write_response(Conn* c, const ServerResponse& r) {
  State* st = c->state;
  if (st == nullptr || c->phase != Phase::kHandling) return;
  if (r.close || st->closed) c->close_after_write = true;
  c->phase = Phase::kWriting;
  if (c->reading) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
    c->reading = false;
  }
  arm_timer(c, st->options.write_timeout_ms);
  write_bytes(c, serialize_response(r, c->close_after_write), true);
}

void on_alloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* c = static_cast<Conn*>(h->data);
  if (c->state == nullptr) {
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  *buf = uv_buf_init(c->state->read_buffer.data(), static_cast<unsigned>(c->state->read_buffer.size()));
}

void dispatch(Conn* c, ServerRequest request) {
  State* st = c->state;
  ++st->stats.requests;
  c->phase = Phase::kHandling;
  c->close_after_write = !request.keep_alive;
  uv_timer_stop(&c->timer);  // the handler bounds its own work
  const uint64_t serial = ++c->serial;
  const uint64_t id = c->id;
  std::weak_ptr<State> weak = st->self;
  HttpServer::Respond respond = [weak, id, serial](ServerResponse r) {
    auto s = weak.lock();
    if (!s) return;
    auto it = s->conns.find(id);
    if (it == s->conns.end() || it->second->serial != serial) return;
    write_response(it->second, r);
  };
  st->handler(std::move(request), std::move(respond));
}

// Parses what is buffered and acts on it: dispatch a complete request, refuse a bad
// one, or go on reading.
void process_input(Conn* c) {
  State* st = c->state;
  if (st == nullptr || c->phase != Phase::kReading) return;
  RequestParser& p = c->parser;
  const RequestParser::State s = p.feed({});
  if (s == RequestParser::State::kError) {
    ++st->stats.bad_requests;
    ServerResponse r;
    r.status = p.error_status();
    std::string msg;
    for (char ch : p.error_message()) {
      if (ch == '"' || ch == '\\') msg.push_back('\\');
      msg.push_back(ch);
    }
    r.body = "{\"error\":\"" + msg + "\"}";
    c->phase = Phase::kHandling;
    c->close_after_write = true;
    write_response(c, r);
    return;
  }
  if (s == RequestParser::State::kComplete) {
    if (c->reading) {
      uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
      c->reading = false;
    }
    dispatch(c, p.take());
    return;
  }
  if (p.take_expect_continue()) write_bytes(c, "HTTP/1.1 100 Continue\r\n\r\n", false);
  if (p.started() && !c->request_started) {
    c->request_started = true;
    arm_timer(c, st->options.request_timeout_ms);
  } else if (!p.started()) {
    // Idle between requests (or before the first).
    c->idle_since_ms = uv_now(st->loop);
    arm_timer(c, idle_timeout_ms(st));
  }
  start_reading(c);
}

void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* c = static_cast<Conn*>(stream->data);
  if (c->state == nullptr) return;
  if (nread < 0) {  // EOF or error: nothing more will come
    close_conn(c);
    return;
  }
  if (nread == 0) return;
  if (c->phase == Phase::kLingering) return;  // dropped
  if (c->phase != Phase::kReading) return;    // cannot happen: reading stops first
  const std::string_view bytes(buf->base, static_cast<size_t>(nread));
  if (!c->tls) {
    (void)c->parser.feed(bytes);
    process_input(c);
    return;
  }
  std::string plain;
  const bool ok = c->tls->on_input(bytes, plain);
  flush_tls(c);
  if (c->state == nullptr) return;
  if (!ok) {
    ++c->state->stats.tls_failures;
    if (c->tls->plaintext_seen()) {
      // Say so in the client's own protocol; it is the usual mistake (http:// for https://).
      c->tls.reset();
      ServerResponse r;
      r.status = 400;
      r.body = R"({"error":"this API speaks HTTPS (api.tls_cert is set): use https:// and the cluster's CA"})";
      c->phase = Phase::kHandling;
      c->close_after_write = true;
      write_response(c, r);
      return;
    }
    linger(c);  // the alert (if any) goes out before the close
    return;
  }
  if (plain.empty()) return;  // handshake progress only
  (void)c->parser.feed(plain);
  process_input(c);
}

void start_reading(Conn* c) {
  if (c->reading || c->state == nullptr) return;
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(&c->tcp), on_alloc, on_read) == 0) c->reading = true;
}

// The peer's IP address as text ("?" when unknown: such connections share one limit).
std::string peer_address(uv_tcp_t* tcp) {
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char ip[64] = {};
  if (addr.ss_family == AF_INET6) {
    uv_ip6_name(reinterpret_cast<const sockaddr_in6*>(&addr), ip, sizeof ip);
  } else {
    uv_ip4_name(reinterpret_cast<const sockaddr_in*>(&addr), ip, sizeof ip);
  }
  return ip;
}

// The open connection other than `except` that has waited longest for a request, or
// nullptr when every one is busy (mid-request, handled, written or lingering).
Conn* longest_idle(State* st, const Conn* except) {
  Conn* best = nullptr;
  for (auto& [id, c] : st->conns) {
    if (c == except || !is_idle(c)) continue;
    if (best == nullptr || c->idle_since_ms < best->idle_since_ms) best = c;
  }
  return best;
}

void on_connection(uv_stream_t* server, int status) {
  auto* st = static_cast<State*>(server->data);
  if (status < 0 || st->closed) return;
  auto* c = new Conn(st->options.limits);
  uv_tcp_init(st->loop, &c->tcp);
  uv_timer_init(st->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->id = st->next_conn_id++;
  c->state = st;
  c->idle_since_ms = uv_now(st->loop);
  st->conns.emplace(c->id, c);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
    close_conn(c);
    return;
  }
  std::string client = peer_address(&c->tcp);
  if (st->per_client[client] >= st->options.max_connections_per_client) {
    ++st->stats.connections_refused_per_client;
    close_conn(c);  // not counted for its client yet
    return;
  }
  ++st->per_client[client];
  c->client = std::move(client);
  if (st->conns.size() > st->options.max_connections) {
    Conn* idle = longest_idle(st, c);
    if (idle == nullptr) {
      ++st->stats.connections_refused;
      close_conn(c);
      return;
    }
    ++st->stats.idle_closed_for_new;
    close_conn(idle);
  }
  if (st->options.tls) {
    c->tls = std::make_unique<TlsSession>(st->options.tls);
    if (!c->tls->error().empty()) {
      ++st->stats.tls_failures;
      close_conn(c);
      return;
    }
  }
  ++st->stats.connections_accepted;
  st->stats.open_connections = st->conns.size();
  note_pressure(st);
  uv_tcp_nodelay(&c->tcp, 1);
  process_input(c);  // arms the idle timer and starts reading
}

}  // namespace

HttpServer::HttpServer(uv_loop_s* loop, HttpServerOptions options, Handler handler)
    : state_(std::make_shared<State>()) {
  state_->loop = loop;
  state_->options = options;
  state_->handler = std::move(handler);
  state_->self = state_;
}

HttpServer::~HttpServer() { close(); }

Status HttpServer::listen(const std::string& host_port) {
  State* st = state_.get();
  if (st->listener != nullptr || st->closed) return Error("the API server is already listening or closed");
  auto hp = parse_host_port(host_port, true);
  if (!hp) return Error("api.listen: " + hp.error().message, "api.listen");
  if (hp->host == "localhost") hp->host = "127.0.0.1";
  sockaddr_storage addr{};
  if (uv_ip4_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    return Error("api.listen: " + hp->host + " is not an IP address", "api.listen");
  }
  auto* l = new uv_tcp_t;
  uv_tcp_init(st->loop, l);
  l->data = st;
  int rc = uv_tcp_bind(l, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(l), 128, on_connection);
  if (rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(l), [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    return Error("api.listen: cannot listen on " + host_port + ": " + uv_strerror(rc), "api.listen");
  }
  sockaddr_storage bound{};
  int len = sizeof bound;
  uv_tcp_getsockname(l, reinterpret_cast<sockaddr*>(&bound), &len);
  char ip[64] = {};
  if (bound.ss_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&bound);
    uv_ip6_name(a6, ip, sizeof ip);
    st->port = ntohs(a6->sin6_port);
    st->address = "[" + std::string(ip) + "]:" + std::to_string(st->port);
  } else {
    const auto* a4 = reinterpret_cast<const sockaddr_in*>(&bound);
    uv_ip4_name(a4, ip, sizeof ip);
    st->port = ntohs(a4->sin_port);
    st->address = std::string(ip) + ":" + std::to_string(st->port);
  }
  st->listener = l;
  return Status::success();
}

std::string HttpServer::address() const { return state_->address; }
uint16_t HttpServer::port() const { return state_->port; }
HttpServerStats HttpServer::stats() const { return state_->stats; }

void HttpServer::set_tls(std::shared_ptr<const TlsContext> tls) {
  if (tls && state_->options.tls) state_->options.tls = std::move(tls);
}

void HttpServer::close() {
  State* st = state_.get();
  if (st->closed) return;
  st->closed = true;
  if (st->listener != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(st->listener), [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    st->listener = nullptr;
  }
  std::map<uint64_t, Conn*> conns = st->conns;
  for (auto& [id, c] : conns) close_conn(c);
}

}  // namespace caesium::daemon
