// Membership: construction, the API entry points, the view and the invariants.  The
// protocol rules live in membership_state.cpp (SWIM's state machine), membership_probe.cpp
// (failure detection) and membership_gossip.cpp (dissemination and anti-entropy).
#include "gossip/membership.h"

#include <utility>

#include <algorithm>
#include <cassert>

#include "gossip/membership_wire_size.h"

namespace caesium::gossip {
namespace {

// The largest update a node with this budget can gossip: it must fit next to the
// smallest primary message (a gossip round's GossipOnly).
size_t max_update_bytes(size_t budget_bytes) {
  const size_t base = estimated_base_size(Primary{GossipOnly{}});
  return budget_bytes > base ? budget_bytes - base : 0;
}

Error config_error(const std::string& field, const std::string& why) {
  return Error("membership config: " + field + " " + why, field);
}

}  // namespace

Status check_config(const MembershipConfig& c) {
  if (c.probe_interval_ms <= 0) return config_error("probe_interval_ms", "must be positive");
  if (c.probe_timeout_ms <= 0 || c.probe_timeout_ms >= c.probe_interval_ms)
    return config_error("probe_timeout_ms", "must be positive and shorter than probe_interval_ms");
  if (c.indirect_checks < 0) return config_error("indirect_checks", "must not be negative");
  if (c.suspicion_mult < 1) return config_error("suspicion_mult", "must be at least 1");
  if (c.suspicion_max_timeout_mult < 1) return config_error("suspicion_max_timeout_mult", "must be at least 1");
  if (c.retransmit_mult < 1) return config_error("retransmit_mult", "must be at least 1");
  if (c.gossip_interval_ms <= 0) return config_error("gossip_interval_ms", "must be positive");
  if (c.gossip_nodes < 1) return config_error("gossip_nodes", "must be at least 1");
  if (c.gossip_to_dead_ms < 0) return config_error("gossip_to_dead_ms", "must not be negative");
  if (c.reconnect_probe_full_ms < 0) return config_error("reconnect_probe_full_ms", "must not be negative");
  if (c.push_pull_interval_ms <= 0) return config_error("push_pull_interval_ms", "must be positive");
  if (c.awareness_max_multiplier < 1) return config_error("awareness_max_multiplier", "must be at least 1");
  if (c.load_update_min_interval_ms < 0) return config_error("load_update_min_interval_ms", "must not be negative");
  if (c.join_retry_interval_ms <= 0) return config_error("join_retry_interval_ms", "must be positive");
  if (c.dead_reclaim_ms < c.gossip_to_dead_ms)
    return config_error("dead_reclaim_ms", "must be at least gossip_to_dead_ms");
  // 1024 bytes hold our own id and address (up to 2 x 144 estimated), the largest primary
  // message (a Ping with its buddy Suspect: 576 with ids of kMaxIdBytes) and still leave
  // room for updates.
  if (c.packet_overhead_bytes >= c.max_packet_bytes || c.max_packet_bytes - c.packet_overhead_bytes < 1024)
    return config_error("max_packet_bytes", "must leave at least 1024 bytes after packet_overhead_bytes");
  return Status::success();
}

Status Membership::check_identity(std::string_view self_id, std::string_view self_addr, const MemberMeta& meta,
                                  const MembershipConfig& config) {
  if (self_id.empty() || self_id.size() > kMaxIdBytes)
    return Error("node id must be 1 to " + std::to_string(kMaxIdBytes) + " bytes long", "id");
  if (self_addr.empty() || self_addr.size() > kMaxIdBytes)
    return Error("gossip address must be 1 to " + std::to_string(kMaxIdBytes) + " bytes long", "addr");
  // Room is kept for the short list of unfilled volumes (["*"], see MemberMeta), which
  // comes and goes with anti-entropy: tags that fit now must still fit with it.
  Alive alive{std::string(self_id), 0, std::string(self_addr), meta};
  if (alive.meta.unfilled_volumes.empty()) alive.meta.unfilled_volumes = {"*"};
  const size_t bytes = estimated_wire_size(Update{alive});
  const size_t limit = max_update_bytes(datagram_budget_bytes(self_id, self_addr, config));
  if (bytes > limit)
    return Error("node meta is too large to gossip: " + std::to_string(bytes) + " bytes estimated, at most " +
                     std::to_string(limit) + " fit a datagram; use fewer or shorter tags",
                 "tags");
  return Status::success();
}

size_t Membership::datagram_budget_bytes(std::string_view self_id, std::string_view self_addr,
                                         const MembershipConfig& config) {
  const size_t frame = config.packet_overhead_bytes + estimated_text_size(self_id) + estimated_text_size(self_addr);
  return config.max_packet_bytes > frame ? config.max_packet_bytes - frame : 0;
}

Membership::Membership(std::string self_id, std::string self_addr, MemberMeta meta, uint64_t incarnation,
                       MembershipConfig config, Rng rng)
    : config_(config),
      budget_bytes_(datagram_budget_bytes(self_id, self_addr, config)),
      self_id_(std::move(self_id)),
      self_addr_(std::move(self_addr)),
      rng_(rng),
      incarnation_(incarnation),
      awareness_(config.lifeguard ? config.awareness_max_multiplier : 1),
      queue_(max_update_bytes(budget_bytes_)) {
  assert(check_config(config_).ok());
  assert(check_identity(self_id_, self_addr_, meta, config_).ok());
  assert(valid_incarnation(incarnation_));
  Member me;
  me.addr = self_addr_;
  me.incarnation = incarnation_;
  me.state = MemberState::kAlive;
  me.meta = std::move(meta);
  auto [it, inserted] = members_.emplace(self_id_, std::move(me));
  assert(inserted);
  self_ = &it->second;
  index_.insert(&*it);
  state_counts_[index(MemberState::kAlive)] = 1;
}

// Every input goes through here first.  The first one starts the timers, each at a random
// phase within its period (as memberlist staggers its tickers) so that nodes started
// together do not probe and gossip in lockstep.
void Membership::touch(int64_t now_ms) {
  assert(!started_ || now_ms >= last_input_ms_);  // monotonic time
  last_input_ms_ = now_ms;
  if (started_) return;
  started_ = true;
  next_probe_ms_ = now_ms + rng_.between(0, config_.probe_interval_ms - 1);
  next_gossip_ms_ = now_ms + rng_.between(0, config_.gossip_interval_ms - 1);
  next_push_pull_ms_ = now_ms + rng_.between(0, config_.push_pull_interval_ms - 1);
  last_alive_broadcast_ms_ = now_ms;
  broadcast(Alive{self_id_, incarnation_, self_addr_, self().meta});
}

void Membership::join(const std::vector<std::string>& seed_stream_addrs, int64_t now_ms) {
  touch(now_ms);
  if (left_) return;
  join_seeds_.clear();
  for (const auto& addr : seed_stream_addrs) {
    if (addr.empty() || addr == self().meta.stream_addr) continue;
    if (std::find(join_seeds_.begin(), join_seeds_.end(), addr) == join_seeds_.end()) join_seeds_.push_back(addr);
  }
  join_pending_ = !join_seeds_.empty();
  if (!join_pending_) return;
  for (const auto& addr : join_seeds_) send_push_pull(addr, /*join=*/true, /*reply_wanted=*/true);
  next_join_ms_ = now_ms + config_.join_retry_interval_ms;
}

void Membership::adopt_members(const std::vector<Alive>& members, int64_t now_ms) {
  touch(now_ms);
  if (left_) return;
  for (const Alive& a : members) {
    if (a.node != self_id_ && valid_alive(a) && find(a.node) == nullptr) add_member(a, now_ms, /*spread=*/false);
  }
  join_pending_ = false;
}

void Membership::join_tick(int64_t now_ms) {
  if (!join_pending_ || now_ms < next_join_ms_) return;
  for (const auto& addr : join_seeds_) send_push_pull(addr, /*join=*/true, /*reply_wanted=*/true);
  next_join_ms_ = now_ms + config_.join_retry_interval_ms;
}

void Membership::leave(int64_t now_ms) {
  touch(now_ms);
  if (left_) return;
  left_ = true;
  probe_.reset();
  pending_meta_.reset();
  join_pending_ = false;
  Member& me = self();
  change_state(self_id_, me, MemberState::kLeft, now_ms);
  broadcast(Dead{self_id_, incarnation_, self_id_});
  emit(MemberEvent::Kind::kLeft, self_id_, "leaving the cluster");
}

bool Membership::leave_done() const { return left_ && (!queue_.contains(self_id_) || gossip_idle_); }

Status Membership::set_meta(const MemberMeta& meta, int64_t now_ms) {
  touch(now_ms);
  if (left_) return Error("cannot change node meta after leaving the cluster");
  if (Status s = check_identity(self_id_, self_addr_, meta, config_); !s.ok()) return s;
  const MemberMeta& current = self().meta;
  if (meta == current) {
    pending_meta_.reset();
    return Status::success();
  }
  MemberMeta same_load = meta;
  same_load.load = current.load;
  const bool load_only = same_load == current;
  if (load_only && now_ms < last_alive_broadcast_ms_ + config_.load_update_min_interval_ms) {
    pending_meta_ = meta;  // goes out from meta_tick; a newer load replaces it
    return Status::success();
  }
  apply_meta(meta, now_ms);
  return Status::success();
}

void Membership::apply_meta(const MemberMeta& meta, int64_t now_ms) {
  pending_meta_.reset();
  ++incarnation_;
  Member& me = self();
  me.incarnation = incarnation_;
  me.meta = meta;
  view_changed();
  last_alive_broadcast_ms_ = now_ms;
  broadcast(Alive{self_id_, incarnation_, self_addr_, meta});
  emit(MemberEvent::Kind::kUpdated, self_id_, "advertising new meta");
}

void Membership::meta_tick(int64_t now_ms) {
  if (!pending_meta_ || left_) return;
  if (now_ms < last_alive_broadcast_ms_ + config_.load_update_min_interval_ms) return;
  // Out of pending_meta_ first: apply_meta resets it, which would destroy its argument.
  const MemberMeta meta = std::move(*pending_meta_);
  apply_meta(meta, now_ms);
}

void Membership::on_packet(const Peer& from, const Packet& packet, int64_t now_ms) {
  touch(now_ms);
  if (!valid_id(from.id) || from.addr.empty() || from.id == self_id_) {
    ++stats_.malformed_dropped;
    return;
  }
  // Updates first: a buddy-system Suspect about us, or news about the sender, should be
  // known before the primary message is answered.
  stale_news_.clear();
  for (const auto& update : packet.updates) apply_update(update, now_ms);
  answer_stale_news(from);
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, Ping>) handle_ping(from, p, now_ms);
        else if constexpr (std::is_same_v<T, Ack>) handle_ack(from, p, now_ms);
        else if constexpr (std::is_same_v<T, Nack>) handle_nack(from, p);
        else if constexpr (std::is_same_v<T, PingReq>) handle_ping_req(from, p, now_ms);
      },
      packet.primary);
}

