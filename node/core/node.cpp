// Node core, part 1: lifecycle, frames in and out, the outbox with durability
// barriers, storage batches, and the pump that runs the internal queues to quiescence.
#include "node/core/node.h"

#include <algorithm>
#include <cassert>

#include "base/bytes.h"


namespace caesium::node {
namespace {

constexpr std::string_view kFormatKey = "n/format";
constexpr std::string_view kFormatValue = "caesium/1";
constexpr std::string_view kNodeKey = "n/node";
constexpr std::string_view kClusterKey = "n/cluster";
constexpr std::string_view kIncarnationKey = "n/incarnation";
constexpr std::string_view kHorizonKey = "n/horizon";
constexpr std::string_view kConfigKey = "c/config";
constexpr std::string_view kConfigVoteKey = "c/vote";  // node_config_vote.cpp
constexpr std::string_view kVolumePrefix = "v/";

std::string encode_i64(int64_t v) {
  ByteWriter w;
  w.svarint(v);
  return w.take();
}

Result<int64_t> decode_i64(std::string_view s) {
  ByteReader r(s);
  const int64_t v = r.svarint();
  if (!r.done()) return Error("corrupt integer record");
  return v;
}

schedule::FireMessage to_fire(wire::CoreMessage& m) {
  return std::visit(
      [](auto& x) -> schedule::FireMessage {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_constructible_v<schedule::FireMessage, T>) {
          return schedule::FireMessage{std::move(x)};
        } else {
          assert(false);
          return schedule::FireMessage{};
        }
      },
      m);
}

}  // namespace

std::string encode_incarnation(uint64_t incarnation) { return encode_i64(static_cast<int64_t>(incarnation)); }

std::string encode_stored_record(const schedule::RecordView& r) {
  ByteWriter w(24 + r.origin.size() + (r.value ? r.value->size() : 0));
  w.u8(1);
  w.svarint(r.physical_ms);
  w.varint(r.logical);
  w.str(r.origin);
  w.boolean(r.value.has_value());
  if (r.value) w.str(*r.value);
  return w.take();
}

Result<schedule::Record> decode_stored_record(std::string_view key, std::string_view bytes) {
  ByteReader r(bytes);
  schedule::Record rec;
  rec.key = std::string(key);
  if (r.u8() != 1) return Error("stored record '" + rec.key + "' has an unknown format");
  rec.version.physical_ms = r.svarint();
  rec.version.logical = static_cast<uint32_t>(r.varint());
  rec.version.origin = r.str(1024);
  if (r.boolean()) rec.value = r.str();
  if (!r.done()) return Error("stored record '" + rec.key + "' is corrupt");
  return rec;
}

