// Transport, part 1: lifecycle, UDP, address resolution and the housekeeping timer.
// TCP connections are in net_tcp.cpp.
#include <cassert>
#include <cstring>

#include "node/daemon/net/net_addr.h"
#include "node/daemon/net/net_internal.h"

namespace caesium::daemon {
namespace {

constexpr int64_t kTickMs = 100;
constexpr int64_t kSweepEveryMs = 5'000;
constexpr int64_t kResolveTtlMs = 60'000;
constexpr int64_t kResolveRetryMs = 5'000;
constexpr size_t kReadChunk = 64 * 1024;

// Resolves "host:port" synchronously (for listen addresses, at start only).
Status resolve_now(uv_loop_t* loop, const std::string& text, sockaddr_storage& out) {
  auto hp = parse_host_port(text);
  if (!hp) return hp.error();
  std::memset(&out, 0, sizeof out);
  if (uv_ip4_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in*>(&out)) == 0) return Status::success();
  if (uv_ip6_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in6*>(&out)) == 0) return Status::success();
  uv_getaddrinfo_t req;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(hp->port);
  const int rc = uv_getaddrinfo(loop, &req, nullptr, hp->host.c_str(), port.c_str(), &hints);
  if (rc != 0 || req.addrinfo == nullptr) {
    return Error("cannot resolve " + text + ": " + (rc != 0 ? uv_strerror(rc) : "no address"));
  }
  std::memcpy(&out, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
  uv_freeaddrinfo(req.addrinfo);
  return Status::success();
}

}  // namespace

