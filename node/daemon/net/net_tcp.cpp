// Transport, part 2: TCP connections — accepting, connecting with backoff, the bounded
// per-destination send queue, and length-prefixed frame parsing.
//
// libuv callbacks are captureless lambdas inside member functions, so they reach the
// private Conn/Peer types; each handle's `data` points at its Conn.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "node/daemon/net/net_internal.h"

namespace caesium::daemon {
namespace {

constexpr int64_t kBackoffMinMs = 100;
constexpr int64_t kBackoffMaxMs = 5'000;
constexpr size_t kWriteHighWater = 256 * 1024;  // bytes handed to the socket per connection
constexpr size_t kPrefixBytes = 4;

uint32_t read_be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

void write_be32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

uv_stream_t* stream_of(uv_tcp_t* tcp) { return reinterpret_cast<uv_stream_t*>(tcp); }

}  // namespace

// Every connection is read: inbound ones for frames, outbound ones to notice the peer
// closing.
void Transport::start_read(Conn& c) {
  uv_read_start(
      stream_of(&c.tcp),
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        auto* conn = static_cast<Conn*>(h->data);
        std::string& scratch = conn->owner->read_buf_;
        *buf = uv_buf_init(scratch.data(), static_cast<unsigned>(scratch.size()));
      },
      [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
        auto* conn = static_cast<Conn*>(s->data);
        conn->owner->on_read(*conn, static_cast<long>(nread), buf->base);
      });
}

void Transport::on_accept(int status) {
  if (status < 0 || closing_) {
    if (status < 0) log(LogLevel::kWarn, std::string("accept failed: ") + uv_strerror(status));
    return;
  }
  auto* c = new Conn();
  c->owner = this;
  c->started_ms = c->last_activity_ms = now_ms();
  uv_tcp_init(loop_, &c->tcp);
  c->tcp.data = c;
  conns_.insert(c);
  metrics_.connections_open = conns_.size();
  if (uv_accept(reinterpret_cast<uv_stream_t*>(listener_), stream_of(&c->tcp)) != 0) {
    close_conn(*c, "accept failed", LogLevel::kDebug);
    return;
  }
  sockaddr_storage peer{};
  int len = sizeof peer;
  c->remote = uv_tcp_getpeername(&c->tcp, reinterpret_cast<sockaddr*>(&peer), &len) == 0
                  ? address_text(reinterpret_cast<sockaddr*>(&peer))
                  : "?";
  if (inbound_ >= config_.max_connections) {
    ++metrics_.connections_refused;
    close_conn(*c, "too many inbound connections (limits.max_connections)", LogLevel::kWarn);
    return;
  }
  ++metrics_.connections_accepted;
  ++inbound_;
  c->counts_inbound = true;
  start_read(*c);
}

void Transport::send_frame(const std::string& to, std::string bytes) {
  if (closing_) return;
  if (bytes.empty() || bytes.size() > config_.max_frame_bytes) {
    // The peer would refuse it (and close the connection); the core's frame budget
    // keeps this from happening.
    ++metrics_.frames_dropped;
    log(LogLevel::kWarn, "dropping a frame of " + std::to_string(bytes.size()) + " bytes to " + to +
                             ": above limits.max_frame");
    return;
  }
  auto& slot = peers_[to];
  if (!slot) {
    slot = std::make_unique<Peer>();
    slot->addr = to;
  }
  Peer& p = *slot;
  p.last_used_ms = now_ms();
  std::string framed(kPrefixBytes + bytes.size(), '\0');
  write_be32(framed.data(), static_cast<uint32_t>(bytes.size()));
  std::memcpy(framed.data() + kPrefixBytes, bytes.data(), bytes.size());
  p.queue_bytes += framed.size();
  p.queue.push_back(std::move(framed));
  // Bounded: a peer that is down or slow loses its oldest frames, never our memory.
  while (p.queue_bytes > config_.send_queue_bytes && p.queue.size() > 1) {
    p.queue_bytes -= p.queue.front().size();
    p.queue.pop_front();
    ++metrics_.frames_dropped;
  }
  if (p.conn == nullptr) {
    if (now_ms() >= p.retry_at_ms) connect(p);
  } else {
    // Written just before the loop next polls (flush_prepare_), together with whatever
    // else is queued for this peer by then: one writev for a burst of frames.
    if (!p.flush_pending) {
      p.flush_pending = true;
      flush_peers_.push_back(to);
    }
    if (flush_prepare_ != nullptr && !uv_is_active(reinterpret_cast<uv_handle_t*>(flush_prepare_))) {
      uv_prepare_start(flush_prepare_, [](uv_prepare_t* h) { static_cast<Transport*>(h->data)->flush(); });
    }
  }
}