Node::Node(NodeOptions options, uint64_t seed)
    : options_(std::move(options)),
      rng_(seed),
      replay_(options_.replay_window_ms),
      clock_watch_(ClockWatch::Options{.window_ms = 15'000,
                                       .warn_above_ms = 2 * options_.scheduler.max_clock_skew_ms,
                                       .warn_every_ms = 60'000}) {
  boot_id_ = rng_.next_u64() | 1;
  cipher_ = std::make_unique<wire::FrameCipher>(options_.keyring, options_.cluster_name, boot_id_);
}

Node::~Node() = default;

Status Node::start(const std::vector<StoredRecord>& records, Clock now) {
  assert(!started_);
  last_ = now;
  started_mono_ms_ = now.mono_ms;
  restored_ = !records.empty();
  bool formatted = false;
  int64_t stored_incarnation = 0, horizon = 0;
  std::optional<ClusterConfig> stored_config;
  std::vector<std::pair<std::string, schedule::Record>> volume_records;
  std::vector<const StoredRecord*> grants;
  for (const auto& rec : records) {
    if (rec.key == kFormatKey) {
      if (rec.value != kFormatValue) {
        return Error("the data directory was written by an unknown format '" + rec.value + "' (expected " +
                     std::string(kFormatValue) + ")");
      }
      formatted = true;
    } else if (rec.key == kNodeKey) {
      if (rec.value != options_.id) {
        return Error("the data directory belongs to node '" + rec.value + "', not '" + options_.id + "'");
      }
    } else if (rec.key == kClusterKey) {
      if (rec.value != options_.cluster_name) {
        return Error("the data directory belongs to cluster '" + rec.value + "', not '" + options_.cluster_name + "'");
      }
    } else if (rec.key == kIncarnationKey) {
      auto v = decode_i64(rec.value);
      if (!v) return Error("the data directory's incarnation record is corrupt");
      stored_incarnation = *v;
    } else if (rec.key == kHorizonKey) {
      auto v = decode_i64(rec.value);
      if (!v) return Error("the data directory's amnesia record is corrupt");
      horizon = *v;
    } else if (rec.key == kConfigKey) {
      auto c = decode_cluster_config(rec.value);
      if (!c) return Error("the stored cluster config is corrupt: " + c.error().message);
      stored_config = std::move(*c);
    } else if (rec.key.rfind(kVolumePrefix, 0) == 0) {
      const std::string_view rest = std::string_view(rec.key).substr(kVolumePrefix.size());
      const size_t slash = rest.find('/');
      if (slash == std::string_view::npos) return Error("corrupt volume record key '" + rec.key + "'");
      auto r = decode_stored_record(rest.substr(slash + 1), rec.value);
      if (!r) return r.error();
      volume_records.emplace_back(std::string(rest.substr(0, slash)), std::move(*r));
    } else if (rec.key == kConfigVoteKey) {
      if (Status s = load_config_acceptor(rec.value); !s.ok()) return s;
    } else if (rec.key.rfind(kPeerPrefix, 0) == 0) {
      const std::string peer = rec.key.substr(kPeerPrefix.size());
      if (!valid_node_id(peer) || rec.value.empty()) return Error("corrupt peer record '" + rec.key + "'");
      remembered_peers_[peer] = rec.value;
    } else if (rec.key.rfind(schedule::kGrantPrefix, 0) == 0) {
      grants.push_back(&rec);
    } else {
      return Error("the data directory holds an unknown record '" + rec.key + "'");
    }
  }
  if (!records.empty() && !formatted) return Error("the data directory is not a Caesium data directory");

  incarnation_ = static_cast<uint64_t>(stored_incarnation) + 1;
  storage_put(std::string(kIncarnationKey), encode_incarnation(incarnation_));
  if (!formatted) {
    // A fresh or wiped disk: whatever this node granted or accepted in a previous life
    // is forgotten, so it abstains on everything that could have been due back then.
    storage_put(std::string(kFormatKey), std::string(kFormatValue));
    storage_put(std::string(kNodeKey), options_.id);
    storage_put(std::string(kClusterKey), options_.cluster_name);
    // Unless the operator says the node never ran (first_start): then there is no previous
    // life, and no horizon is recorded (a later start reads none).
    if (!options_.first_start) horizon = record_amnesia_horizon(now);
  }
  started_empty_ = !formatted;

  scheduler_ = std::make_unique<schedule::Scheduler>(schedule::ProcessId{options_.id, boot_id_},
                                                     options_.scheduler, static_cast<schedule::SchedulerHost&>(*this), now.mono_ms, now.utc_ms);
  scheduler_->set_amnesia_horizon(horizon);

  loading_ = true;
  ClusterConfig config = options_.initial_config;
  bool persist = !stored_config.has_value();
  if (stored_config && stored_config->epoch >= config.epoch) {
    config = std::move(*stored_config);
  } else {
    persist = true;
  }
  if (Status s = adopt_config(std::move(config), now, persist); !s.ok()) return s;
  for (auto& [volume, rec] : volume_records) {
    auto it = volumes_.find(volume);
    if (it == volumes_.end()) {
      // A volume this node no longer replicates.  Still in the config: it went down
      // before handing its records over, so it does that now (depart_volume).
      if (config_.volume(volume) == nullptr) continue;
      open_volume(volume, now);
      depart_volume(volume, now);
      it = volumes_.find(volume);
    }
    it->second.store->merge(rec, now.utc_ms);
  }
  for (const auto* g : grants) scheduler_->on_local_record(g->key, g->value);
  loading_ = false;

  gossip::MembershipConfig mc = options_.membership;
  if (Status s = gossip::check_config(mc); !s.ok()) return s;
  const gossip::MemberMeta meta = self_meta();
  if (Status s = gossip::Membership::check_identity(options_.id, options_.gossip_addr, meta, mc); !s.ok()) return s;
  membership_ = std::make_unique<gossip::Membership>(options_.id, options_.gossip_addr, meta, incarnation_, mc,
                                                     rng_.fork());
  // A restarted node joins through the replicas it last saw as well as its seeds: when a
  // partition keeps it from every seed, a co-replica on its side still lets it reconcile
  // before it decides (update_synced), instead of deciding alone from stale state.
  forget_peers_not_co_replicas();
  std::vector<std::string> join_through = options_.seeds;
  for (const auto& [peer, addr] : remembered_peers_) join_through.push_back(addr);  // never self: forgotten above
  membership_->join(join_through, now.mono_ms);
  started_ = true;
  pump(now);
  return Status::success();
}

void Node::adopt_members(const std::vector<gossip::Alive>& members, Clock now) {
  last_ = now;
  if (!started_) return;
  membership_->adopt_members(members, now.mono_ms);
  pump(now);
}

gossip::Alive Node::self_alive() const {
  return gossip::Alive{options_.id, membership_->incarnation(), options_.gossip_addr, membership_->self_meta()};
}

void Node::leave(Clock now) {
  last_ = now;
  if (left_ || !started_) return;
  left_ = true;
  active_ = false;
  scheduler_->leave(now);
  membership_->leave(now.mono_ms);
  pump(now);
}

// --- frames in ------------------------------------------------------------------------------

bool Node::open_frame(std::string_view bytes, node::Channel channel, wire::Envelope& out, Clock now) {
  wire::OpenedFrame opened;
  wire::FrameError err{};
  if (!cipher_->open(bytes, opened, err)) {
    ++counters_.auth_failures;
    return false;
  }
  const auto expected = channel == Channel::kDatagram ? wire::FrameChannel::kDatagram : wire::FrameChannel::kStream;
  if (opened.channel != expected) {
    ++counters_.malformed;
    return false;
  }
  auto env = wire::decode(opened.plaintext);
  if (!env) {
    ++counters_.malformed;
    return false;
  }
  if (env->version != wire::kProtocolVersion || env->boot_id != opened.boot_id) {
    ++counters_.unknown_messages;
    return false;
  }
  if (env->sender == options_.id) {
    // Our own id from another process: a node id conflict (membership reports it), or
    // a reflected frame.  Either way not for us.
    ++counters_.misrouted;
    return false;
  }
  const auto verdict = replay_.check(env->sender, env->boot_id, opened.channel, env->seq, env->sent_utc_ms, now.utc_ms);
  if (verdict != wire::ReplayGuard::Verdict::kFresh) {
    ++counters_.replays;
    return false;
  }
  const uint64_t sender_hash = hash64(env->sender);
  last_heard_mono_.get_or_insert(sender_hash) = now.mono_ms;
  last_heard_any_mono_ms_ = now.mono_ms;
  // A process of the sender this process has not heard from before — a restart, or the
  // first contact since this node started (frames queued for it since may wait behind a
  // backoff that grew while it was down): the driver reconnects to it at once.
  uint64_t& seen_boot = frame_boots_.get_or_insert(sender_hash);
  if (seen_boot != env->boot_id) {
    reconnects_.push_back(env->sender);  // its address is looked up once the frame is read
    if (seen_boot != 0) boots_changed_.push_back(env->sender);  // the scheduler hears of it (pump)
    seen_boot = env->boot_id;
    frame_boot_changed_mono_.get_or_insert(sender_hash) = now.mono_ms;
  }
  if (channel == Channel::kStream) {
    if (auto ahead = clock_watch_.observe(peer_clocks_.get_or_insert(sender_hash), env->sent_utc_ms, now.utc_ms,
                                          now.mono_ms)) {
      warn_clock_ahead(env->sender, *ahead);
    }
  }
  out = std::move(*env);
  return true;
}

// The amnesia horizon from now (docs/firing.md, Amnesia), recorded: a restart reads it.
int64_t Node::record_amnesia_horizon(Clock now) {
  const int64_t horizon = now.utc_ms + 2 * options_.scheduler.max_clock_skew_ms;
  storage_put(std::string(kHorizonKey), encode_i64(horizon));
  return horizon;
}

// --first-start was given to a node that ran before: its peers hold its id above the
// incarnation it started at (gossip::MembershipStats::previous_life_seen), so it was wiped,
// not new.  What it voted on until now may repeat a vote of its previous life, which
// nothing can undo; from now on it abstains as a wiped node does, and says so.
void Node::first_start_refuted(Clock now) {
  const int64_t horizon = record_amnesia_horizon(now);
  scheduler_->set_amnesia_horizon(horizon);
  NodeEvent e;
  e.kind = NodeEvent::Kind::kWarning;
  e.subject = options_.id;
  e.text = "started with --first-start, but the cluster knew this node before: its disk was lost, it is not new; "
           "it now abstains on occurrences due up to " + format_rfc3339_utc(horizon + options_.scheduler.prepare_ahead_ms) +
           " like a wiped node (what it voted on before this may repeat its previous life's votes); "
           "never give --first-start to a node that ran before";
  events_.push_back(std::move(e));
}

void Node::warn_clock_ahead(const std::string& peer, int64_t ahead_ms) {
  ++counters_.clock_skew_warnings;
  NodeEvent e;
  e.kind = NodeEvent::Kind::kWarning;
  e.subject = peer;
  e.text = "the clock of " + peer + " is at least " + std::to_string(ahead_ms) + " ms ahead of this node's, " +
           "more than twice max_clock_skew (" + std::to_string(options_.scheduler.max_clock_skew_ms) +
           " ms) allows: occurrences may run early by as much, and a node restarted without its disk " +
           "may accept again work it had accepted before; synchronize the clocks (NTP) or raise max_clock_skew";
  events_.push_back(std::move(e));
}

void Node::on_datagram(std::string_view from_addr, std::string_view bytes, Clock now) {
  (void)from_addr;
  last_ = now;
  ++counters_.datagrams_in;
  counters_.datagram_bytes_in += bytes.size();
  if (!started_) return;
  wire::Envelope env;
  if (!open_frame(bytes, Channel::kDatagram, env, now)) return;
  if (auto* packet = std::get_if<gossip::Packet>(&env.body)) {
    membership_->on_packet(gossip::Peer{env.sender, env.sender_addr}, *packet, now.mono_ms);
  } else if (std::holds_alternative<wire::UnknownBody>(env.body)) {
    ++counters_.unknown_messages;
  } else {
    ++counters_.malformed;
  }
  pump(now);
}

void Node::on_stream(std::string_view from_addr, std::string_view bytes, Clock now) {
  (void)from_addr;
  last_ = now;
  ++counters_.frames_in;
  counters_.frame_bytes_in += bytes.size();
  if (!started_) return;
  wire::Envelope env;
  if (!open_frame(bytes, Channel::kStream, env, now)) return;
  if (auto* pp = std::get_if<gossip::PushPull>(&env.body)) {
    membership_->on_push_pull(gossip::Peer{env.sender, env.sender_addr}, *pp, now.mono_ms);
  } else if (auto* batch = std::get_if<std::vector<wire::CoreMessage>>(&env.body)) {
    counters_.unknown_messages += env.unknown_messages;
    for (auto& m : *batch) on_core_message(env.sender, m, now);
  } else if (std::holds_alternative<wire::UnknownBody>(env.body)) {
    ++counters_.unknown_messages;
  } else {
    ++counters_.malformed;
  }
  pump(now);
}

void Node::on_core_message(const std::string& from, wire::CoreMessage& msg, Clock now) {
  if (std::holds_alternative<wire::UnknownMessage>(msg)) {
    ++counters_.unknown_messages;
  } else if (auto* req = std::get_if<wire::ConfigRequest>(&msg)) {
    if (config_.epoch >= req->epoch) queue_core(from, wire::ConfigDoc{config_.epoch, config_.encode()}, false);
  } else if (auto* doc = std::get_if<wire::ConfigDoc>(&msg)) {
    on_config_doc(from, *doc, now);
  } else if (auto* vote = std::get_if<wire::ConfigVote>(&msg)) {
    on_config_vote(from, *vote, now);
  } else if (auto* push = std::get_if<wire::StorePush>(&msg)) {
    on_store_push(from, *push, now);
  } else if (auto* sync = std::get_if<gossip::SyncMessage>(&msg)) {
    on_sync(from, *sync, now);
  } else if (auto* ack = std::get_if<wire::StoreAck>(&msg)) {
    on_store_ack(from, *ack);
  } else {
    scheduler_->on_message(from, to_fire(msg), now);
  }
}

void Node::on_tick(Clock now) {
  last_ = now;
  if (!started_) return;
  membership_->on_tick(now.mono_ms);
  maybe_activate(now);
  scheduler_->on_tick(now);
  check_withheld(now);
  merge_inbound(now, left_);
  release_held_acks(now);
  expire_sessions(now);
  retry_config_requests(now);
  config_proposal_tick(now);
  if (!all_synced_) refresh_masters(now);  // a lone node stops waiting for a sync partner
  start_syncs(now);
  if (now.mono_ms >= next_maintenance_mono_ms_) {
    next_maintenance_mono_ms_ = now.mono_ms + options_.maintenance_interval_ms;
    maintenance(now);
  } else if (maintenance_running_) {
    maintenance_step(now);
  }
  pump(now);
}

void Node::on_durable(uint64_t seq, Clock now) {
  last_ = now;
  durable_seq_ = std::max(durable_seq_, seq);
  if (started_) pump(now);
}

void Node::on_invocation_done(const InvocationResult& result, Clock now) {
  last_ = now;
  if (!started_) return;
  scheduler_->on_invocation_done(result, now);
  refresh_meta(now);
  pump(now);
}

// Runs the internal queues until nothing moves: store changes to the scheduler,
// messages to ourselves, membership output and events.  Each step only ever consumes
// queued work, and every queue is finite, so this terminates.
void Node::pump(Clock now) {
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    bool progress = false;
    if (!boots_changed_.empty()) {
      // A worker or owner restarted, as its frames say before gossip may (Node::peer).
      for (const auto& peer : boots_changed_) scheduler_->on_peer_change(peer, now);
      boots_changed_.clear();
      progress = true;
    }
    if (!deferred_records_.empty()) {
      while (!deferred_records_.empty()) {
        DeferredRecord d = std::move(deferred_records_.front());
        deferred_records_.pop_front();
        scheduler_->on_record(d.volume, d.key, d.value, now);
      }
      scheduler_->settle(now);  // decided on as a batch (Scheduler::on_record)
      progress = true;
    }
    // Released messages to ourselves are taken out first: delivering one may queue more.
    std::vector<wire::CoreMessage> mine;
    while (!self_out_.empty() && self_out_.front().barrier <= durable_seq_) {
      mine.push_back(std::move(self_out_.front().msg));
      self_out_.pop_front();
    }
    for (auto& m : mine) on_core_message(options_.id, m, now);
    progress = progress || !mine.empty();
    progress = write_notices(now) || progress;
    drain_membership(now);
    if (!progress && deferred_records_.empty()) break;
  }
}