// At most this many corrections go back in one datagram; more stale news in one packet
// is rare, and the rest is corrected by the sender's next retransmission.
constexpr size_t kMaxStaleAnswers = 3;

void Membership::note_stale_news(const std::string& id) {
  if (stale_news_.size() >= kMaxStaleAnswers) return;
  if (std::find(stale_news_.begin(), stale_news_.end(), id) != stale_news_.end()) return;
  stale_news_.push_back(id);
}

// The sender of a packet gossiped a Suspect or Dead that a refutation (a higher
// incarnation) already answered.  Gossip alone may never correct it: the refutation's
// retransmissions are spent, and everyone else drops the stale news without a word, so
// the sender's suspicion runs out and it declares a live member dead.  Send it the alive
// records we hold (ours, if the news was about us), once per packet.
void Membership::answer_stale_news(const Peer& to) {
  if (stale_news_.empty()) return;
  std::vector<Update> answers;
  for (const std::string& id : stale_news_) {
    if (id == self_id_) {
      if (!left_) answers.emplace_back(Alive{self_id_, incarnation_, self_addr_, self().meta});
      continue;
    }
    const Member* m = find(id);
    if (m == nullptr || m->state != MemberState::kAlive) continue;  // only news we can vouch for
    answers.emplace_back(Alive{id, m->incarnation, m->addr, m->meta});
  }
  stale_news_.clear();
  if (answers.empty()) return;
  ++stats_.stale_news_answered;
  send_datagram(to.addr, GossipOnly{}, std::move(answers));
}

