// Transport internals shared by net.cpp (UDP, addresses, timers) and net_tcp.cpp
// (connections).  Not part of the daemon's interface.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <deque>
#include <string>
#include <vector>

#include "node/daemon/net/net.h"

namespace caesium::daemon {

// An address lookup: IP literals are resolved on first use, names asynchronously.
struct Transport::Resolved {
  enum class State : uint8_t { kResolving, kOk, kFailed };
  State state = State::kResolving;
  sockaddr_storage addr{};
  int64_t expires_ms = 0;  // look the name up again after this
};

// One destination of outgoing frames.  Invariant: queue_bytes == sum of queue sizes;
// `conn`, when set, is an outbound Conn whose `peer` points back here.
struct Transport::Peer {
  std::string addr;
  std::deque<std::string> queue;  // framed (length prefix included), not yet written
  size_t queue_bytes = 0;
  Conn* conn = nullptr;
  int64_t retry_at_ms = 0;  // no connection attempt before this
  int64_t backoff_ms = 0;
  int64_t last_used_ms = 0;
  bool flush_pending = false;  // listed in flush_peers_
};

// One TCP connection.  Inbound ones are only read; outbound ones are written (and read,
// so that a peer closing is noticed).  Deleted by the close callback only.
struct Transport::Conn {
  uv_tcp_t tcp{};
  uv_connect_t connect_req{};
  Transport* owner = nullptr;
  Peer* peer = nullptr;  // outbound: its destination (null once that is forgotten)
  std::string remote;    // "ip:port" of the other end, or the destination address
  bool outbound = false;
  bool counts_inbound = false;  // holds one of the max_connections inbound slots
  bool connected = false;
  bool closing = false;
  int64_t started_ms = 0;
  int64_t last_activity_ms = 0;
  std::string rbuf;  // received bytes not yet parsed into frames
  size_t writing_bytes = 0;
};

// Bytes handed to uv_write / uv_udp_send live here until the callback.
struct WriteReq {
  uv_write_t req{};
  std::vector<std::string> frames;  // written together (one writev)
  size_t bytes = 0;
};
struct UdpSendReq {
  uv_udp_send_t req{};
  std::string data;
};

// "ip:port" of a socket address ("?" when it is not IPv4/IPv6).
std::string address_text(const sockaddr* addr);

}  // namespace caesium::daemon