void Transport::reconnect_now(const std::string& to) {
  if (closing_) return;
  auto it = peers_.find(to);
  if (it == peers_.end()) return;
  Peer& p = *it->second;
  p.backoff_ms = 0;
  p.retry_at_ms = 0;
  if (p.conn == nullptr && !p.queue.empty()) connect(p);
}

void Transport::flush() {
  if (flush_prepare_ != nullptr) uv_prepare_stop(flush_prepare_);
  std::vector<std::string> addrs;
  addrs.swap(flush_peers_);
  for (const auto& addr : addrs) {
    auto it = peers_.find(addr);
    if (it == peers_.end()) continue;
    it->second->flush_pending = false;
    pump(*it->second);
  }
}

void Transport::connect(Peer& p) {
  assert(p.conn == nullptr);
  sockaddr_storage addr{};
  if (!lookup(p.addr, addr)) {
    // Resolving (the tick retries) or unresolvable (retry later).
    p.retry_at_ms = now_ms() + kBackoffMinMs;
    return;
  }
  auto* c = new Conn();
  c->owner = this;
  c->outbound = true;
  c->peer = &p;
  c->remote = p.addr;
  c->started_ms = c->last_activity_ms = now_ms();
  uv_tcp_init(loop_, &c->tcp);
  c->tcp.data = c;
  c->connect_req.data = c;
  conns_.insert(c);
  metrics_.connections_open = conns_.size();
  p.conn = c;
  uv_tcp_nodelay(&c->tcp, 1);
  const int rc = uv_tcp_connect(&c->connect_req, &c->tcp, reinterpret_cast<const sockaddr*>(&addr),
                                [](uv_connect_t* req, int status) {
                                  auto* conn = static_cast<Conn*>(req->data);
                                  conn->owner->on_connected(*conn, status);
                                });
  if (rc != 0) {
    ++metrics_.connect_failures;
    close_conn(*c, std::string("connect failed: ") + uv_strerror(rc), LogLevel::kDebug);
  }
}

void Transport::on_connected(Conn& c, int status) {
  if (c.closing) return;  // closed while connecting (UV_ECANCELED)
  if (status < 0) {
    ++metrics_.connect_failures;
    close_conn(c, std::string("connect failed: ") + uv_strerror(status), LogLevel::kDebug);
    return;
  }
  ++metrics_.connects;
  c.connected = true;
  c.last_activity_ms = now_ms();
  start_read(c);
  if (c.peer != nullptr) {
    c.peer->backoff_ms = 0;
    pump(*c.peer);
  }
}