// A digest push-pull carries the sender's record, then at most its record of us, and
// always wants an answer.
bool Membership::valid_digest_push_pull(const Peer& from, const PushPull& msg) const {
  if (msg.join || !msg.reply_wanted || msg.members.empty() || msg.members.size() > 2) return false;
  return msg.members[0].node == from.id && (msg.members.size() == 1 || msg.members[1].node == self_id_);
}

void Membership::on_push_pull(const Peer& from, const PushPull& msg, int64_t now_ms) {
  touch(now_ms);
  if (!valid_id(from.id) || from.id == self_id_) {
    ++stats_.malformed_dropped;
    return;
  }
  if (msg.digest_only && !valid_digest_push_pull(from, msg)) {
    ++stats_.malformed_dropped;
    return;
  }
  merge(from, msg, now_ms);
  stale_news_.clear();  // a push-pull reply carries our whole view already
  join_pending_ = false;  // we have heard from the cluster
  if (!msg.reply_wanted) return;
  if (msg.digest_only && msg.digest == view_digest() && state_counts_[index(MemberState::kSuspect)] == 0) {
    ++stats_.push_pulls_in_sync;  // the same view on both sides: nothing to exchange
    return;
  }
  std::string reply_to;
  for (const auto& r : msg.members) {
    if (r.node == from.id) reply_to = r.meta.stream_addr;
  }
  if (reply_to.empty()) {
    if (const Member* m = find(from.id)) reply_to = m->meta.stream_addr;
  }
  if (reply_to.empty()) {
    ++stats_.malformed_dropped;
    return;
  }
  // A digest that differs: our full state, asking for theirs (the exchange they opened,
  // continued from our side).
  send_push_pull(reply_to, /*join=*/false, /*reply_wanted=*/msg.digest_only);
}