// --- frames out -----------------------------------------------------------------------------

void Node::queue_core(const std::string& to, wire::CoreMessage msg, bool after_durable) {
  auto& queue = to == options_.id ? self_out_ : remote_out_;
  // Keep barriers non-decreasing along the queue: a message that needs no durability
  // waits behind one that does (at most one commit), so the front decides for all.
  uint64_t barrier = after_durable ? write_barrier() : 0;
  if (!queue.empty()) barrier = std::max(barrier, queue.back().barrier);
  queue.push_back(PendingMessage{to, std::move(msg), barrier});
}

void Node::send(const std::string& node, schedule::FireMessage msg, bool after_durable) {
  wire::CoreMessage m = std::visit([](auto&& x) -> wire::CoreMessage { return wire::CoreMessage{std::move(x)}; },
                                   std::move(msg));
  queue_core(node, std::move(m), after_durable);
}

void Node::seal_and_queue(node::Channel channel, const std::string& to_addr, wire::Body body, Clock now,
                          bool batch_claims) {
  wire::Envelope env;
  env.sender = options_.id;
  env.sender_addr = options_.gossip_addr;
  env.sent_utc_ms = now.utc_ms;
  env.boot_id = boot_id_;
  env.seq = ++seq_out_[static_cast<uint8_t>(channel)].get_or_insert(hash64(to_addr));
  env.body = std::move(body);
  const auto fc = channel == Channel::kDatagram ? wire::FrameChannel::kDatagram : wire::FrameChannel::kStream;
  Transmit t;
  t.channel = channel;
  t.to_addr = to_addr;
  t.bytes = cipher_->seal(fc, wire::encode(env, batch_claims));
  if (channel == Channel::kDatagram) {
    ++counters_.datagrams_out;
    counters_.datagram_bytes_out += t.bytes.size();
  } else {
    ++counters_.frames_out;
    counters_.frame_bytes_out += t.bytes.size();
  }
  transmits_.push_back(std::move(t));
}

