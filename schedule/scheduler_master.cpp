// Scheduler, part 2: deciding.  The master of a volume decides each due occurrence
// (claim with quorum, fire degraded, withhold, skip, miss); the owner of an occurrence
// drives its attempts to a worker (accept timeout, revoke, complete_time, worker death,
// takeover).  DESIGN.md §6.
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {
namespace {

size_t count_in(const std::set<std::string>& votes, const std::vector<std::string>& set) {
  size_t n = 0;
  for (const auto& node : set) n += votes.count(node);
  return n;
}

}  // namespace

void Scheduler::emit(FireEvent::Kind kind, const Occ& o, Clock now, const std::string& node,
                     uint32_t attempt, const std::string& detail, bool ok) {
  // Every field is set: the event is the reused one (event_scratch_).
  FireEvent& e = event_scratch_;
  e.kind = kind;
  e.volume = o.volume;
  e.occ = o.id;
  e.node = node;
  e.attempt = attempt;
  e.at_most_once = o.at_most_once;
  e.path = o.path;
  e.ok = ok;
  e.lateness_ms = now.utc_ms - o.fire_utc_ms;
  e.detail = detail;
  host_.emit(e);
}

void Scheduler::defer(Occ& o, Clock now, const std::string& why) {
  if (o.deferred_reason == why) return;
  o.deferred_reason = why;
  emit(FireEvent::Kind::kDeferred, o, now, {}, 0, why);
}

// --- eligibility and quorum ---------------------------------------------------------------

bool Scheduler::node_matches_binding(const std::string& node, const Entry& e) const {
  if (e.bind.empty()) return true;
  for (const auto& b : e.bind) {
    if (b.rfind("tag:", 0) == 0) {
      auto it = topology_.node_tags.find(node);
      if (it == topology_.node_tags.end()) continue;
      const std::string tag = b.substr(4);
      if (std::binary_search(it->second.begin(), it->second.end(), tag)) return true;
    } else if (b == node) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> Scheduler::bound_to(const std::vector<std::string>& nodes, const Entry& e) const {
  std::vector<std::string> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) {
    if (node_matches_binding(n, e)) out.push_back(n);
  }
  return out;
}

Scheduler::Borrowed<std::vector<std::string>> Scheduler::eligible(const std::string& volume, const Entry& e) const {
  auto it = topology_.volumes.find(volume);
  if (it == topology_.volumes.end()) return Borrowed<std::vector<std::string>>(std::vector<std::string>{});
  if (e.bind.empty()) return Borrowed<std::vector<std::string>>(&it->second.replicas);
  return Borrowed<std::vector<std::string>>(bound_to(it->second.replicas, e));
}

// The sets a claim needs a majority of: the eligible set, and during a replica change
// also the eligible set of the previous configuration (joint consensus, DESIGN.md §4).
// The denominator is always the configured set, never the live view.
Scheduler::QuorumSets Scheduler::make_quorum_sets(const Topology::Volume* v, const Entry& e) const {
  QuorumSets sets;
  sets.push_back(v != nullptr ? bound_to(v->replicas, e) : std::vector<std::string>{});
  if (v != nullptr && !v->previous_replicas.empty()) {
    std::vector<std::string> prev = bound_to(v->previous_replicas, e);
    if (!prev.empty()) sets.push_back(std::move(prev));
  }
  return sets;
}

// An entry without a binding borrows its volume's sets, made once at set_topology.
Scheduler::Borrowed<Scheduler::QuorumSets> Scheduler::quorum_sets(const std::string& volume, const Entry& e) const {
  if (e.bind.empty()) {
    if (auto cached = volume_quorum_sets_.find(volume); cached != volume_quorum_sets_.end()) {
      return Borrowed<QuorumSets>(&cached->second);
    }
  }
  auto it = topology_.volumes.find(volume);
  return Borrowed<QuorumSets>(make_quorum_sets(it != topology_.volumes.end() ? &it->second : nullptr, e));
}

bool Scheduler::has_majority(const std::set<std::string>& votes, const std::string& volume, const Entry& e) const {
  const auto quorum = quorum_sets(volume, e);
  for (const auto& set : *quorum) {
    if (set.empty() || count_in(votes, set) * 2 <= set.size()) return false;
  }
  return true;
}

bool Scheduler::quorum_reachable(const std::string& volume, const Entry& e) const {
  std::set<std::string> reach;
  const auto quorum = quorum_sets(volume, e);
  for (const auto& set : *quorum) {
    for (const auto& n : set) {
      if (host_.peer(n).reachable) reach.insert(n);
    }
  }
  return has_majority(reach, volume, e);
}

bool Scheduler::majority_impossible(const Occ& o, const Entry& e, bool unreachable_lost) const {
  const auto quorum = quorum_sets(o.volume, e);
  for (const auto& set : *quorum) {
    size_t possible = set.size() - count_in(o.refused, set);
    if (unreachable_lost) {
      for (const auto& n : set) {
        if (!o.refused.count(n) && !o.answered.count(n) && n != self_.node && !host_.peer(n).reachable) --possible;
      }
    }
    if (possible * 2 <= set.size()) return true;
  }
  return false;
}

bool Scheduler::holds_half(const Occ& o, const Entry& e) const {
  const auto quorum = quorum_sets(o.volume, e);
  for (const auto& set : *quorum) {
    if (!set.empty() && 2 * count_in(o.granted, set) >= set.size()) return true;
  }
  return false;
}

// Whether the process is alive in our view.  boot == 0 means "whatever process runs
// on that node now" (a worker, which is named by node only).
bool Scheduler::alive_in(const PeerView& p, const ProcessId& owner) {
  return p.reachable && (p.boot == 0 || owner.boot == 0 || p.boot == owner.boot);
}

bool Scheduler::owner_alive(const ProcessId& owner) const {
  if (owner.node == self_.node) return owner.boot == 0 || owner.boot == self_.boot;
  return alive_in(host_.peer(owner.node), owner);
}

bool Scheduler::owner_gone(const ProcessId& owner) const {
  if (owner.node == self_.node) return !owner_alive(owner);
  const PeerView p = host_.peer(owner.node);
  return !alive_in(p, owner) || (p.suspect && p.silent_ms >= options_.owner_silence_ms);
}

int64_t Scheduler::owner_gone_at(const ProcessId& owner, Clock now) const {
  if (owner.node == self_.node) return kNever;
  const PeerView p = host_.peer(owner.node);
  if (!p.suspect || p.silent_ms == kNever) return kNever;
  return now.mono_ms + std::max<int64_t>(0, options_.owner_silence_ms - p.silent_ms) + 1;
}

constexpr int64_t kAssignHalfLifeMs = 1'000;

// Halves a.count once per half-life elapsed since a.since_mono_ms, and moves since_mono_ms
// on by those whole half-lives (so a steady trickle of assignments still decays).
void Scheduler::Assigned::decay(int64_t now_mono_ms) {
  const int64_t halvings = std::max<int64_t>(0, (now_mono_ms - since_mono_ms) / kAssignHalfLifeMs);
  if (halvings >= 63) {
    count = 0;
    since_mono_ms = now_mono_ms;
    return;
  }
  count >>= halvings;
  since_mono_ms += halvings * kAssignHalfLifeMs;
}

uint64_t Scheduler::recent_assignments(const std::string& worker, int64_t now_mono_ms) const {
  auto it = assigned_.find(worker);
  if (it == assigned_.end()) return 0;
  Assigned a = it->second;
  a.decay(now_mono_ms);
  return a.count;
}

void Scheduler::uncount(Attempt& a) {
  if (!std::exchange(a.counted, false)) return;
  auto it = outstanding_.find(a.info.worker);
  assert(it != outstanding_.end() && it->second > 0);
  if (--it->second == 0) outstanding_.erase(it);
}

// Least loaded reachable eligible replica (DESIGN.md §6); the origin when the entry
// prefers it and it can run there.  Load = what the worker reports (running + queued;
// live for this node, gossiped for the others) + attempts this owner has in flight there
// + attempts it assigned there lately.  Ties are broken by a hash of (occurrence, node)
// so that work spreads instead of piling onto the lexically first node.
std::optional<std::string> Scheduler::choose_worker(const Occ& o, const Entry& e,
                                                    const std::set<std::string>& exclude, Clock now) {
  const auto eligible_set = eligible(o.volume, e);
  const std::vector<std::string>& candidates = *eligible_set;
  std::optional<std::string> best;
  if (e.prefer_origin && !e.origin.empty() && !exclude.count(e.origin) &&
      std::binary_search(candidates.begin(), candidates.end(), e.origin) && host_.peer(e.origin).reachable) {
    best = e.origin;
  } else {
    // Preference classes, best first: heard from directly and recently; alive in the
    // view (perhaps only through relays: a non-transitive link may eat the dispatch);
    // suspect (probably dead).  Within a class, the least loaded.
    auto rank = [](const PeerView& p) { return p.suspect ? 2 : p.direct ? 0 : 1; };
    int best_rank = 3;
    uint64_t best_score = UINT64_MAX, best_tie = 0;
    for (const auto& n : candidates) {
      if (exclude.count(n)) continue;
      const PeerView p = host_.peer(n);
      if (!p.reachable) continue;
      const int r = rank(p);
      if (r > best_rank) continue;
      auto out = outstanding_.find(n);
      const uint64_t busy = uint64_t{p.load} + (out == outstanding_.end() ? 0 : out->second) +
                            recent_assignments(n, now.mono_ms);
      const uint64_t score = busy * 1024 / std::max<uint64_t>(1, p.slots);
      const uint64_t tie =
          hash_combine(hash64(n), static_cast<uint64_t>(o.id.scheduled_utc_ms) ^ hash64(o.id.entry_key));
      if (r < best_rank || score < best_score || (score == best_score && tie < best_tie)) {
        best_rank = r;
        best = n;
        best_score = score;
        best_tie = tie;
      }
    }
  }
  if (best) {
    Assigned& a = assigned_.try_emplace(*best, Assigned{0, now.mono_ms}).first->second;
    a.decay(now.mono_ms);
    ++a.count;
  }
  return best;
}

bool Scheduler::misfire_policy_allows(const Occ& o, const Entry& e, Clock now) const {
  if (now.utc_ms - o.fire_utc_ms <= options_.misfire_threshold_ms) return true;
  switch (e.misfire) {
    case MisfirePolicy::fire_all: return true;
    case MisfirePolicy::skip: return false;
    case MisfirePolicy::fire_once: {
      // Only the most recent due occurrence of the entry runs.
      const EntryRec* rec = entry_of(o.volume, o.id.entry_key);
      return rec == nullptr || rec->cursor_utc_ms <= o.id.scheduled_utc_ms;
    }
  }
  return true;
}

// --- deciding -------------------------------------------------------------------------------

void Scheduler::reconsider_volume(const std::string& volume, Clock now) {
  std::vector<OccKey> keys;
  for (const auto& [key, o] : occs_) {
    if (o.volume == volume && !terminal(o.phase)) keys.push_back(key);
  }
  for (const auto& k : keys) {
    auto it = occs_.find(k);
    if (it != occs_.end()) reconsider(it->second, now);
  }
}

int64_t Scheduler::owner_stall_ms(const Entry& e) const { return e.accept_timeout_ms + options_.claim_give_up_ms; }

// Deferring to another process's open owner record for longer than owner_stall_ms, with
// no live worker holding an accepted attempt of o (that one still completes).  Starts
// the deferral clock on the first call; start_prepare stops it.
bool Scheduler::owner_stalled(Occ& o, const Entry& e, Clock now) {
  for (const auto& [fid, w] : o.worker_records) {
    if (w.state == WorkerState::kAccepted && owner_alive(w.worker)) {
      o.owner_deferred_since_mono_ms = now.mono_ms;
      return false;
    }
  }
  if (o.owner_deferred_since_mono_ms == 0) {
    o.owner_deferred_since_mono_ms = now.mono_ms;
    return false;
  }
  return now.mono_ms >= o.owner_deferred_since_mono_ms + owner_stall_ms(e);
}

void Scheduler::reconsider(Occ& o, Clock now) {
  if (terminal(o.phase)) return;
  for (const auto& [fid, w] : o.worker_records) {
    if (finished(w.state)) {
      if (o.phase == Phase::kClaiming) release_grants(o, o.entry.get(), now);
      finish(o, Phase::kDone, "", now);
      return;
    }
  }
  if (o.phase == Phase::kOwned) {
    owner_step(o, now);
    return;
  }
  std::shared_ptr<const Entry> entry = o.entry;
  const bool deciding = o.phase == Phase::kClaiming || o.phase == Phase::kPreparing ||
                        (active_ && masters_.count(o.volume) > 0 && o.due);
  if (!entry && deciding && entry_of(o.volume, o.id.entry_key) != nullptr) entry = load_entry(o.volume, o.id.entry_key);
  if (o.phase == Phase::kClaiming) {
    assert(entry);
    evaluate_claim(o, *entry, now);
    return;
  }
  if (o.phase == Phase::kPreparing) {
    assert(entry);
    evaluate_prepare(o, *entry, now);
    return;
  }
  if (!active_ || !masters_.count(o.volume) || !o.due || !entry) return;
  const Entry& e = *entry;
  o.entry = entry;
  o.at_most_once = e.semantics == Semantics::at_most_once;
  const int64_t lateness = now.utc_ms - o.fire_utc_ms;

  // Someone else's decision, as recorded in the volume store.
  for (const auto& [node, r] : o.owner_records) {
    if (r.owner == self_) continue;
    if (r.outcome != OwnerOutcome::kOpen) {
      const Phase p = r.outcome == OwnerOutcome::kLost ? Phase::kLost
                      : r.outcome == OwnerOutcome::kSkipped ? Phase::kSkipped
                                                           : Phase::kMissed;
      o.phase = p;
      o.terminal_since_mono_ms = now.mono_ms;
      set_timer(o, kNever);
      return;
    }
    if (!owner_gone(r.owner)) {  // its owner is at work
      // Or it was, and a higher round superseded it: its record stays open while the
      // process lives, and a superseded owner defers to the record of whoever
      // superseded it.  When that one was superseded in turn (by a minority round that
      // came to nothing), each defers to the other's record for ever (swarm seed 27011:
      // the at-most-once occurrence never ran).  So at-most-once deferral is bounded:
      // after an accept timeout plus claim_give_up with no live worker holding an
      // accepted attempt, the master takes o over through a higher round — safe against
      // an owner that is in fact at work, since the round resolves its attempts first.
      if (o.at_most_once && owner_stalled(o, e, now)) {
        mark(Mark::kOwnerStalledTakeover);
        take_over_or_wait(o, e, now);
        return;
      }
      defer(o, now, "owner " + r.owner.node + " is at work");
      // A suspect owner that stays silent counts as gone later: look again then (an
      // earlier wake-up already set stays).
      int64_t at = owner_gone_at(r.owner, now);
      if (o.at_most_once) at = std::min(at, o.owner_deferred_since_mono_ms + owner_stall_ms(e));
      if (at != kNever && (!o.timer_armed || at < o.timer_mono_ms)) set_timer(o, at);
      return;
    }
  }
  // An owner vanished before the occurrence ran.
  for (const auto& [node, r] : o.owner_records) {
    if (r.owner == self_ || r.outcome != OwnerOutcome::kOpen || !owner_gone(r.owner)) continue;
    if (!o.at_most_once) {
      // At-least-once: take it over.  With complete_time > 0 an accepted attempt gets
      // its complete_time before being redispatched (seed 003, scheduler replacement).
      int64_t wait_until = 0;
      if (e.complete_time_ms > 0) {
        for (const auto& [fid, w] : o.worker_records) {
          if (w.state == WorkerState::kAccepted && owner_alive(w.worker)) {
            // A prepared attempt starts at F, not when it was accepted.
            wait_until = std::max(wait_until, std::max(w.accepted_utc_ms, o.fire_utc_ms) + e.complete_time_ms);
          }
        }
      }
      o.takeover_wait_until_utc_ms = wait_until;
      become_owner(o, e, FirePath::kTakeover, true, now);
      return;
    }
    // At-most-once: an accepted attempt on a live worker still completes.  Otherwise a
    // new master takes over through a higher round, which first resolves whatever the
    // vanished owner may have dispatched (scheduler_claims.cpp).
    for (const auto& [fid, w] : o.worker_records) {
      if (w.state == WorkerState::kAccepted && owner_alive(w.worker)) return;
    }
    take_over_or_wait(o, e, now);
    return;
  }
  if (o.holder && !(*o.holder == self_)) {
    // Granted to a live process: it decides.  "Live" includes a holder this node cannot
    // see but a replica that can see it vouched for (a non-transitive partition).  But
    // a holder may hold only part of a split vote and have released it, as we did: if
    // no owner record from it appears within the give-up time, claim again — claims
    // are exclusive, so if it does own o the replicas simply say so again.
    if (!owner_gone(*o.holder) || o.holder_vouched) {
      if (o.deferred_since_mono_ms == 0) o.deferred_since_mono_ms = now.mono_ms;
      const int64_t recheck = o.deferred_since_mono_ms + options_.claim_give_up_ms;
      if (now.mono_ms < recheck) {
        defer(o, now, "granted to " + o.holder->node);
        set_timer(o, recheck);
        return;
      }
      o.deferred_since_mono_ms = 0;
      o.holder.reset();
      o.holder_vouched = false;
      if (quorum_reachable(o.volume, e)) start_claim(o, e, now);
      else set_timer(o, now.mono_ms + options_.claim_retry_ms);
      return;
    }
    if (!o.at_most_once) {
      become_owner(o, e, FirePath::kTakeover, true, now);
    } else {
      take_over_or_wait(o, e, now);
    }
    return;
  }
  if (lateness > e.misfire_window_ms) {
    finish(o, Phase::kMissed, "not fired within its misfire window", now);
    return;
  }
  if (!misfire_policy_allows(o, e, now)) {
    finish(o, Phase::kSkipped, "late beyond the misfire threshold; policy skips it", now);
    return;
  }
  if (eligible(o.volume, e)->empty()) {
    finish(o, Phase::kMissed, "no replica of the volume matches the entry's binding", now);
    return;
  }
  if (quorum_reachable(o.volume, e)) {
    start_claim(o, e, now);
  } else if (!o.at_most_once) {
    become_owner(o, e, FirePath::kDegraded, true, now);
  } else {
    if (o.phase != Phase::kWithheld) {
      o.phase = Phase::kWithheld;
      ++counters_.withheld;
      emit(FireEvent::Kind::kWithheld, o, now, {}, 0, "no quorum of the eligible replicas is reachable");
    }
    // Until quorum returns (a peer change) or the window closes.
    set_timer(o, utc_to_mono(o.fire_utc_ms + e.misfire_window_ms) + 1);
  }
}

// At-most-once, its owner or claimant vanished: prepare a higher round when a quorum is
// reachable; otherwise wait for one (a peer change or the window end brings us back).
void Scheduler::take_over_or_wait(Occ& o, const Entry& e, Clock now) {
  if (now.utc_ms - o.fire_utc_ms > e.misfire_window_ms) {
    const bool maybe_ran = !o.owner_records.empty() || o.holder.has_value();
    finish(o, maybe_ran ? Phase::kLost : Phase::kMissed,
           "its owner vanished or stalled and no new master could take it over within the misfire window", now);
    return;
  }
  if (quorum_reachable(o.volume, e)) {
    start_prepare(o, e, now);
    return;
  }
  set_timer(o, std::min(now.mono_ms + options_.revoke_retry_ms, utc_to_mono(o.fire_utc_ms + e.misfire_window_ms) + 1));
}

// --- owning -------------------------------------------------------------------------------

void Scheduler::become_owner(Occ& o, const Entry& e, FirePath path, bool possible_duplicate, Clock now) {
  o.phase = Phase::kOwned;
  o.ever_owned = true;
  o.path = path;
  o.possible_duplicate = possible_duplicate;
  switch (path) {
    case FirePath::kQuorum: ++counters_.owned_quorum; break;
    case FirePath::kDegraded: ++counters_.owned_degraded; break;
    case FirePath::kTakeover: ++counters_.owned_takeover; break;
  }
  emit(FireEvent::Kind::kOwned, o, now, self_.node, 0, to_string(path));
  if (o.takeover_wait_until_utc_ms > now.utc_ms) {
    write_owner_record(o, OwnerOutcome::kOpen, "", now);
    set_timer(o, utc_to_mono(o.takeover_wait_until_utc_ms));
    return;
  }
  dispatch_attempt(o, e, now, {});
}

void Scheduler::write_owner_record(Occ& o, OwnerOutcome outcome, const std::string& reason, Clock now) {
  OwnerRecord r;
  r.owner = self_;
  r.path = o.path;
  r.outcome = outcome;
  r.reason = reason;
  r.decided_utc_ms = now.utc_ms;
  for (const auto& a : o.attempts) r.attempts.push_back(a.info);
  host_.store_put(o.volume, owner_record_key(o.id, self_.node), encode(r));
  o.owner_records[self_.node] = std::move(r);
}

void Scheduler::dispatch_attempt(Occ& o, const Entry& e, Clock now, const std::set<std::string>& exclude_in) {
  Attempt a;
  if (o.attempts.empty() && o.path == FirePath::kQuorum && o.round == 0 && !o.claim_attempt.fire_id.empty() &&
      !o.claim_attempt.worker.empty() && host_.peer(o.claim_attempt.worker).reachable) {
    // The first attempt was accepted together with the claim: dispatch it as is.
    a.info = o.claim_attempt;
  } else {
    std::set<std::string> exclude = exclude_in;
    exclude.insert(o.silent.begin(), o.silent.end());
    for (const auto& prev : o.attempts) {
      if (prev.state == AttemptState::kRefused || prev.state == AttemptState::kRevoked ||
          prev.state == AttemptState::kAbandoned) {
        exclude.insert(prev.info.worker);
      }
    }
    auto worker = choose_worker(o, e, exclude, now);
    if (!worker) worker = choose_worker(o, e, exclude_in, now);  // everyone refused once: try again
    if (!worker) {
      // No reachable eligible worker now; look again shortly (or when a peer changes).
      set_timer(o, now.mono_ms + options_.claim_retry_ms);
      return;
    }
    const uint32_t n = next_attempt_number(o);
    a.info = AttemptInfo{n, make_fire_id(o.volume, o.id, self_, n), *worker, now.utc_ms};
  }
  a.sent_mono_ms = now.mono_ms;
  a.resent_mono_ms = now.mono_ms;
  a.accept_by_utc_ms = now.utc_ms + e.accept_timeout_ms;
  a.prepared = options_.prepare_ahead_ms > 0;  // make_dispatch sets run_at then
  const bool needs_accept = o.at_most_once && !(a.info == o.claim_attempt && o.round == 0);
  a.state = needs_accept ? AttemptState::kProposing : AttemptState::kSent;
  o.attempts.push_back(std::move(a));
  // The owner record is durable before the dispatch leaves, so an owner that restarts
  // with its disk knows what it sent.
  write_owner_record(o, OwnerOutcome::kOpen, "", now);
  Attempt& added = o.attempts.back();
  ++outstanding_[added.info.worker];
  added.counted = true;
  if (needs_accept) {
    // At-most-once: a majority must accept the new attempt in our round first, so a
    // master that took over in a higher round meanwhile stops us (scheduler_claims.cpp).
    send_accepts(o, e, added, now);
    set_timer(o, now.mono_ms + options_.claim_retry_ms);
    return;
  }
  send_dispatch(o, e, added, now);
}

void Scheduler::send_dispatch(Occ& o, const Entry& e, Attempt& a, Clock now) {
  a.state = AttemptState::kSent;
  a.sent_mono_ms = now.mono_ms;
  a.resent_mono_ms = now.mono_ms;
  a.accept_by_utc_ms = now.utc_ms + e.accept_timeout_ms;
  host_.send(a.info.worker, make_dispatch(o, e, a), true);
  if (o.attempts.size() == 1) {
    ++counters_.dispatched;
    emit(FireEvent::Kind::kDispatched, o, now, a.info.worker, a.info.attempt);
  } else {
    ++counters_.redispatched;
    emit(FireEvent::Kind::kRedispatched, o, now, a.info.worker, a.info.attempt);
  }
  set_timer(o, now.mono_ms + std::min(e.accept_timeout_ms, options_.claim_retry_ms));
}

Dispatch Scheduler::make_dispatch(const Occ& o, const Entry& e, const Attempt& a) const {
  Dispatch d;
  d.volume = o.volume;
  d.occ = o.id;
  d.owner = self_;
  d.fire_id = a.info.fire_id;
  d.attempt = a.info.attempt;
  d.at_most_once = o.at_most_once;
  d.possible_duplicate = o.possible_duplicate;
  d.accept_by_utc_ms = a.accept_by_utc_ms;
  d.handler = e.handler;
  d.payload = e.payload;
  if (const auto* timer = std::get_if<Timer>(&e.timing)) {
    d.sequence = timer_sequence(*timer, e.created_utc_ms, o.id.scheduled_utc_ms);
  }
  d.issued_utc_ms = a.info.issued_utc_ms;
  // Prepared ahead: the worker holds it until F (on its clock and a majority's).
  if (options_.prepare_ahead_ms > 0) d.run_at_utc_ms = o.fire_utc_ms;
  return d;
}

// Drives an owned occurrence: accept timeouts, revocation, complete_time, worker
// death, the misfire window.  Idempotent; called on every relevant event.
void Scheduler::owner_step(Occ& o, Clock now) {
  assert(o.phase == Phase::kOwned);
  const Entry& e = *o.entry;
  for (const auto& [fid, w] : o.worker_records) {
    if (finished(w.state)) {
      finish(o, Phase::kDone, "", now);
      return;
    }
  }
  if (o.attempts.empty()) {
    if (o.takeover_wait_until_utc_ms > now.utc_ms) {
      set_timer(o, utc_to_mono(o.takeover_wait_until_utc_ms));
      return;
    }
    o.takeover_wait_until_utc_ms = 0;
    if (now.utc_ms - o.fire_utc_ms > e.misfire_window_ms) {
      finish(o, Phase::kMissed, "no worker accepted within the misfire window", now);
      return;
    }
    dispatch_attempt(o, e, now, {});
    return;
  }
  // Before a new attempt replaces a resolved one (revoked or refused: never runs), every
  // in-doubt value of a collided takeover round is resolved too: the first unresolved one
  // becomes the attempt this step works on.
  if (o.attempts.back().state == AttemptState::kRevoked || o.attempts.back().state == AttemptState::kRefused) {
    for (size_t i = 0; i + 1 < o.attempts.size(); ++i) {
      const AttemptState st = o.attempts[i].state;
      if (o.attempts[i].doubt && st != AttemptState::kRevoked && st != AttemptState::kRefused &&
          st != AttemptState::kAbandoned) {
        std::swap(o.attempts[i], o.attempts.back());
        break;
      }
    }
  }
  Attempt& a = o.attempts.back();
  // Once accepted, the attempt lives in one process: its reply and the worker record
  // name its boot, so a worker that restarted (even within the suspicion timeout, and
  // even when the record never left it: its push may be held back, and the restart may
  // have lost its disk) counts as gone.
  ProcessId worker_process{a.info.worker, a.worker_boot};
  if (auto w = o.worker_records.find(a.info.fire_id); w != o.worker_records.end()) worker_process = w->second.worker;
  const bool worker_up = owner_alive(worker_process);
  const bool window_over = now.utc_ms - o.fire_utc_ms > e.misfire_window_ms;
  auto abandon_and_redispatch = [&](const char* why) {
    a.state = AttemptState::kAbandoned;
    uncount(a);
    o.possible_duplicate = true;  // the abandoned attempt may still run
    (void)why;
    if (window_over) {
      finish(o, Phase::kMissed, why, now);
      return;
    }
    dispatch_attempt(o, e, now, {a.info.worker});
  };
  switch (a.state) {
    case AttemptState::kProposing: {
      if (has_majority(a.accepted_by, o.volume, e)) {
        send_dispatch(o, e, a, now);
        return;
      }
      if (window_over) {
        finish(o, Phase::kMissed, "no quorum accepted a new attempt within the misfire window", now);
        return;
      }
      if (now.mono_ms >= a.resent_mono_ms + options_.claim_retry_ms) send_accepts(o, e, a, now);
      set_timer(o, a.resent_mono_ms + options_.claim_retry_ms);
      return;
    }
    case AttemptState::kSent: {
      const int64_t deadline = a.sent_mono_ms + e.accept_timeout_ms;
      if (!worker_up && !o.at_most_once) {
        abandon_and_redispatch("worker died before accepting");
        return;
      }
      // At-most-once and the worker vanished: it may have accepted before dying, so
      // nobody else may run o until it answers a revoke — which a worker that comes
      // back with its disk can do truthfully.  Revoke right away instead of waiting
      // out the accept timeout.
      if (now.mono_ms < deadline && worker_up) {
        // The dispatch or its reply may be lost (a broken connection, a corrupted
        // frame): send it again until the worker answers.  Acceptance is idempotent per
        // fire id, and the accept deadline and issue time travel unchanged.
        if (now.mono_ms >= a.resent_mono_ms + options_.claim_retry_ms) {
          a.resent_mono_ms = now.mono_ms;
          host_.send(a.info.worker, make_dispatch(o, e, a), true);
        }
        set_timer(o, std::min(deadline, a.resent_mono_ms + options_.claim_retry_ms));
        return;
      }
      if (!o.at_most_once) {
        abandon_and_redispatch("no accept within accept_timeout");
        return;
      }
      // At-most-once: the worker must promise it never will before anyone else may run it.
      mark(Mark::kAttemptRevoked);
      a.state = AttemptState::kRevoking;
      a.revoke_sent_mono_ms = now.mono_ms;
      host_.send(a.info.worker, Revoke{o.volume, o.id, a.info.fire_id, a.info.issued_utc_ms}, false);
      set_timer(o, now.mono_ms + options_.revoke_retry_ms);
      return;
    }
    case AttemptState::kRevoking: {
      // Keep asking until the worker answers (it may restart) or the window closes.
      if (window_over) {
        finish(o, Phase::kLost, "the worker never answered the revoke within the misfire window", now);
        return;
      }
      if (now.mono_ms >= a.revoke_sent_mono_ms + options_.revoke_retry_ms) {
        a.revoke_sent_mono_ms = now.mono_ms;
        host_.send(a.info.worker, Revoke{o.volume, o.id, a.info.fire_id, a.info.issued_utc_ms}, false);
      }
      set_timer(o, a.revoke_sent_mono_ms + options_.revoke_retry_ms);
      return;
    }
    case AttemptState::kAccepted: {
      if (!worker_up) {
        if (o.at_most_once && a.prepared && !a.revoke_tried) {
          // Prepared: the worker may have stopped before F, and if it comes back (with its
          // disk or not) it can tell that it never started the attempt.  Ask it; a worker
          // that answers nothing within the misfire window leaves o lost, as before.
          a.revoke_tried = true;
          a.state = AttemptState::kRevoking;
          a.revoke_sent_mono_ms = now.mono_ms;
          host_.send(a.info.worker, Revoke{o.volume, o.id, a.info.fire_id, a.info.issued_utc_ms}, false);
          set_timer(o, now.mono_ms + options_.revoke_retry_ms);
          return;
        }
        if (o.at_most_once) {
          mark(Mark::kAttemptLostWorkerDied);
          finish(o, Phase::kLost, "worker died while running", now);
        } else {
          abandon_and_redispatch("worker died while running");
        }
        return;
      }
      if (e.complete_time_ms > 0 && !o.at_most_once) {
        const int64_t deadline = std::max(a.accepted_mono_ms, utc_to_mono(o.fire_utc_ms)) + e.complete_time_ms;
        if (now.mono_ms >= deadline) {
          abandon_and_redispatch("not completed within complete_time");
          return;
        }
        set_timer(o, deadline);
        return;
      }
      set_timer(o, kNever);  // complete_time = 0: wait indefinitely
      return;
    }
    case AttemptState::kRefused:
    case AttemptState::kRevoked:
      if (window_over) {
        finish(o, Phase::kMissed, "no worker accepted within the misfire window", now);
        return;
      }
      dispatch_attempt(o, e, now, {a.info.worker});
      return;
    case AttemptState::kFinished:
      finish(o, Phase::kDone, "", now);
      return;
    case AttemptState::kAbandoned:
      dispatch_attempt(o, e, now, {a.info.worker});
      return;
  }
}

void Scheduler::on_dispatch_reply(const std::string& from, const DispatchReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o == nullptr || o->phase != Phase::kOwned) return;
  for (auto& a : o->attempts) {
    if (a.info.fire_id != r.fire_id || a.info.worker != from) continue;
    if (r.outcome == DispatchOutcome::kAccepted) {
      if (a.state == AttemptState::kSent || a.state == AttemptState::kRevoking) {
        a.state = AttemptState::kAccepted;
        a.accepted_mono_ms = now.mono_ms;
      }
      if (a.worker_boot == 0) a.worker_boot = r.worker_boot;
    } else if (a.state == AttemptState::kSent || a.state == AttemptState::kRevoking) {
      a.state = AttemptState::kRefused;
      uncount(a);
    }
  }
  owner_step(*o, now);
}

void Scheduler::on_revoke_reply(const std::string& from, const RevokeReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o == nullptr || o->phase != Phase::kOwned) return;
  for (auto& a : o->attempts) {
    if (a.info.fire_id != r.fire_id || a.info.worker != from) continue;
    // A revoked answer binds whatever this owner believed meanwhile: the acceptance record
    // may have marked the attempt accepted before the worker revoked it (prepared, never
    // started).  Any other answer matters only to an attempt being revoked.
    const bool revoked_after_accept = r.outcome == RevokeOutcome::kRevoked && a.state == AttemptState::kAccepted;
    if (revoked_after_accept) mark(Mark::kAttemptRevokedAfterAccept);
    if (a.state != AttemptState::kRevoking && !revoked_after_accept) continue;
    switch (r.outcome) {
      case RevokeOutcome::kRevoked:
        a.state = AttemptState::kRevoked;
        uncount(a);
        break;
      case RevokeOutcome::kAccepted:
        a.state = AttemptState::kAccepted;
        a.accepted_mono_ms = now.mono_ms;
        if (a.worker_boot == 0) a.worker_boot = r.worker_boot;
        break;
      case RevokeOutcome::kCompleted:
        a.state = AttemptState::kFinished;
        uncount(a);
        break;
      case RevokeOutcome::kUnknown:
        finish(*o, Phase::kLost, "worker lost its disk since the dispatch", now);
        return;
    }
  }
  owner_step(*o, now);
}