std::string address_text(const sockaddr* addr) {
  char ip[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(addr);
    uv_ip4_name(a, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(addr);
    uv_ip6_name(a, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "?";
}

Transport::Transport(uv_loop_s* loop, TransportConfig config, Callbacks callbacks)
    : loop_(loop), config_(config), cb_(std::move(callbacks)) {
  read_buf_.resize(kReadChunk);
}

Transport::~Transport() {
  // Every handle is closed by close(); what is left here is plain memory.
  assert(handles_open_ == 0);
  assert(conns_.empty());
}

int64_t Transport::now_ms() const { return static_cast<int64_t>(uv_now(loop_)); }

void Transport::log(LogLevel level, const std::string& message) const {
  if (cb_.log) cb_.log(level, message);
}

Status Transport::listen(const std::string& gossip_addr, const std::string& stream_addr) {
  sockaddr_storage gaddr{}, saddr{};
  if (Status s = resolve_now(loop_, gossip_addr, gaddr); !s.ok()) return s;
  if (Status s = resolve_now(loop_, stream_addr, saddr); !s.ok()) return s;

  udp_ = new uv_udp_t();
  uv_udp_init(loop_, udp_);
  udp_->data = this;
  ++handles_open_;
  int rc = uv_udp_bind(udp_, reinterpret_cast<const sockaddr*>(&gaddr), 0);
  if (rc == 0) {
    rc = uv_udp_recv_start(
        udp_,
        [](uv_handle_t* h, size_t, uv_buf_t* buf) {
          auto* self = static_cast<Transport*>(h->data);
          *buf = uv_buf_init(self->read_buf_.data(), static_cast<unsigned>(self->read_buf_.size()));
        },
        [](uv_udp_t* h, ssize_t nread, const uv_buf_t* buf, const sockaddr* addr, unsigned flags) {
          auto* self = static_cast<Transport*>(h->data);
          if (nread <= 0 || addr == nullptr || self->closing_) return;  // nothing, or a socket error
          if ((flags & UV_UDP_PARTIAL) != 0 || static_cast<size_t>(nread) > kMaxDatagramBytes) {
            ++self->metrics_.datagrams_oversize_in;
            return;
          }
          ++self->metrics_.datagrams_in;
          if (self->cb_.on_datagram) {
            self->cb_.on_datagram(address_text(addr), std::string_view(buf->base, static_cast<size_t>(nread)));
          }
        });
  }
  if (rc != 0) return Error("cannot bind the gossip (UDP) address " + gossip_addr + ": " + uv_strerror(rc));

  listener_ = new uv_tcp_t();
  uv_tcp_init(loop_, listener_);
  listener_->data = this;
  ++handles_open_;
  rc = uv_tcp_bind(listener_, reinterpret_cast<const sockaddr*>(&saddr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 128, [](uv_stream_t* server, int status) {
      static_cast<Transport*>(server->data)->on_accept(status);
    });
  }
  if (rc != 0) return Error("cannot listen on the stream (TCP) address " + stream_addr + ": " + uv_strerror(rc));

  timer_ = new uv_timer_t();
  uv_timer_init(loop_, timer_);
  timer_->data = this;
  ++handles_open_;
  uv_timer_start(timer_, [](uv_timer_t* t) { static_cast<Transport*>(t->data)->on_tick(); }, kTickMs, kTickMs);
  // Housekeeping alone must not keep the loop alive.
  uv_unref(reinterpret_cast<uv_handle_t*>(timer_));
  next_sweep_ms_ = now_ms() + kSweepEveryMs;
  flush_prepare_ = new uv_prepare_t();
  uv_prepare_init(loop_, flush_prepare_);
  flush_prepare_->data = this;
  ++handles_open_;
  return Status::success();
}

// --- addresses ------------------------------------------------------------------------------

bool Transport::lookup(const std::string& addr, sockaddr_storage& out) {
  auto it = resolved_.find(addr);
  if (it == resolved_.end()) {
    auto hp = parse_host_port(addr);
    if (!hp) {
      auto r = std::make_unique<Resolved>();
      r->state = Resolved::State::kFailed;
      r->expires_ms = INT64_MAX;  // malformed text never becomes valid
      resolved_[addr] = std::move(r);
      log(LogLevel::kWarn, "not sending to " + addr + ": " + hp.error().message);
      return false;
    }
    auto r = std::make_unique<Resolved>();
    if (uv_ip4_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in*>(&r->addr)) == 0 ||
        uv_ip6_addr(hp->host.c_str(), hp->port, reinterpret_cast<sockaddr_in6*>(&r->addr)) == 0) {
      r->state = Resolved::State::kOk;
      r->expires_ms = INT64_MAX;
      out = r->addr;
      resolved_[addr] = std::move(r);
      return true;
    }
    resolved_[addr] = std::move(r);
    start_resolve(addr);
    return false;
  }
  Resolved& r = *it->second;
  if (r.state != Resolved::State::kResolving && now_ms() >= r.expires_ms) {
    start_resolve(addr);  // keeps using the old address until the new one arrives
  }
  if (r.state != Resolved::State::kOk) return false;
  out = r.addr;
  return true;
}

void Transport::start_resolve(const std::string& addr) {
  Resolved& r = *resolved_[addr];
  auto hp = parse_host_port(addr);
  if (!hp) return;
  if (r.state != Resolved::State::kOk) r.state = Resolved::State::kResolving;
  r.expires_ms = INT64_MAX;  // no second lookup while this one runs
  struct Req {
    uv_getaddrinfo_t req{};
    Transport* self = nullptr;
    std::string addr;
  };
  auto* req = new Req();
  req->self = this;
  req->addr = addr;
  req->req.data = req;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(hp->port);
  const int rc = uv_getaddrinfo(
      loop_, &req->req,
      [](uv_getaddrinfo_t* g, int status, addrinfo* res) {
        auto* q = static_cast<Req*>(g->data);
        Transport* self = q->self;
        auto it = self->resolved_.find(q->addr);
        if (!self->closing_ && it != self->resolved_.end()) {
          Resolved& rr = *it->second;
          if (status == 0 && res != nullptr) {
            std::memcpy(&rr.addr, res->ai_addr, res->ai_addrlen);
            rr.state = Resolved::State::kOk;
            rr.expires_ms = self->now_ms() + kResolveTtlMs;
          } else {
            if (rr.state != Resolved::State::kOk) rr.state = Resolved::State::kFailed;
            rr.expires_ms = self->now_ms() + kResolveRetryMs;
            self->log(LogLevel::kWarn, "cannot resolve " + q->addr + ": " + uv_strerror(status));
          }
        }
        if (res != nullptr) uv_freeaddrinfo(res);
        delete q;
        --self->handles_open_;
        self->maybe_finish_close();
      },
      hp->host.c_str(), port.c_str(), &hints);
  if (rc != 0) {
    delete req;
    r.state = Resolved::State::kFailed;
    r.expires_ms = now_ms() + kResolveRetryMs;
    return;
  }
  ++handles_open_;  // counted like a handle, so close() waits for the callback
}

// --- UDP ------------------------------------------------------------------------------------

void Transport::send_datagram(const std::string& to, std::string bytes) {
  if (closing_ || udp_ == nullptr) return;
  if (bytes.size() > kMaxDatagramBytes) {
    ++metrics_.datagrams_oversize_out;
    return;
  }
  sockaddr_storage addr{};
  if (!lookup(to, addr)) {
    ++metrics_.unresolved_drops;
    return;
  }
  const auto* sa = reinterpret_cast<const sockaddr*>(&addr);
  uv_buf_t buf = uv_buf_init(bytes.data(), static_cast<unsigned>(bytes.size()));
  const int rc = uv_udp_try_send(udp_, &buf, 1, sa);
  if (rc >= 0) {
    ++metrics_.datagrams_out;
    return;
  }
  if (rc != UV_EAGAIN) {
    ++metrics_.datagram_send_errors;
    return;
  }
  auto* req = new UdpSendReq();
  req->data = std::move(bytes);
  req->req.data = req;
  buf = uv_buf_init(req->data.data(), static_cast<unsigned>(req->data.size()));
  const int rc2 = uv_udp_send(&req->req, udp_, &buf, 1, sa, [](uv_udp_send_t* r, int status) {
    auto* q = static_cast<UdpSendReq*>(r->data);
    auto* self = static_cast<Transport*>(r->handle->data);
    if (status == 0) {
      ++self->metrics_.datagrams_out;
    } else {
      ++self->metrics_.datagram_send_errors;
    }
    delete q;
  });
  if (rc2 != 0) {
    ++metrics_.datagram_send_errors;
    delete req;
  }
}

// --- housekeeping and close -------------------------------------------------------------------

void Transport::on_tick() {
  if (closing_) return;
  const int64_t now = now_ms();
  // Reconnect destinations whose backoff ran out; time out connects that hang.
  for (auto& [addr, peer] : peers_) {
    if (peer->conn == nullptr && !peer->queue.empty() && now >= peer->retry_at_ms) connect(*peer);
  }
  std::vector<Conn*> stale;
  for (Conn* c : conns_) {
    if (c->closing) continue;
    if (c->outbound && !c->connected && now - c->started_ms > config_.connect_timeout_ms) stale.push_back(c);
    else if (now - c->last_activity_ms > config_.idle_timeout_ms && c->writing_bytes == 0 &&
             (c->peer == nullptr || c->peer->queue.empty())) stale.push_back(c);
  }
  for (Conn* c : stale) {
    if (c->outbound && !c->connected) {
      ++metrics_.connect_failures;
      close_conn(*c, "connect timed out", LogLevel::kDebug);
    } else {
      close_conn(*c, "idle", LogLevel::kDebug);
    }
  }
  if (now >= next_sweep_ms_) {
    next_sweep_ms_ = now + kSweepEveryMs;
    // Forget destinations with nothing queued and no connection (a member that left).
    for (auto it = peers_.begin(); it != peers_.end();) {
      Peer& p = *it->second;
      if (p.conn == nullptr && p.queue.empty() && now - p.last_used_ms > config_.idle_timeout_ms) {
        it = peers_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

size_t Transport::pending_bytes() const {
  size_t total = 0;
  for (const auto& [addr, peer] : peers_) {
    total += peer->queue_bytes;
    if (peer->conn != nullptr) total += peer->conn->writing_bytes;
  }
  return total;
}

void Transport::close_handle_counted(void* handle) {
  uv_close(static_cast<uv_handle_t*>(handle), [](uv_handle_t* h) {
    auto* self = static_cast<Transport*>(h->data);
    --self->handles_open_;
    if (h->type == UV_UDP) delete reinterpret_cast<uv_udp_t*>(h);
    else if (h->type == UV_TCP) delete reinterpret_cast<uv_tcp_t*>(h);
    else if (h->type == UV_TIMER) delete reinterpret_cast<uv_timer_t*>(h);
    else if (h->type == UV_PREPARE) delete reinterpret_cast<uv_prepare_t*>(h);
    self->maybe_finish_close();
  });
}

void Transport::close(std::function<void()> done) {
  closing_ = true;
  close_done_ = std::move(done);
  std::vector<Conn*> all(conns_.begin(), conns_.end());
  for (Conn* c : all) {
    if (!c->closing) close_conn(*c, "shutting down", LogLevel::kDebug);
  }
  for (auto& [addr, peer] : peers_) peer->conn = nullptr;
  peers_.clear();
  if (udp_ != nullptr) close_handle_counted(udp_);
  if (listener_ != nullptr) close_handle_counted(listener_);
  if (timer_ != nullptr) close_handle_counted(timer_);
  if (flush_prepare_ != nullptr) close_handle_counted(flush_prepare_);
  udp_ = nullptr;
  listener_ = nullptr;
  timer_ = nullptr;
  flush_prepare_ = nullptr;
  flush_peers_.clear();
  maybe_finish_close();
}

void Transport::maybe_finish_close() {
  if (!closing_ || handles_open_ > 0 || !conns_.empty() || !close_done_) return;
  auto done = std::move(close_done_);
  close_done_ = nullptr;
  done();
}

}  // namespace caesium::daemon