// Groups released core messages into one stream frame per destination (split when a
// frame would exceed the frame size budget).
void Node::flush_datagrams_and_streams(Clock now) {
  flush_pushes(now);
  std::map<std::string, std::vector<wire::CoreMessage>> by_dest;
  while (!remote_out_.empty() && remote_out_.front().barrier <= durable_seq_) {
    by_dest[remote_out_.front().to].push_back(std::move(remote_out_.front().msg));
    remote_out_.pop_front();
  }
  for (auto& [to, msgs] : by_dest) {
    const gossip::MemberMeta* meta = membership_->meta_of(to);
    if (meta == nullptr || meta->stream_addr.empty()) {
      counters_.misrouted += msgs.size();
      continue;
    }
    // Claims and their answers go as batches to a peer that reads them (docs/firing.md,
    // Batches).
    const bool batch_claims = meta->protocol_version >= gossip::kClaimBatchVersion;
    // Split into frames of bounded size; a message is estimated by a cheap upper bound
    // of its encoding so most frames need no re-encoding.
    std::vector<wire::CoreMessage> frame;
    size_t frame_bytes = 0;
    for (auto& m : msgs) {
      size_t est = 256;
      if (auto* p = std::get_if<wire::StorePush>(&m)) {
        for (const auto& r : p->records) est += gossip::wire_size(r) + 32;
      } else if (auto* s = std::get_if<gossip::SyncMessage>(&m)) {
        est += gossip::wire_size(*s);
      } else if (auto* d = std::get_if<schedule::Dispatch>(&m)) {
        est += d->payload.size();
      }
      if (!frame.empty() && frame_bytes + est > options_.max_stream_frame_bytes) {
        seal_and_queue(Channel::kStream, meta->stream_addr, wire::Body{std::move(frame)}, now, batch_claims);
        frame.clear();
        frame_bytes = 0;
      }
      frame.push_back(std::move(m));
      frame_bytes += est;
    }
    if (!frame.empty()) {
      seal_and_queue(Channel::kStream, meta->stream_addr, wire::Body{std::move(frame)}, now, batch_claims);
    }
  }
}