void Scheduler::finish(Occ& o, Phase phase, const std::string& reason, Clock now) {
  assert(terminal(phase));
  if (terminal(o.phase)) return;
  const bool decided_here = phase != Phase::kDone;
  for (auto& a : o.attempts) uncount(a);
  const bool had_owner_record = o.owner_records.count(self_.node) > 0 &&
                                o.owner_records[self_.node].outcome != OwnerOutcome::kOpen;
  o.phase = phase;
  o.terminal_since_mono_ms = now.mono_ms;
  set_timer(o, kNever);
  if (!decided_here) return;
  OwnerOutcome outcome = OwnerOutcome::kMissed;
  FireEvent::Kind kind = FireEvent::Kind::kMissed;
  switch (phase) {
    case Phase::kMissed: ++counters_.missed; break;
    case Phase::kLost: ++counters_.lost; outcome = OwnerOutcome::kLost; kind = FireEvent::Kind::kLost; break;
    case Phase::kSkipped: ++counters_.skipped; outcome = OwnerOutcome::kSkipped; kind = FireEvent::Kind::kSkipped; break;
    default: break;
  }
  // Make the decision visible on every replica (history), once.
  if (!had_owner_record) write_owner_record(o, outcome, reason, now);
  emit(kind, o, now, {}, 0, reason);
}

}  // namespace caesium::schedule
