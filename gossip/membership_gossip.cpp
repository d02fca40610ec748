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

#include "base/hash.h"
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
    for (const MemberEntry* e : pick_random(1, pool, self_id_, now_ms)) start_exchange(e->second.meta.stream_addr, e);
  }
  seed_tick();
}

// A seed that no member of our view answers to, in any state, is a node we have never
// heard of (or reaped).  That happens when the network splits while the cluster forms:
// each side joins the seeds it can reach, stops joining once it hears from anyone, and
// after the heal neither side holds the other in any state, so nobody probes, gossips to
// or reconnects with the other side and the two clusters stay apart for good (swarm seed
// 34411: [n1,n4] | [n2,n3,n5] at 17 ms, healed at 2 s, views still split at the end).  So
// each exchange round also checks one seed, round robin, and opens an exchange with it
// when no member has its address: the seed's digest differs from ours, it answers in
// full, and the two views merge.  In a formed cluster every seed is a member and this
// sends nothing.  A seed written differently from the address its node advertises (a
// host name, say) is never matched, so it costs one digest message per round robin
// turn, answered by nothing when its view is ours; a seed that is down costs one failed
// connection, like the dead partner above.
void Membership::seed_tick() {
  if (join_seeds_.empty()) return;
  next_seed_check_ %= join_seeds_.size();
  const std::string& seed = join_seeds_[next_seed_check_++];
  for (const auto& [id, m] : members_) {
    if (m.meta.stream_addr == seed) return;
  }
  start_exchange(seed, nullptr);
  ++stats_.seed_exchanges;
}

// In a steady cluster every view is the same, and a full push-pull at N = 1000 is
// ~95 KB each way that changes nothing: it was ~30% of the simulator's CPU at that size.
// So the periodic exchange opens with the digest of our state and our own record, and
// the partner answers with its full state only if its view differs — the exchange then
// continues as a full one from its side, one message later than before.  A suspect in
// either view forces the full exchange: merging a peer's Suspect is a Lifeguard
// confirmation even when both views hold the same records.  A partner held dead is, if
// it is alive, certain to differ (it holds itself alive), so it answers in full; a truly
// dead one costs a few bytes instead of the whole state.
//
// The digest message also carries our record of the partner: what a full state would
// have told it about itself.  A partner we hold suspect or dead learns it at once and
// refutes before it answers, so its answer already carries the refutation — as when the
// exchange opened with our full state.  (Without it, after a partition both sides hold
// each other dead; the refutation would travel later, by gossip.)
void Membership::start_exchange(const std::string& stream_addr, const MemberEntry* entry) {
  if (stream_addr.empty()) return;
  const bool digest_capable = entry == nullptr || entry->second.meta.protocol_version >= kDigestPushPullVersion;
  if (!digest_capable || state_counts_[index(MemberState::kSuspect)] > 0) {
    send_push_pull(stream_addr, /*join=*/false, /*reply_wanted=*/true);
    return;
  }
  PushPull pp;
  pp.reply_wanted = true;
  pp.digest_only = true;
  pp.digest = view_digest();
  const Member& me = self();
  pp.members.push_back(MemberRecord{self_id_, me.addr, me.incarnation, me.state, me.meta});
  if (entry != nullptr) {
    const Member& partner = entry->second;
    pp.members.push_back(MemberRecord{entry->first, partner.addr, partner.incarnation, partner.state, partner.meta});
  }
  sends_.push_back(Outgoing{Outgoing::Channel::kStream, stream_addr, std::move(pp)});
  ++stats_.push_pull_digests_sent;
}

void Membership::send_push_pull(const std::string& to_stream_addr, bool join, bool reply_wanted) {
  sends_.push_back(Outgoing{Outgoing::Channel::kStream, to_stream_addr, snapshot(join, reply_wanted)});
  ++stats_.push_pulls_sent;
}

uint64_t Membership::record_hash(std::string_view id, const std::string& addr, uint64_t incarnation,
                                 MemberState state, const MemberMeta& meta) {
  // Every field through hash_combine, strings as (length, hash), so no two different
  // records share an encoding.
  auto str = [](uint64_t h, std::string_view s) { return hash_combine(hash_combine(h, s.size()), hash64(s)); };
  uint64_t h = str(0x9e3779b97f4a7c15u, id);
  h = str(h, addr);
  h = hash_combine(h, incarnation);
  h = hash_combine(h, static_cast<uint64_t>(state));
  h = str(h, meta.stream_addr);
  h = str(h, meta.api_addr);
  h = hash_combine(h, static_cast<uint64_t>(meta.priority));
  h = hash_combine(h, meta.tags.size());
  for (const std::string& t : meta.tags) h = str(h, t);
  h = hash_combine(h, uint64_t{meta.capacity.cores} << 32 | meta.capacity.memory_mb);
  h = hash_combine(h, meta.capacity.max_running);
  h = hash_combine(h, uint64_t{meta.load.running} << 32 | meta.load.queued);
  h = hash_combine(h, meta.load.cpu_milli);
  h = hash_combine(h, meta.config_epoch);
  h = hash_combine(h, meta.protocol_version);
  h = hash_combine(h, meta.boot_id);
  return h;
}

uint64_t Membership::compute_view_digest() const {
  uint64_t sum = 0;
  for (const auto& [id, m] : members_) sum += record_hash(id, m.addr, m.incarnation, m.state, m.meta);
  return sum;
}

uint64_t Membership::view_digest() const {
  if (digest_stale_) {
    digest_ = compute_view_digest();
    digest_stale_ = false;
  }
  return digest_;
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
      MemberEntry* e = dead_[rng_.below(d)].entry;
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