bool Node::poll_reconnect(std::string& stream_addr) {
  while (!reconnects_.empty()) {
    const std::string peer = std::move(reconnects_.front());
    reconnects_.pop_front();
    const gossip::MemberMeta* meta = membership_ ? membership_->meta_of(peer) : nullptr;
    if (meta == nullptr || meta->stream_addr.empty()) continue;
    stream_addr = meta->stream_addr;
    return true;
  }
  return false;
}

bool Node::poll_transmit(Transmit& out) {
  if (!started_) return false;
  if (transmits_.empty()) flush_datagrams_and_streams(last_);
  if (transmits_.empty()) return false;
  out = std::move(transmits_.front());
  transmits_.pop_front();
  return true;
}

// --- storage --------------------------------------------------------------------------------

void Node::storage_put(std::string key, std::string value) {
  ++counters_.storage_ops;
  open_batch_.push_back(StorageOp{StorageOp::Kind::kPut, std::move(key), std::move(value)});
}

void Node::storage_erase(std::string key) {
  ++counters_.storage_ops;
  open_batch_.push_back(StorageOp{StorageOp::Kind::kErase, std::move(key), {}});
}

void Node::local_put(const std::string& key, std::string value) { storage_put(key, std::move(value)); }
void Node::local_erase(const std::string& key) { storage_erase(key); }

