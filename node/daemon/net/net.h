// The daemon's transport on the libuv loop: UDP datagrams for gossip and TCP streams of
// length-prefixed frames for everything else (docs/design.md §8).  Bytes only: frames arrive
// already sealed by the Node core and are handed back to it unopened.
//
// Datagrams.  One UDP socket bound to gossip_listen.  Payloads above 1400 bytes are
// dropped in both directions (counted): the core never produces them, and a larger
// incoming one is not ours.
//
// Streams.  One TCP listener on stream_listen accepts connections that are only read
// from.  Outgoing frames go through one connection per destination address, created
// lazily, reused, and reconnected with exponential backoff (100 ms .. 5 s).  Each
// destination has a bounded queue of frames not yet handed to the socket; when it is
// full (the peer is down or slow), the oldest frames are dropped and counted — the
// protocol tolerates loss, and new frames matter more than old ones.  A frame on the
// wire is a 4-byte big-endian length followed by that many bytes; a length of 0 or above
// max_frame_bytes closes the connection (counted), it never crashes or stalls the node.
// Connections without traffic for idle_timeout are closed.
//
// Addresses are "host:port" text (node/daemon/net/net_addr.h); IP literals are used at once,
// names are resolved asynchronously and cached for a minute (datagrams to a name not yet
// resolved are dropped and counted; frames wait in the queue).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "base/result.h"
#include "node/daemon/config/config.h"
#include "node/daemon/metrics/runtime_metrics.h"

struct uv_loop_s;
struct uv_udp_s;
struct uv_tcp_s;
struct uv_timer_s;
struct uv_prepare_s;
struct sockaddr;
struct sockaddr_storage;

namespace caesium::daemon {

inline constexpr size_t kMaxDatagramBytes = 1400;

class Transport {
 public:
  struct Callbacks {
    std::function<void(const std::string& from, std::string_view bytes)> on_datagram;
    std::function<void(const std::string& from, std::string_view frame)> on_frame;
    std::function<void(LogLevel, const std::string&)> log;
  };

  Transport(uv_loop_s* loop, TransportConfig config, Callbacks callbacks);
  // REQUIRES: close() completed, or listen() never called.
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Binds the UDP socket and the TCP listener.  An Error names the address and why
  // ("address already in use").
  Status listen(const std::string& gossip_addr, const std::string& stream_addr);

  void send_datagram(const std::string& to, std::string bytes);
  void send_frame(const std::string& to, std::string bytes);
  // The process at `to` restarted: forget the reconnect backoff towards it and connect
  // now if frames wait (otherwise the next frame connects at once).
  void reconnect_now(const std::string& to);

  // Bytes of outgoing frames not yet written to a socket (queued or in flight).
  size_t pending_bytes() const;

  // Closes every socket and timer; `done` runs on the loop thread once all are closed.
  void close(std::function<void()> done);

  const TransportMetrics& metrics() const { return metrics_; }

 private:
  struct Conn;
  struct Peer;
  struct Resolved;

  // net.cpp: UDP, addresses, timers
  bool lookup(const std::string& addr, sockaddr_storage& out);
  void start_resolve(const std::string& addr);
  void on_tick();
  int64_t now_ms() const;
  void log(LogLevel level, const std::string& message) const;
  void maybe_finish_close();
  void close_handle_counted(void* handle);

  // net_tcp.cpp: connections
  void on_accept(int status);
  void start_read(Conn& conn);
  void connect(Peer& peer);
  void on_connected(Conn& conn, int status);
  void pump(Peer& peer);
  void flush();  // pumps every peer with frames queued since the last flush
  void on_read(Conn& conn, long nread, const char* data);
  void close_conn(Conn& conn, const std::string& why, LogLevel level);
  void on_conn_closed(Conn* conn);
  void peer_failed(Peer& peer);

  uv_loop_s* loop_;
  TransportConfig config_;
  Callbacks cb_;
  TransportMetrics metrics_;

  uv_udp_s* udp_ = nullptr;
  uv_tcp_s* listener_ = nullptr;
  uv_timer_s* timer_ = nullptr;
  uv_prepare_s* flush_prepare_ = nullptr;  // active while flush_peers_ is not empty
  std::vector<std::string> flush_peers_;
  std::string read_buf_;  // shared scratch buffer for every read callback

  std::map<std::string, std::unique_ptr<Peer>> peers_;  // by destination address
  std::set<Conn*> conns_;                               // inbound and outbound, open or closing
  std::map<std::string, std::unique_ptr<Resolved>> resolved_;
  size_t inbound_ = 0;
  int64_t next_sweep_ms_ = 0;

  bool closing_ = false;
  int handles_open_ = 0;
  std::function<void()> close_done_;
};

}  // namespace caesium::daemon
