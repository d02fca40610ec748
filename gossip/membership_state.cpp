// SWIM's state machine: how Alive, Suspect and Dead news changes the view (SWIM §4.2,
// memberlist's aliveNode / suspectNode / deadNode), suspicion timers, refutation,
// push-pull merge and reaping.
//
// The precedence rules, for news about member M whose record has incarnation j:
//   Alive(i)   applies iff i > j (or M is new).  About ourselves: we refute instead.
//   Suspect(i) applies iff i >= j and M is alive; if M is already suspect it is a
//              confirmation (Lifeguard).  About ourselves: we refute.
//   Dead(i)    applies iff i >= j and M is neither dead nor left; Dead with from == M is
//              a graceful leave.  About ourselves: we refute (unless we are leaving).
// Every applied update is re-broadcast, which is how news spreads; news that changes
// nothing is dropped, which is how it stops.
#include <algorithm>
#include <cassert>

#include "gossip/membership.h"

namespace caesium::gossip {

void Membership::apply_update(const Update& update, int64_t now_ms) {
  std::visit(
      [&](const auto& u) {
        using T = std::decay_t<decltype(u)>;
        if constexpr (std::is_same_v<T, Alive>) on_alive(u, now_ms);
        else if constexpr (std::is_same_v<T, Suspect>) on_suspect(u, now_ms);
        else on_dead(u, now_ms);
      },
      update);
}

void Membership::broadcast(Update update) {
  if (!queue_.push(std::move(update))) ++stats_.updates_too_large;
  gossip_idle_ = false;
}

void Membership::on_alive(const Alive& a, int64_t now_ms) {
  if (!valid_alive(a)) {
    ++stats_.malformed_dropped;
    return;
  }
  if (a.node == self_id_) {
    on_alive_about_self(a, now_ms);
    return;
  }
  Member* m = find(a.node);
  if (m == nullptr) {
    add_member(a, now_ms);
    return;
  }
  if (m->addr != a.addr) {
    if (is_reachable(m->state)) {
      // Two live processes claim one id.  Keep the record we have; never merge.
      note_conflict(a.node, m->addr, a.addr, a.incarnation);
      return;
    }
    // The id of a dead or left member, taken by a process at a new address (a replaced
    // machine).  Whatever its incarnation: the old process is gone.
    const std::string old_addr = m->addr;
    m->addr = a.addr;
    m->incarnation = a.incarnation;
    m->meta = a.meta;
    view_changed();
    change_state(a.node, *m, MemberState::kAlive, now_ms);
    broadcast(a);
    emit(MemberEvent::Kind::kJoined, a.node, "rejoined at a new address (was " + old_addr + ")");
    return;
  }
  if (a.incarnation <= m->incarnation) return;

  const MemberState old_state = m->state;
  const bool meta_changed = m->meta != a.meta;
  m->incarnation = a.incarnation;
  m->meta = a.meta;
  view_changed();
  change_state(a.node, *m, MemberState::kAlive, now_ms);
  broadcast(a);
  switch (old_state) {
    case MemberState::kDead:
    case MemberState::kLeft:
      emit(MemberEvent::Kind::kJoined, a.node, "back with a new incarnation");
      break;
    case MemberState::kSuspect:
      emit(MemberEvent::Kind::kAlive, a.node, meta_changed ? "refuted suspicion; meta changed" : "refuted suspicion");
      break;
    case MemberState::kAlive:
      if (meta_changed) emit(MemberEvent::Kind::kUpdated, a.node, "meta changed");
      break;
  }
}

void Membership::on_alive_about_self(const Alive& a, int64_t now_ms) {
  if (left_) return;  // a late echo of our own Alive must not undo the leave
  if (a.addr != self_addr_) {
    // Someone else runs with our id.  Report it and assert ourselves once per claimed
    // address; refuting every echo would start an incarnation war between the two.
    if (note_conflict(self_id_, self_addr_, a.addr, a.incarnation) && a.incarnation >= incarnation_)
      refute(a.incarnation, now_ms, "another process at " + a.addr + " claims our id");
    return;
  }
  if (a.incarnation < incarnation_) return;
  if (a.incarnation == incarnation_ && a.meta == self().meta) return;  // our own news, echoed
  // Newer (or same-incarnation but different) news about us: a previous life of this
  // node, before a restart.  Outbid it so the cluster holds our current meta.
  ++stats_.previous_life_seen;
  refute(a.incarnation, now_ms, "outbidding an alive from a previous run at incarnation " +
                                    std::to_string(a.incarnation));
}

void Membership::add_member(const Alive& a, int64_t now_ms, bool spread) {
  Member m;
  m.addr = a.addr;
  m.incarnation = a.incarnation;
  m.state = MemberState::kAlive;
  m.meta = a.meta;
  m.state_change_ms = now_ms;
  auto [it, inserted] = members_.emplace(a.node, std::move(m));
  assert(inserted);
  index_.insert(&*it);
  view_changed();
  ++state_counts_[index(MemberState::kAlive)];
  gossip_idle_ = false;
  // Insert at a random position of the probe order, not at the end: if every node
  // appended, a new member would be probed by everyone at about the same late time
  // (memberlist does the same for the same reason).
  const size_t n = probe_order_.size();
  probe_order_.push_back(&*it);
  const auto offset = static_cast<size_t>(rng_.below(n + 1));
  std::swap(probe_order_[offset], probe_order_[n]);
  if (spread) broadcast(a);
  emit(MemberEvent::Kind::kJoined, a.node, "new member");
}

void Membership::on_suspect(const Suspect& s, int64_t now_ms) {
  if (!valid_id(s.node) || !valid_id(s.from) || !valid_incarnation(s.incarnation)) {
    ++stats_.malformed_dropped;
    return;
  }
  Member* m = find(s.node);
  if (m == nullptr) return;  // never heard of it: nothing to suspect
  if (s.incarnation < m->incarnation) {
    note_stale_news(s.node);  // the sender missed a refutation: tell it directly
    return;
  }
  if (s.node == self_id_) {
    if (s.incarnation > incarnation_) ++stats_.previous_life_seen;
    if (!left_) refute(s.incarnation, now_ms, "suspected by " + s.from);
    return;
  }
  if (m->state == MemberState::kSuspect) {
    if (s.incarnation > m->incarnation) {
      // It refuted and was suspected again before we heard the refutation.  Our old
      // suspicion was answered: this is a new one, timed from now.  (Keeping the old
      // timer would declare it dead at once, often seconds into the new suspicion, and
      // with the new incarnation everyone would accept that Dead.)
      end_suspicion(s.node, *m);
      m->incarnation = s.incarnation;
      view_changed();
      start_suspicion(s.node, *m, s.from, now_ms);
      broadcast(s);
      return;
    }
    bool news = false;
    if (config_.lifeguard) {
      const int64_t before = m->suspicion->deadline_ms();
      if (m->suspicion->confirm(s.from)) {
        reschedule_suspicion(s.node, *m, before);
        news = true;
      }
    }
    if (news) broadcast(s);
    return;
  }
  if (m->state != MemberState::kAlive) return;
  m->incarnation = s.incarnation;
  view_changed();
  change_state(s.node, *m, MemberState::kSuspect, now_ms);
  start_suspicion(s.node, *m, s.from, now_ms);
  broadcast(s);
  emit(MemberEvent::Kind::kSuspect, s.node, "suspected by " + s.from);
}

void Membership::on_dead(const Dead& d, int64_t now_ms) {
  if (!valid_id(d.node) || !valid_id(d.from) || !valid_incarnation(d.incarnation)) {
    ++stats_.malformed_dropped;
    return;
  }
  Member* m = find(d.node);
  if (m == nullptr) return;
  if (d.incarnation < m->incarnation) {
    note_stale_news(d.node);  // the sender missed a refutation: tell it directly
    return;
  }
  if (m->state == MemberState::kDead || m->state == MemberState::kLeft) return;
  if (d.node == self_id_) {
    // Our own leave is applied by leave(); anything else is a false accusation.
    if (d.incarnation > incarnation_) ++stats_.previous_life_seen;
    refute(d.incarnation, now_ms, "declared dead by " + d.from);
    return;
  }
  const bool left = d.from == d.node;
  m->incarnation = d.incarnation;
  view_changed();
  change_state(d.node, *m, left ? MemberState::kLeft : MemberState::kDead, now_ms);
  broadcast(d);
  if (left) emit(MemberEvent::Kind::kLeft, d.node, "left gracefully");
  else emit(MemberEvent::Kind::kDead, d.node, "declared dead by " + d.from);
}

void Membership::change_state(const std::string& id, Member& m, MemberState to, int64_t now_ms) {
  if (m.state == to) return;
  if (m.suspicion) end_suspicion(id, m);
  if (m.state == MemberState::kDead) {
    auto it = std::find_if(dead_.begin(), dead_.end(), [&](const DeadRef& r) { return &r.entry->second == &m; });
    assert(it != dead_.end());
    *it = dead_.back();
    dead_.pop_back();
  } else if (to == MemberState::kDead) {
    MemberEntry* e = index_.find(id);
    assert(e != nullptr && &e->second == &m);
    dead_.push_back(DeadRef{e, now_ms});
  }
  --state_counts_[index(m.state)];
  ++state_counts_[index(to)];
  index_.set_mark(id, to != MemberState::kAlive);
  m.state = to;
  m.state_change_ms = now_ms;
  view_changed();
  gossip_idle_ = false;
}

// Lifeguard's timer: Min scales with log10 of the cluster size, Max = mult * Min, and we
// expect K = suspicion_mult - 2 independent confirmations — memberlist's choice: with no
// known phase relation to the other probers, that reaches the nominal timeout about two
// probe periods early.  With fewer than K other possible confirmers, K = 0 and the timer
// stays at Max.  Plain SWIM: a fixed Min.
void Membership::start_suspicion(const std::string& id, Member& m, std::string_view from, int64_t now_ms) {
  assert(m.state == MemberState::kSuspect);
  const size_t n = reachable_count();
  const auto [min_ms, max_ms] = suspicion_bounds_ms(n);
  int k = 0;
  if (config_.lifeguard) {
    k = std::max(0, config_.suspicion_mult - 2);
    if (n < static_cast<size_t>(k) + 2) k = 0;  // n - 2 others (not us, not the suspect)
  }
  m.suspicion.emplace(from, k, min_ms, max_ms, now_ms);
  suspicion_deadlines_.emplace(m.suspicion->deadline_ms(), id);
}

void Membership::end_suspicion(const std::string& id, Member& m) {
  const bool erased = suspicion_deadlines_.erase({m.suspicion->deadline_ms(), id}) == 1;
  assert(erased);
  (void)erased;
  m.suspicion.reset();
}

void Membership::reschedule_suspicion(const std::string& id, const Member& m, int64_t old_deadline_ms) {
  const bool erased = suspicion_deadlines_.erase({old_deadline_ms, id}) == 1;
  assert(erased);
  (void)erased;
  suspicion_deadlines_.emplace(m.suspicion->deadline_ms(), id);
}

void Membership::expire_suspicions(int64_t now_ms) {
  while (!suspicion_deadlines_.empty() && suspicion_deadlines_.begin()->first <= now_ms) {
    const std::string id = suspicion_deadlines_.begin()->second;
    const Member* m = find(id);
    assert(m != nullptr);
    assert(m->state == MemberState::kSuspect);
    ++stats_.deaths_declared;
    on_dead(Dead{id, m->incarnation, self_id_}, now_ms);  // removes the deadline
  }
}

void Membership::refute(uint64_t accused_incarnation, int64_t now_ms, std::string detail) {
  assert(!left_);
  incarnation_ = std::max(incarnation_ + 1, accused_incarnation + 1);
  Member& me = self();
  me.incarnation = incarnation_;
  view_changed();
  // Lifeguard: being accused is evidence that we answer too slowly.
  awareness_.apply(1);
  last_alive_broadcast_ms_ = now_ms;
  broadcast(Alive{self_id_, incarnation_, self_addr_, me.meta});
  ++stats_.refutations;
  emit(MemberEvent::Kind::kAlive, self_id_, "refuted: " + detail);
}

bool Membership::note_conflict(const std::string& id, const std::string& known_addr, const std::string& claimed_addr,
                               uint64_t incarnation) {
  ++stats_.conflicts;
  if (conflicts_seen_.size() >= kMaxConflictsRemembered) conflicts_seen_.clear();
  if (!conflicts_seen_.emplace(id, claimed_addr).second) return false;
  emit(MemberEvent::Kind::kConflict, id,
       "node id " + id + " is claimed at " + claimed_addr + " (incarnation " + std::to_string(incarnation) +
           ") but known at " + known_addr + "; two processes share one id — give each node a unique id");
  return true;
}

// A full state from a peer goes through the same rules as gossip, as memberlist's
// mergeState does: a remote Left is a leave; a remote Suspect or Dead only makes us
// *suspect* the member (with the peer as the suspecting node), so a member that is alive
// gets a chance to refute instead of being killed by one peer's stale opinion.
void Membership::merge(const Peer& from, const PushPull& msg, int64_t now_ms) {
  for (const auto& r : msg.members) {
    switch (r.state) {
      case MemberState::kAlive:
        on_alive(Alive{r.node, r.incarnation, r.addr, r.meta}, now_ms);
        break;
      case MemberState::kLeft:
        on_dead(Dead{r.node, r.incarnation, r.node}, now_ms);
        break;
      case MemberState::kSuspect:
      case MemberState::kDead:
        on_suspect(Suspect{r.node, r.incarnation, from.id}, now_ms);
        break;
      default:
        ++stats_.malformed_dropped;
        break;
    }
  }
}

// Forgets dead and left members after dead_reclaim.  Called when the probe order wraps,
// which keeps the probe order and the member map in step.
void Membership::reap(int64_t now_ms) {
  for (auto it = members_.begin(); it != members_.end();) {
    const Member& m = it->second;
    const bool gone = m.state == MemberState::kDead || m.state == MemberState::kLeft;
    if (gone && it->first != self_id_ && now_ms - m.state_change_ms >= config_.dead_reclaim_ms) {
      --state_counts_[index(m.state)];
      if (m.state == MemberState::kDead) {
        const MemberEntry* gone_entry = &*it;
        dead_.erase(std::find_if(dead_.begin(), dead_.end(), [&](const DeadRef& r) { return r.entry == gone_entry; }));
      }
      index_.erase(it->first);
      it = members_.erase(it);
      view_changed();
    } else {
      ++it;
    }
  }
}

}  // namespace caesium::gossip