uint64_t Node::write_barrier() const { return open_batch_.empty() ? polled_seq_ : polled_seq_ + 1; }

bool Node::poll_storage(StorageBatch& out) {
  if (open_batch_.empty()) return false;
  out.seq = ++polled_seq_;
  out.ops = std::move(open_batch_);
  open_batch_.clear();
  return true;
}

void Node::invoke(Invocation invocation) { invoke_after(std::move(invocation), write_barrier()); }

void Node::invoke_after(Invocation invocation, uint64_t mark) {
  // Barriers stay non-decreasing along the queue (it is polled from the front).
  if (!invocations_out_.empty()) mark = std::max(mark, invocations_out_.back().barrier);
  invocations_out_.push_back(PendingInvocation{std::move(invocation), mark});
}

void Node::cancel(uint64_t invocation_id) {
  uint64_t barrier = invocations_out_.empty() ? 0 : invocations_out_.back().barrier;
  if (!cancels_out_.empty()) barrier = std::max(barrier, cancels_out_.back().second);
  cancels_out_.emplace_back(invocation_id, barrier);
}

bool Node::poll_cancel(uint64_t& invocation_id) {
  if (cancels_out_.empty() || cancels_out_.front().second > durable_seq_) return false;
  invocation_id = cancels_out_.front().first;
  cancels_out_.pop_front();
  return true;
}

