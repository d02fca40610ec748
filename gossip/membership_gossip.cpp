// Dissemination and anti-entropy: piggybacking on every datagram, gossip rounds, and
// push-pull full-state exchanges.
//
// Cost model (why messages per node per second do not grow with N): each node sends one
// Ping per probe period (plus k PingReqs only when a probe fails), answers the pings it
// receives (one per period on average), sends gossip_nodes datagrams per gossip interval
// only while its queue holds news, and one or two push-pulls per (scaled) push-pull
// interval.  A piece of news costs each node retransmit_mult·⌈log10(N+1)⌉ piggybacks.
#include <algorithm>
#include <cassert>

#include "gossip/membership.h"
#include "gossip/membership_wire_size.h"

namespace caesium::gossip {

int Membership::transmit_limit() const {
  return retransmit_limit(config_.retransmit_mult, std::max<size_t>(1, reachable_count()));
}

// Every datagram is a primary message, then `first` (the buddy system's or a reply's
// urgent news), then as many queued updates as fit the estimated budget.
void Membership::send_datagram(const std::string& to_addr, Primary primary, std::vector<Update> first) {
  Packet p{std::move(primary), std::move(first)};
  const size_t budget = datagram_budget_bytes();
  size_t used = estimated_wire_size(p);
  if (used > budget) {  // cannot happen with ids <= kMaxIdBytes and a valid config
    p.updates.clear();
    used = estimated_wire_size(p);
  }
  assert(used <= budget);
  queue_.fill(budget - used, transmit_limit(), p.updates);
  assert(estimated_wire_size(p) <= budget);
  sends_.push_back(Outgoing{Outgoing::Channel::kDatagram, to_addr, std::move(p)});
  ++stats_.datagrams_sent;
}

void Membership::gossip_tick(int64_t now_ms) {
  if (now_ms < next_gossip_ms_) return;
  // Stay on the original phase grid; skip rounds that a late tick missed.
  const int64_t missed = (now_ms - next_gossip_ms_) / config_.gossip_interval_ms;
  next_gossip_ms_ += (missed + 1) * config_.gossip_interval_ms;
  if (queue_.empty() || gossip_idle_) return;
  const std::vector<MemberEntry*> targets =
      pick_random(static_cast<size_t>(config_.gossip_nodes), Pool::kGossipTarget, self_id_, now_ms);
  if (targets.empty()) {
    gossip_idle_ = true;  // nobody to tell until the view changes
    return;
  }
  for (const MemberEntry* e : targets) {
    if (queue_.empty()) break;
    send_datagram(e->second.addr, GossipOnly{}, {});
  }
}

void Membership::push_pull_tick(int64_t now_ms) {
  if (left_ || now_ms < next_push_pull_ms_) return;
  next_push_pull_ms_ = now_ms + push_pull_interval_ms(config_.push_pull_interval_ms, reachable_count());
  // One live partner for anti-entropy, and one dead one: after a partition longer than
  // the suspicion timeout, both sides hold each other dead, nobody probes or gossips to
  // the dead, and only this brings them back together (serf's reconnect, folded into
  // the push-pull timer).  A truly dead partner costs one failed connection attempt.
  for (const Pool pool : {Pool::kAlive, Pool::kDead}) {
    for (const MemberEntry* e : pick_random(1, pool, self_id_, now_ms)) {
      const Member& m = e->second;
      if (!m.meta.stream_addr.empty()) send_push_pull(m.meta.stream_addr, /*join=*/false, /*reply_wanted=*/true);
    }
  }
}

void Membership::send_push_pull(const std::string& to_stream_addr, bool join, bool reply_wanted) {
  sends_.push_back(Outgoing{Outgoing::Channel::kStream, to_stream_addr, snapshot(join, reply_wanted)});
  ++stats_.push_pulls_sent;
}

PushPull Membership::snapshot(bool join, bool reply_wanted) const {
  PushPull pp;
  pp.join = join;
  pp.reply_wanted = reply_wanted;
  pp.members = members();
  return pp;
}

std::vector<Membership::MemberEntry*> Membership::pick_random(size_t k, Pool pool, std::string_view exclude,
                                                             int64_t now_ms) {
  std::vector<MemberEntry*> out;
  if (pool == Pool::kDead) {
    // From the dead list: exact, and O(k) whatever the cluster size.
    const size_t d = dead_.size();
    for (size_t tries = 0; tries < 3 * d && out.size() < k; ++tries) {
      MemberEntry* e = dead_[rng_.below(d)];
      if (e->first == exclude || std::find(out.begin(), out.end(), e) != out.end()) continue;
      out.push_back(e);
    }
    return out;
  }
  const size_t n = probe_order_.size();
  for (size_t tries = 0; tries < 3 * n && out.size() < k; ++tries) {
    MemberEntry* e = probe_order_[rng_.below(n)];
    if (e->first == exclude) continue;
    const Member& m = e->second;
    bool eligible = false;
    switch (pool) {
      case Pool::kAlive:
        eligible = m.state == MemberState::kAlive;
        break;
      case Pool::kGossipTarget:
        eligible = is_reachable(m.state) ||
                   (m.state == MemberState::kDead && now_ms - m.state_change_ms <= config_.gossip_to_dead_ms);
        break;
      case Pool::kDead:
        break;  // handled above
    }
    if (!eligible || std::find(out.begin(), out.end(), e) != out.end()) continue;
    out.push_back(e);
  }
  return out;
}

}  // namespace caesium::gossip