void Membership::on_tick(int64_t now_ms) {
  touch(now_ms);
  relay_tick(now_ms);
  probe_tick(now_ms);
  expire_suspicions(now_ms);
  meta_tick(now_ms);
  join_tick(now_ms);
  push_pull_tick(now_ms);
  gossip_tick(now_ms);  // last, so this round carries whatever the others produced
}

int64_t Membership::next_deadline_ms() const {
  if (!started_) return 0;
  int64_t d = kNoDeadline;
  if (!left_) {
    d = std::min({d, next_probe_ms_, next_push_pull_ms_});
    if (pending_meta_) d = std::min(d, last_alive_broadcast_ms_ + config_.load_update_min_interval_ms);
    if (join_pending_) d = std::min(d, next_join_ms_);
  }
  if (probe_) d = std::min(d, probe_->indirect_sent ? probe_->end_ms : probe_->ack_deadline_ms);
  for (const auto& [seq, r] : relays_) d = std::min({d, r.nack_at_ms, r.expire_ms});
  if (!suspicion_deadlines_.empty()) d = std::min(d, suspicion_deadlines_.begin()->first);
  if (!queue_.empty() && !gossip_idle_) d = std::min(d, next_gossip_ms_);
  return d;
}

bool Membership::poll_send(Outgoing& out) {
  if (sends_head_ == sends_.size()) {
    sends_.clear();  // keeps its capacity
    sends_head_ = 0;
    return false;
  }
  out = std::move(sends_[sends_head_++]);
  return true;
}