bool Node::poll_invocation(Invocation& out) {
  if (invocations_out_.empty() || invocations_out_.front().barrier > durable_seq_) return false;
  out = std::move(invocations_out_.front().inv);
  invocations_out_.pop_front();
  return true;
}

bool Node::poll_event(NodeEvent& out) {
  if (events_.empty()) return false;
  out = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Node::emit(const schedule::FireEvent& event) {
  notice(event);
  if (fire_observer_) return fire_observer_(event);
  NodeEvent e;
  e.kind = NodeEvent::Kind::kFire;
  e.volume = event.volume;
  e.fire = event;
  events_.push_back(std::move(e));
}

int64_t Node::next_deadline_mono() const {
  if (!started_) return kNever;
  // Work that is ready now (released messages, a batch to persist) wants an immediate
  // turn; the driver drains outputs after every input anyway, so this only matters
  // for work released by a durability notification.
  int64_t best = std::min(membership_->next_deadline_ms(), scheduler_->next_deadline_mono());
  best = std::min(best, maintenance_running_ ? last_.mono_ms : next_maintenance_mono_ms_);
  best = std::min(best, config_retry_mono_);
  best = std::min(best, next_withheld_check_mono());
  if (proposal_) {
    best = std::min(best, proposal_->started_mono_ms + kConfigVoteTimeoutMs);
    best = std::min(best, proposal_->retry_mono_ms != 0 ? proposal_->retry_mono_ms
                                                        : proposal_->sent_mono_ms + kConfigVoteResendMs);
  }
  const int64_t held_extra = bursting(last_) ? options_.burst_hold_ms : 0;
  bool held_back = false;  // work a burst holds back, due once it ends
  for (const auto& [name, v] : volumes_) {
    best = std::min(best, v.next_sync_mono_ms);
    for (const auto& h : v.held_acks) best = std::min(best, h.until_mono_ms);
    if (!v.held_until.empty()) best = std::min(best, v.held_until.front().first + held_extra);
    if (!v.inbound.empty()) best = std::min(best, held_extra != 0 ? v.inbound.front().first + held_extra : last_.mono_ms);
    held_back = held_back || !v.held_until.empty() || !v.inbound.empty();
  }
  if (held_extra != 0 && held_back &&
      scheduler_->next_held_utc_ms() > last_.utc_ms + options_.burst_horizon_ms) {
    // No run is near: the burst ends burst_horizon after the last start (while one is
    // near, it ends with a start, an event that a tick follows).  Look again then.
    const int64_t ends_utc = scheduler_->last_held_start_utc_ms() + options_.burst_horizon_ms + 1;
    best = std::min(best, last_.mono_ms + std::max<int64_t>(1, ends_utc - last_.utc_ms));
  }
  for (const auto& [key, s] : sessions_) best = std::min(best, s.last_activity_mono_ms + options_.sync_session_timeout_ms);
  if (!active_ && !left_) best = std::min(best, started_mono_ms_ + options_.startup_grace_ms);
  return best;
}

void Node::check_invariants() const {
  assert(durable_seq_ <= polled_seq_);
  assert(started_ == (scheduler_ != nullptr && membership_ != nullptr));
  if (!started_) return;
  scheduler_->check_invariants();
  membership_->check_invariants();
  for (const auto& [name, v] : volumes_) {
    assert(v.store != nullptr);
    assert(v.store->check_invariants());
    assert(v.held.size() <= v.held_until.size());
    for (const auto& [key, rec] : v.held) {
      assert(v.push.count(key) == 0);
      (void)rec;
    }
    (void)v;
  }
  for (const auto& [key, s] : sessions_) {
    assert(volumes_.count(s.volume) > 0);
    (void)s;
  }
}

}  // namespace caesium::node
