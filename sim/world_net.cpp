// World: the simulated network — routing by address, loss, duplication, corruption,
// latency, partitions, and stream connections that break.
#include <algorithm>
#include <cassert>
#include <utility>

#include "sim/world.h"

namespace caesium::sim {

World::Connection& World::connection(uint32_t src, uint32_t dst) {
  return connections_[(static_cast<uint64_t>(src) << 32) | dst];
}

void World::send(uint32_t node, node::Transmit& tx) {
  SimNode& n = nodes_[node];
  const bool datagram = tx.channel == node::Channel::kDatagram;
  ChannelStats& st = datagram ? datagram_ : stream_;
  const uint64_t size = tx.bytes.size();
  ++st.sent;
  st.sent_bytes += size;
  st.max_bytes = std::max(st.max_bytes, size);
  ++n.sent_msgs;
  n.sent_bytes += size;
  const auto& index = datagram ? addresses_.by_gossip : addresses_.by_stream;
  const uint32_t* to = index.find(tx.to_addr);
  if (to == nullptr) {
    ++st.unroutable;
    mix(0xB0A7 ^ size);
    return;
  }
  if (datagram) {
    send_datagram(node, *to, std::move(tx.bytes));
  } else {
    send_stream(node, *to, std::move(tx.bytes));
  }
  tx.bytes.clear();
}

void World::note_latency(uint32_t src, uint32_t dst, int64_t arrive_ms) {
  if (arrive_ms - now_ms_ - options_.network.latency.base_ms <= kLatencySpikeMs) return;
  if (spikes_.size() < kMaxSpikes) {
    spikes_.push_back(LatencySpike{src, dst, now_ms_, arrive_ms});
    longest_spike_ms_ = std::max(longest_spike_ms_, arrive_ms - now_ms_);
  } else if (spikes_overflow_ms_ < 0) {
    spikes_overflow_ms_ = now_ms_;
  }
}

void World::corrupt(std::string& bytes) {
  if (bytes.empty()) return;
  const uint64_t flips = 1 + net_rng_.below(4);
  for (uint64_t i = 0; i < flips; ++i) {
    const uint64_t at = net_rng_.below(bytes.size());
    // XOR with a non-zero mask: the byte always changes.
    bytes[at] = static_cast<char>(static_cast<unsigned char>(bytes[at]) ^
                                  static_cast<unsigned char>(1 + net_rng_.below(255)));
  }
}

void World::send_datagram(uint32_t src, uint32_t dst, std::string bytes) {
  const NetworkParams& p = options_.network;
  const uint64_t size = bytes.size();
  mix(0xDA7A ^ (static_cast<uint64_t>(src) << 32 | dst));
  mix(hash64(bytes));
  if (size > p.max_datagram_bytes) {
    ++datagram_.oversize;
    if (oversize_reported_++ < 10) {
      violate({"datagram_size",
               "a datagram of " + std::to_string(size) + " bytes to " + spec(dst).id +
                   " exceeds the " + std::to_string(p.max_datagram_bytes) + "-byte limit",
               now_ms_, spec(src).id});
    }
    return;
  }
  if (!links_.current().can_send(src, dst)) {
    ++datagram_.dropped_partition;
    return;
  }
  if (net_rng_.chance(p.loss)) {
    ++datagram_.dropped_loss;
    mix(0x1055);
    return;
  }
  const int copies = net_rng_.chance(p.duplicate) ? 2 : 1;
  if (copies == 2) ++datagram_.duplicated;
  for (int c = 0; c < copies; ++c) {
    InFlight m;
    m.bytes = c + 1 < copies ? bytes : std::move(bytes);
    m.src = src;
    if (net_rng_.chance(p.corrupt)) {
      corrupt(m.bytes);
      ++datagram_.corrupted;
      mix(0xC0AA);
    }
    Event e;
    e.kind = EventKind::kDatagram;
    e.node = dst;
    e.time_ms = now_ms_ + p.latency.sample(net_rng_);
    note_latency(src, dst, e.time_ms);
    e.slot = in_flight_.put(std::move(m));
    queue_.push(e);
  }
}

void World::send_stream(uint32_t src, uint32_t dst, std::string bytes) {
  mix(0x57EA ^ (static_cast<uint64_t>(src) << 32 | dst));
  mix(hash64(bytes));
  Connection& conn = connection(src, dst);
  if (conn.state == Connection::State::kConnected) {
    transmit_stream(src, dst, conn, std::move(bytes));
    return;
  }
  // No connection: the frame waits, and the oldest go when the queue is full.  The first
  // frame queued while the back-off runs arms the reconnect at its end (the daemon's tick
  // reconnects a destination with frames queued once its back-off ran out).
  ++stream_.queued;
  if (conn.queue.empty() && conn.state == Connection::State::kIdle && now_ms_ < conn.retry_at_ms) {
    connect_event(src, dst, conn, conn.retry_at_ms, true);
  }
  conn.queue_bytes += bytes.size();
  conn.queue.push_back(std::move(bytes));
  while (conn.queue_bytes > kSendQueueBytes && conn.queue.size() > 1) {
    conn.queue_bytes -= conn.queue.front().size();
    conn.queue.pop_front();
    ++stream_.queue_dropped;
  }
  if (conn.state == Connection::State::kIdle && now_ms_ >= conn.retry_at_ms) start_connect(src, dst, conn);
}

// A frame on an open connection: FIFO, lost if the connection breaks before it arrives.
void World::transmit_stream(uint32_t src, uint32_t dst, Connection& conn, std::string bytes) {
  const NetworkParams& p = options_.network;
  InFlight m;
  m.bytes = std::move(bytes);
  m.src = src;
  m.src_generation = nodes_[src].generation;
  m.dst_generation = nodes_[dst].generation;
  m.connection = conn.epoch;
  if (net_rng_.chance(p.stream_corrupt)) {
    corrupt(m.bytes);
    ++stream_.corrupted;
    mix(0xC0AB);
  }
  // FIFO per connection: never deliver before the previous frame.
  const int64_t t = std::max(now_ms_ + p.latency.sample(net_rng_), conn.last_delivery_ms);
  conn.last_delivery_ms = t;
  note_latency(src, dst, t);  // (FIFO: a frame queued behind a slow one is as late)
  Event e;
  e.kind = EventKind::kStream;
  e.node = dst;
  e.time_ms = t;
  e.slot = in_flight_.put(std::move(m));
  queue_.push(e);
}

// A connect takes a round trip when the receiver's host answers (accepted, or refused by
// a process that is down), and the connect timeout when the link drops the SYN.
void World::start_connect(uint32_t src, uint32_t dst, Connection& conn) {
  conn.state = Connection::State::kConnecting;
  mix(0xC044 ^ (static_cast<uint64_t>(src) << 32 | dst));
  connect_event(src, dst, conn,
                now_ms_ + (links_.current().stream_ok(src, dst)
                               ? options_.network.latency.sample(net_rng_) + options_.network.latency.sample(net_rng_)
                               : kConnectTimeoutMs),
                false);
}

// The connection's next kConnect event; any earlier one becomes stale.
void World::connect_event(uint32_t src, uint32_t dst, Connection& conn, int64_t time_ms, bool retry) {
  Event e;
  e.kind = EventKind::kConnect;
  e.node = src;
  e.generation = nodes_[src].generation;
  e.a = dst;
  e.slot = ++conn.token;
  e.aux = retry ? 1 : 0;
  e.time_ms = time_ms;
  queue_.push(e);
}

void World::on_connect_event(const Event& e) {
  const uint32_t src = e.node;
  const auto dst = static_cast<uint32_t>(e.a);
  if (!nodes_[src].up || nodes_[src].generation != e.generation) return;
  Connection& conn = connection(src, dst);
  if (e.slot != conn.token) return;  // superseded
  if (e.aux == 1) {  // the back-off ran out
    if (conn.state == Connection::State::kIdle && !conn.queue.empty()) start_connect(src, dst, conn);
    return;
  }
  if (conn.state != Connection::State::kConnecting) return;
  if (!nodes_[dst].up || !links_.current().stream_ok(src, dst)) {
    ++stream_.connect_failures;
    mix(0xFA11 ^ (static_cast<uint64_t>(src) << 32 | dst));
    conn.state = Connection::State::kIdle;
    connection_failed(src, dst, conn);
    return;
  }
  ++stream_.connects;
  mix(0xC0EC ^ (static_cast<uint64_t>(src) << 32 | dst));
  conn.state = Connection::State::kConnected;
  ++conn.epoch;
  conn.last_delivery_ms = 0;
  conn.backoff_ms = 0;
  std::deque<std::string> queued;
  queued.swap(conn.queue);
  conn.queue_bytes = 0;
  for (std::string& frame : queued) transmit_stream(src, dst, conn, std::move(frame));
}

// The daemon's peer_failed: the next attempt waits out an exponential back-off, and is
// made then only if frames are waiting (a later send also connects once it ran out).
void World::connection_failed(uint32_t src, uint32_t dst, Connection& conn) {
  conn.backoff_ms = std::clamp<int64_t>(conn.backoff_ms * 2, kBackoffMinMs, kBackoffMaxMs);
  conn.retry_at_ms = now_ms_ + conn.backoff_ms;
  if (!conn.queue.empty()) connect_event(src, dst, conn, conn.retry_at_ms, true);
}

void World::break_connection(uint32_t src, uint32_t dst, Connection& conn) {
  if (conn.state != Connection::State::kConnected) return;  // a connect in progress fails on its own
  ++conn.epoch;
  conn.last_delivery_ms = 0;
  conn.state = Connection::State::kIdle;
  connection_failed(src, dst, conn);
}

std::vector<uint64_t> World::connection_keys(const std::function<bool(uint32_t, uint32_t)>& pred) const {
  std::vector<uint64_t> keys;
  for (const auto& [key, conn] : connections_) {
    if (pred(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key & 0xffffffffu))) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

void World::reconnect_now(uint32_t src, const std::string& stream_addr) {
  const uint32_t* dst = addresses_.by_stream.find(stream_addr);
  if (dst == nullptr) return;
  Connection& conn = connection(src, *dst);
  ++stream_.reconnects_now;
  mix(0x2EC0 ^ (static_cast<uint64_t>(src) << 32 | *dst));
  trace(spec(src).id + " reconnects to " + spec(*dst).id + " at once (it restarted)");
  conn.backoff_ms = 0;
  conn.retry_at_ms = 0;
  if (conn.state == Connection::State::kIdle && !conn.queue.empty()) start_connect(src, *dst, conn);
}

void World::deliver(Event& e) {
  const bool datagram = e.kind == EventKind::kDatagram;
  ChannelStats& st = datagram ? datagram_ : stream_;
  SimNode& n = nodes_[e.node];
  InFlight& m = in_flight_.at(e.slot);
  bool drop = false;
  if (!n.up) {
    ++st.dropped_down;
    drop = true;
  } else if (datagram) {
    if (!links_.current().can_send(m.src, e.node)) {
      ++st.dropped_partition;
      drop = true;
    }
  } else {
    const Connection& conn = connection(m.src, e.node);
    if (conn.epoch != m.connection || nodes_[m.src].generation != m.src_generation ||
        n.generation != m.dst_generation) {
      ++st.broken;
      drop = true;
    }
  }
  if (drop) {
    mix(0xD209 ^ e.node);
    in_flight_.take(e.slot);
    return;
  }
  if (defer_if_slow(e)) return;
  InFlight msg = in_flight_.take(e.slot);
  ++st.delivered;
  st.delivered_bytes += msg.bytes.size();
  mix(0xDE11 ^ (static_cast<uint64_t>(msg.src) << 32 | e.node));
  const node::Clock now = clock_of(e.node);
  if (datagram) {
    n.process->on_datagram(spec(msg.src).gossip_addr, msg.bytes, now);
  } else {
    n.process->on_stream(spec(msg.src).stream_addr, msg.bytes, now);
  }
  drain(e.node);
}

// After a partition change: break every stream connection whose link is now unusable.
void World::links_changed() {
  const LinkState& links = links_.current();
  for (uint64_t key : connection_keys([&](uint32_t src, uint32_t dst) { return !links.stream_ok(src, dst); })) {
    break_connection(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key & 0xffffffffu), connections_.at(key));
  }
}

}  // namespace caesium::sim