void Transport::pump(Peer& p) {
  Conn* c = p.conn;
  if (c == nullptr || !c->connected || c->closing) return;
  constexpr size_t kMaxFramesPerWrite = 256;
  while (!p.queue.empty() && c->writing_bytes < kWriteHighWater) {
    auto* req = new WriteReq();
    while (!p.queue.empty() && req->frames.size() < kMaxFramesPerWrite && c->writing_bytes + req->bytes < kWriteHighWater) {
      req->bytes += p.queue.front().size();
      req->frames.push_back(std::move(p.queue.front()));
      p.queue.pop_front();
    }
    p.queue_bytes -= req->bytes;
    c->writing_bytes += req->bytes;
    req->req.data = req;
    std::vector<uv_buf_t> bufs;
    bufs.reserve(req->frames.size());
    for (auto& f : req->frames) bufs.push_back(uv_buf_init(f.data(), static_cast<unsigned>(f.size())));
    const int rc = uv_write(&req->req, stream_of(&c->tcp), bufs.data(), static_cast<unsigned>(bufs.size()),
                            [](uv_write_t* w, int status) {
      auto* q = static_cast<WriteReq*>(w->data);
      auto* conn = static_cast<Conn*>(w->handle->data);
      Transport* self = conn->owner;
      conn->writing_bytes -= q->bytes;
      const size_t frames = q->frames.size();
      delete q;
      if (status < 0) {
        if (!conn->closing) self->close_conn(*conn, std::string("write failed: ") + uv_strerror(status), LogLevel::kDebug);
        return;
      }
      self->metrics_.frames_out += frames;
      conn->last_activity_ms = self->now_ms();
      if (!conn->closing && conn->peer != nullptr) self->pump(*conn->peer);
    });
    if (rc != 0) {
      c->writing_bytes -= req->bytes;
      delete req;
      close_conn(*c, std::string("write failed: ") + uv_strerror(rc), LogLevel::kDebug);
      return;
    }
  }
}

void Transport::on_read(Conn& c, long nread, const char* data) {
  if (nread == 0 || c.closing) return;
  if (nread < 0) {
    close_conn(c, nread == UV_EOF ? "closed by the peer" : uv_strerror(static_cast<int>(nread)), LogLevel::kDebug);
    return;
  }
  c.last_activity_ms = now_ms();
  c.rbuf.append(data, static_cast<size_t>(nread));
  size_t pos = 0;
  while (c.rbuf.size() - pos >= kPrefixBytes) {
    const uint32_t len = read_be32(c.rbuf.data() + pos);
    if (len == 0 || len > config_.max_frame_bytes) {
      ++metrics_.bad_frames;
      close_conn(c, "bad frame length " + std::to_string(len) + " (limits.max_frame is " +
                        std::to_string(config_.max_frame_bytes) + ")",
                 LogLevel::kWarn);
      return;
    }
    if (c.rbuf.size() - pos - kPrefixBytes < len) break;
    ++metrics_.frames_in;
    if (cb_.on_frame) cb_.on_frame(c.remote, std::string_view(c.rbuf.data() + pos + kPrefixBytes, len));
    pos += kPrefixBytes + len;
    if (c.closing || closing_) return;
  }
  c.rbuf.erase(0, pos);
}

void Transport::close_conn(Conn& c, const std::string& why, LogLevel level) {
  if (c.closing) return;
  c.closing = true;
  log(level, std::string(c.outbound ? "connection to " : "connection from ") + c.remote + " closed: " + why);
  if (c.counts_inbound) {
    --inbound_;
    c.counts_inbound = false;
  }
  if (c.peer != nullptr) {
    Peer& p = *c.peer;
    p.conn = nullptr;
    c.peer = nullptr;
    peer_failed(p);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), [](uv_handle_t* h) {
    auto* conn = static_cast<Conn*>(h->data);
    conn->owner->on_conn_closed(conn);
  });
}

void Transport::on_conn_closed(Conn* c) {
  conns_.erase(c);
  metrics_.connections_open = conns_.size();
  delete c;
  maybe_finish_close();
}

// The next attempt waits out an exponential backoff; the tick reconnects when frames
// are queued.
void Transport::peer_failed(Peer& p) {
  p.backoff_ms = std::clamp<int64_t>(p.backoff_ms * 2, kBackoffMinMs, kBackoffMaxMs);
  p.retry_at_ms = now_ms() + p.backoff_ms;
}

}  // namespace caesium::daemon