bool Membership::poll_event(MemberEvent& out) {
  if (events_.empty()) return false;
  out = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Membership::emit(MemberEvent::Kind kind, const std::string& id, std::string detail) {
  const Member* m = find(id);
  assert(m != nullptr);
  events_.push_back(MemberEvent{kind, id, m->state, m->incarnation, std::move(detail)});
}

Membership::Member* Membership::find(std::string_view id) {
  MemberEntry* e = index_.find(id);
  return e == nullptr ? nullptr : &e->second;
}

const Membership::Member* Membership::find(std::string_view id) const {
  const MemberEntry* e = index_.find(id);
  return e == nullptr ? nullptr : &e->second;
}

Membership::Member& Membership::self() { return *self_; }
const Membership::Member& Membership::self() const { return *self_; }
const MemberMeta& Membership::self_meta() const { return self().meta; }

std::optional<MemberState> Membership::state_of(std::string_view id) const {
  const Member* m = find(id);
  if (m == nullptr) return std::nullopt;
  return m->state;
}

bool Membership::reachable(std::string_view id) const {
  const Member* m = find(id);
  return m != nullptr && is_reachable(m->state);
}

const MemberMeta* Membership::meta_of(std::string_view id) const {
  const Member* m = find(id);
  return m == nullptr ? nullptr : &m->meta;
}

std::optional<std::string> Membership::addr_of(std::string_view id) const {
  const Member* m = find(id);
  if (m == nullptr) return std::nullopt;
  return m->addr;
}

std::vector<MemberRecord> Membership::members() const {
  std::vector<MemberRecord> out;
  out.reserve(members_.size());
  for (const auto& [id, m] : members_) out.push_back(MemberRecord{id, m.addr, m.incarnation, m.state, m.meta});
  return out;
}

std::pair<int64_t, int64_t> Membership::suspicion_bounds_ms(size_t n) const {
  const int64_t min_ms = suspicion_timeout_min_ms(config_.suspicion_mult, n, config_.probe_interval_ms);
  if (!config_.lifeguard) return {min_ms, min_ms};
  return {min_ms, min_ms * config_.suspicion_max_timeout_mult};
}

void Membership::check_invariants() const {
#ifndef NDEBUG  // every check below is an assert; skip the O(N log N) walk in release builds
  awareness_.check_invariants();
  queue_.check_invariants();
  assert(config_.lifeguard || awareness_.score() == 0);

  const Member* me = find(self_id_);
  assert(me != nullptr);
  assert(me->addr == self_addr_);
  assert(me->incarnation == incarnation_);
  assert(me->state == (left_ ? MemberState::kLeft : MemberState::kAlive));
  assert(digest_stale_ || digest_ == compute_view_digest());  // every change called view_changed()

  std::array<size_t, 4> counts{};
  size_t suspects = 0;
  for (const auto& [id, m] : members_) {
    ++counts[index(m.state)];
    assert(m.suspicion.has_value() == (m.state == MemberState::kSuspect));
    if (m.suspicion) {
      ++suspects;
      m.suspicion->check_invariants();
      assert(suspicion_deadlines_.count({m.suspicion->deadline_ms(), id}) == 1);
    }
  }
  assert(counts == state_counts_);
  assert(dead_.size() == counts[index(MemberState::kDead)]);
  for (const DeadRef& r : dead_) {
    assert(r.entry->second.state == MemberState::kDead);
    assert(r.since_ms == r.entry->second.state_change_ms);
    assert(r.entry->first != self_id_);  // we never hold ourselves dead
    (void)r;
  }
  for (const auto& [id, m] : members_) {
    assert(!m.addr.empty());  // only valid Alives create or readdress a member
    (void)m;
  }
  assert(index_.size() == members_.size());
  for (const auto& [id, m] : members_) {
    const MemberEntry* e = index_.find(id);
    assert(e != nullptr);
    assert(&e->second == &m);
    assert(index_.maybe_marked(id) == (m.state != MemberState::kAlive));
    (void)e;
  }
  assert(suspicion_deadlines_.size() == suspects);

  std::vector<std::string> order;
  for (const MemberEntry* e : probe_order_) order.push_back(e->first);
  std::sort(order.begin(), order.end());
  assert(std::adjacent_find(order.begin(), order.end()) == order.end());
  assert(order.size() + 1 == members_.size());
  for (const auto& id : order) {
    assert(id != self_id_);
    assert(find(id) != nullptr);
  }

  if (probe_) {
    assert(!left_);
    assert(probe_->target != self_id_);
    assert(probe_->ack_deadline_ms <= probe_->end_ms);
    assert(probe_->relays.size() <= static_cast<size_t>(config_.indirect_checks));
    assert(probe_->expected_nacks <= probe_->relays.size());
    for (const auto& n : probe_->nacked) {
      assert(std::find(probe_->relays.begin(), probe_->relays.end(), n) != probe_->relays.end());
      (void)n;
    }
  }
  assert(relays_.size() <= kMaxRelays);
  assert(!left_ || (!join_pending_ && !pending_meta_));
  assert(conflicts_seen_.size() <= kMaxConflictsRemembered);
  (void)me;
  (void)suspects;
#endif
}

}  // namespace caesium::gossip
