// Failure detection: SWIM's probe (ping, ping-req through relays, suspect) with
// Lifeguard's local health awareness, nacks and buddy system.
//
// One probe period, as seen by the prober (times scaled by local health, score s):
//
//   start ── Ping ──► target        (buddy: a suspect target also gets Suspect about itself)
//     │  ack within probe_timeout·(s+1)?  yes → success, health −1
//     ▼
//   ack deadline ── PingReq(want_nack) ──► k random alive relays ── Ping ──► target
//     │  relays forward the target's Ack; a relay whose target stays silent for 80% of
//     │  its probe timeout sends a Nack (Lifeguard §IV-A, footnote 5), but still
//     │  forwards an Ack that comes later
//     ▼
//   end = start + probe_interval·(s+1): no ack → Suspect(target), health += nacks missed
//   (or +1 if no nack could be expected).  The next probe starts at `end`.
#include <algorithm>
#include <cassert>

#include "gossip/membership.h"

namespace caesium::gossip {

void Membership::probe_tick(int64_t now_ms) {
  if (probe_ && !probe_->indirect_sent && now_ms >= probe_->ack_deadline_ms) send_indirect(now_ms);
  if (probe_ && now_ms >= probe_->end_ms) conclude_probe(now_ms);
  if (!left_ && !probe_ && now_ms >= next_probe_ms_) start_probe(now_ms);
}

void Membership::start_probe(int64_t now_ms) {
  const int64_t interval_ms = awareness_.scale(config_.probe_interval_ms);
  const int64_t timeout_ms = awareness_.scale(config_.probe_timeout_ms);
  next_probe_ms_ = now_ms + interval_ms;
  reconnect_probe(now_ms);  // even (especially) when nobody is left to probe
  const std::optional<std::string> target = next_probe_target(now_ms);
  if (!target) return;
  const Member* m = find(*target);
  assert(m != nullptr);
  Probe p;
  p.target = *target;
  p.incarnation = m->incarnation;
  p.seq = ++next_seq_;
  p.ack_deadline_ms = now_ms + timeout_ms;
  p.end_ms = now_ms + interval_ms;
  std::vector<Update> first;
  if (auto buddy = buddy_update_for(*target)) first.push_back(std::move(*buddy));
  send_datagram(m->addr, Ping{p.seq, *target}, std::move(first));
  probe_ = std::move(p);
  ++stats_.probes;
}

// After a partition flips (A|B then A+B'|B''), members now on the same side may each hold
// the other dead, and nobody probes the dead: only the once-per-push-pull dead partner
// would bring them back, which with several dead members takes minutes.  So each probe
// period also pings one random dead member, telling it that we hold it dead.  A live one
// refutes at once (its ack carries the refutation, and its own "you are dead" if it holds
// us dead too).  A truly dead one would cost a datagram per node per period for as long
// as it is remembered (24 h), so the ping backs off with the time the member has been
// dead: always within reconnect_probe_full of the death, then with probability
// full / age — a partition that healed after an hour is found within minutes by the
// probes and within a push-pull interval by the dead partner.
void Membership::reconnect_probe(int64_t now_ms) {
  if (state_counts_[index(MemberState::kDead)] == 0) return;  // the common case: nobody to look for
  const int64_t full_ms = config_.reconnect_probe_full_ms;
  if (full_ms == 0) return;
  // One random dead member (pick_random(1, Pool::kDead, self_id_) without its vector:
  // we never hold ourselves dead, so the first draw is the pick).  The back-off is
  // decided from the dead list alone; the member's record is read only to ping it.
  const DeadRef& dead = dead_[rng_.below(dead_.size())];
  const int64_t age_ms = now_ms - dead.since_ms;
  if (age_ms > full_ms && static_cast<int64_t>(rng_.below(static_cast<uint64_t>(age_ms))) >= full_ms) return;
  const auto& [id, m] = *dead.entry;
  send_datagram(m.addr, Ping{++next_seq_, id}, {Dead{id, m.incarnation, self_id_}});
  ++stats_.reconnect_probes;
}

// Lifeguard's buddy system: a ping to a member we suspect carries that suspicion first,
// so the member learns of it at the first opportunity and can refute, instead of waiting
// for the rumour to reach it.
std::optional<Update> Membership::buddy_update_for(const std::string& target) const {
  if (!config_.lifeguard) return std::nullopt;
  const Member* m = find(target);
  if (m == nullptr || m->state != MemberState::kSuspect) return std::nullopt;
  return Update{Suspect{target, m->incarnation, self_id_}};
}

// Shuffled round-robin (SWIM §4.3): every member is probed once per pass, so a failed
// member is found by each prober within one pass; the order is reshuffled at each wrap
// so that probers do not fall into step.  Dead and left members are skipped.
std::optional<std::string> Membership::next_probe_target(int64_t now_ms) {
  size_t checks = 0;
  while (checks <= probe_order_.size()) {
    if (probe_index_ >= probe_order_.size()) {
      reset_probe_order(now_ms);
      probe_index_ = 0;
      ++checks;
      if (probe_order_.empty()) return std::nullopt;
      continue;
    }
    const MemberEntry* e = probe_order_[probe_index_++];
    if (is_reachable(e->second.state)) return e->first;
    ++checks;
  }
  return std::nullopt;
}

void Membership::reset_probe_order(int64_t now_ms) {
  reap(now_ms);
  probe_order_.clear();
  for (auto& entry : members_) {
    if (entry.first != self_id_) probe_order_.push_back(&entry);
  }
  rng_.shuffle(probe_order_.begin(), probe_order_.end());
}

void Membership::send_indirect(int64_t now_ms) {
  assert(probe_);
  probe_->indirect_sent = true;
  const Member* t = find(probe_->target);
  if (t == nullptr) return;
  const std::string target = probe_->target;
  const std::string target_addr = t->addr;
  const std::vector<MemberEntry*> relays =
      pick_random(static_cast<size_t>(config_.indirect_checks), Pool::kAlive, target, now_ms);
  probe_->relays.clear();
  for (const MemberEntry* r : relays) probe_->relays.push_back(r->first);
  probe_->expected_nacks = config_.lifeguard ? probe_->relays.size() : 0;
  for (const MemberEntry* r : relays) {
    send_datagram(r->second.addr, PingReq{probe_->seq, target, target_addr, config_.lifeguard}, {});
    ++stats_.indirect_probes;
  }
  // A late tick (the driver or the machine was slow) may find the period already over.
  // Give the relays their window anyway rather than suspecting without asking them.
  if (probe_->end_ms <= now_ms) {
    probe_->end_ms = now_ms + (probe_->end_ms - probe_->ack_deadline_ms);
    next_probe_ms_ = std::max(next_probe_ms_, probe_->end_ms);
  }
}

void Membership::conclude_probe(int64_t now_ms) {
  assert(probe_);
  const Probe p = std::move(*probe_);
  probe_.reset();
  ++stats_.probe_failures;
  // Lifeguard: relays that did not even nack in time suggest that *we* are the slow one.
  // memberlist's rule: with nacks expected, each missing nack counts +1 (a healthy
  // prober of a truly dead member gets every nack and is not penalised); without any,
  // the failed probe itself counts +1.
  if (p.expected_nacks > 0) {
    awareness_.apply(static_cast<int>(p.expected_nacks - p.nacked.size()));
  } else {
    awareness_.apply(1);
  }
  const Member* m = find(p.target);
  if (m == nullptr || !is_reachable(m->state)) return;
  if (m->state == MemberState::kAlive && p.incarnation >= m->incarnation) ++stats_.suspicions_started;
  // Our own failed probe of a member already suspect is an independent confirmation.
  on_suspect(Suspect{p.target, p.incarnation, self_id_}, now_ms);
}

void Membership::handle_ack(const Peer& from, const Ack& ack, int64_t now_ms) {
  (void)now_ms;
  if (probe_ && ack.seq == probe_->seq &&
      (from.id == probe_->target ||
       std::find(probe_->relays.begin(), probe_->relays.end(), from.id) != probe_->relays.end())) {
    probe_.reset();
    awareness_.apply(-1);
    return;
  }
  auto it = relays_.find(ack.seq);
  if (it != relays_.end() && it->second.target == from.id) {
    send_datagram(it->second.requester_addr, Ack{it->second.requester_seq}, {});
    relays_.erase(it);
    return;
  }
  ++stats_.stale_replies;
}

void Membership::handle_nack(const Peer& from, const Nack& nack) {
  if (probe_ && nack.seq == probe_->seq &&
      std::find(probe_->relays.begin(), probe_->relays.end(), from.id) != probe_->relays.end()) {
    probe_->nacked.insert(from.id);
    return;
  }
  ++stats_.stale_replies;
}

void Membership::handle_ping(const Peer& from, const Ping& ping, int64_t now_ms) {
  (void)now_ms;
  if (ping.target != self_id_) {
    // Meant for a previous holder of this address (SWIM has no other way to notice).
    ++stats_.misdirected_pings;
    return;
  }
  // If we hold the pinger suspect or dead, say so first: it is evidently running, and
  // this lets it refute at once.  Without this, two members that each hold the other
  // dead after a long partition would only learn it at a push-pull.
  std::vector<Update> first;
  // The index marks every member that is not alive, so the usual case (the pinger is
  // alive in our view) costs no read of its record.
  const Member* m = index_.maybe_marked(from.id) ? find(from.id) : nullptr;
  if (m != nullptr && m->addr == from.addr) {
    if (m->state == MemberState::kSuspect) first.push_back(Suspect{from.id, m->incarnation, self_id_});
    // Dead or left: a restarted process that has not yet learned its old record.
    if (m->state == MemberState::kDead || m->state == MemberState::kLeft)
      first.push_back(Dead{from.id, m->incarnation, self_id_});
  }
  send_datagram(from.addr, Ack{ping.seq}, std::move(first));
}

void Membership::handle_ping_req(const Peer& from, const PingReq& req, int64_t now_ms) {
  if (!valid_id(req.target) || req.target_addr.empty() || req.target_addr.size() > kMaxIdBytes) {
    ++stats_.malformed_dropped;
    return;
  }
  if (req.target == self_id_) {  // asked to ping ourselves: we are evidently up
    send_datagram(from.addr, Ack{req.seq}, {});
    return;
  }
  if (relays_.size() >= kMaxRelays) {
    ++stats_.malformed_dropped;  // a flood; the requester will simply see no answer
    return;
  }
  const uint32_t seq = ++next_seq_;
  Relay r;
  r.requester_addr = from.addr;
  r.requester_seq = req.seq;
  r.target = req.target;
  r.nack_at_ms = req.want_nack ? now_ms + config_.probe_timeout_ms * 8 / 10 : kNoDeadline;
  // Keep forwarding a late ack until the requester's period is surely over.
  r.expire_ms = now_ms + config_.probe_interval_ms;
  relays_.emplace(seq, std::move(r));
  std::vector<Update> first;
  if (auto buddy = buddy_update_for(req.target)) first.push_back(std::move(*buddy));
  send_datagram(req.target_addr, Ping{seq, req.target}, std::move(first));
}

void Membership::relay_tick(int64_t now_ms) {
  for (auto it = relays_.begin(); it != relays_.end();) {
    Relay& r = it->second;
    if (r.nack_at_ms <= now_ms) {
      r.nack_at_ms = kNoDeadline;
      send_datagram(r.requester_addr, Nack{r.requester_seq}, {});
      ++stats_.nacks_sent;
    }
    if (r.expire_ms <= now_ms) {
      it = relays_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace caesium::gossip
