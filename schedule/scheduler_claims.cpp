// Scheduler, part 2b: winning the right to run an occurrence.
//
//   round 0   the ordinary claim: "grant o to me and accept my first attempt A1".
//             First-come on every replica; with a majority the claimant owns o and
//             dispatches A1 at once.
//   takeover  at-most-once, owner vanished: prepare round r > any known round.  With a
//             majority of promises, the latest accepted attempt A* they name (ordered
//             by round, then attempt number) is resolved first: revoked at its worker,
//             or found running or done.  Only then is a new attempt proposed.
//   accept    at-most-once, a new attempt in the owner's round (after a refusal, a
//             revocation, or a takeover): dispatched once a majority accepted it.  A
//             replica that promised a higher round refuses, and the owner then knows it
//             was superseded and stops.
// Why at most one attempt runs: an attempt is dispatched only after a majority accepted
// it in some round; a later round's prepare majority intersects that majority and so
// learns it (or a later attempt, whose proposer resolved it first); and every new
// attempt follows the resolution of the latest one.  Majorities are of the configured
// eligible set (of both sets during a replica change), never of the live view.
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

std::set<std::string> Scheduler::claim_targets(const Occ& o, const Entry& e) const {
  std::set<std::string> targets;
  const auto quorum = quorum_sets(o.volume, e);
  for (const auto& set : *quorum) targets.insert(set.begin(), set.end());
  return targets;
}

uint32_t Scheduler::next_attempt_number(const Occ& o) const {
  uint32_t n = 0;
  for (const auto& a : o.attempts) n = std::max(n, a.info.attempt);
  for (const auto& [node, r] : o.owner_records) {
    for (const auto& a : r.attempts) n = std::max(n, a.attempt);
  }
  for (const auto& [fid, w] : o.worker_records) n = std::max(n, w.attempt);
  if (o.best_set) n = std::max(n, o.best.attempt);
  n = std::max(n, o.claim_attempt.attempt);
  return n + 1;
}

// --- round 0 ----------------------------------------------------------------------------------

void Scheduler::start_claim(Occ& o, const Entry& e, Clock now) {
  o.phase = Phase::kClaiming;
  o.granted.clear();
  o.refused.clear();
  o.answered.clear();
  o.not_due_until_mono.clear();
  o.silent.clear();
  o.holder.reset();
  o.holder_vouched = false;
  o.claim_met_older_value = false;
  o.claim_started_mono_ms = now.mono_ms;
  o.refused_since_mono_ms = 0;
  ++o.claim_rounds;
  o.round = 0;
  const uint32_t n = next_attempt_number(o);
  o.claim_attempt = AttemptInfo{n, make_fire_id(o.volume, o.id, self_, n), choose_worker(o, e, {}, now).value_or(""),
                                now.utc_ms};
  o.claim_thrifty = true;
  send_claims(o, e, now, true);
}

// The replicas a thrifty round-0 claim asks: this node (when eligible) and just enough
// peers for a majority, chosen among those heard from directly and not suspect, starting
// at a place given by the occurrence so that the votes spread over the peers.  Empty
// when a thrifty claim is not possible (a replica change in flight, too few such peers):
// then every target is asked.
std::vector<std::string> Scheduler::thrifty_claim_targets(const Occ& o, const Entry& e) const {
  const auto borrowed = quorum_sets(o.volume, e);
  const QuorumSets& sets = *borrowed;
  if (sets.size() != 1 || sets[0].empty()) return {};
  const std::vector<std::string>& set = sets[0];
  const bool self_eligible = std::binary_search(set.begin(), set.end(), self_.node);
  size_t need = set.size() / 2 + 1 - (self_eligible ? 1 : 0);
  std::vector<const std::string*> peers;
  for (const auto& n : set) {
    if (n != self_.node) peers.push_back(&n);
  }
  std::vector<std::string> out;
  if (self_eligible) out.push_back(self_.node);
  // The rotation is over the peers alone: over the whole set, the peer after this node
  // would be picked for two starts of three.
  const size_t start = hash64(o.id.entry_key) ^ static_cast<uint64_t>(o.id.scheduled_utc_ms);
  for (size_t i = 0; i < peers.size() && need > 0; ++i) {
    const std::string& n = *peers[(start + i) % peers.size()];
    const PeerView p = host_.peer(n);
    if (!p.reachable || !p.direct || p.suspect) continue;
    out.push_back(n);
    --need;
  }
  if (need > 0) return {};
  return out;
}

void Scheduler::stamp_config(Claim& c) const {
  c.config_epoch = topology_.epoch;
  auto it = topology_.volumes.find(c.volume);
  c.sets_hash = it == topology_.volumes.end() ? 0 : it->second.sets_hash;
}

void Scheduler::ask_again_later(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  o.answered.erase(from);
  o.not_due_until_mono[from] = now.mono_ms + std::max<int64_t>(1, r.retry_after_ms);
}

void Scheduler::stale_refusal(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  ++counters_.stale_claims_sent;
  o.granted.erase(from);
  ask_again_later(o, from, r, now);
}

void Scheduler::send_claims(Occ& o, const Entry& e, Clock now, bool all) {
  Claim c;
  c.volume = o.volume;
  c.occ = o.id;
  c.claimant = self_;
  c.fire_utc_ms = o.fire_utc_ms;
  stamp_config(c);
  if (o.phase == Phase::kPreparing) {
    c.kind = ClaimKind::kPrepare;
    c.round = o.round;
  } else {
    c.kind = ClaimKind::kClaim;
    c.worker = o.claim_attempt.worker;
    c.attempt = o.claim_attempt;
  }
  int64_t next = now.mono_ms + options_.claim_retry_ms;
  auto ask = [&](const std::string& n) {
    if (o.answered.count(n)) return;
    auto nd = o.not_due_until_mono.find(n);
    if (nd != o.not_due_until_mono.end() && nd->second > now.mono_ms) {
      next = std::min(next, nd->second);
      return;
    }
    if (!all && n != self_.node && !host_.peer(n).reachable) return;
    host_.send(n, c, false);
  };
  std::vector<std::string> thrifty;
  if (o.claim_thrifty && o.phase == Phase::kClaiming) thrifty = thrifty_claim_targets(o, e);
  o.claim_thrifty = !thrifty.empty();
  if (o.claim_thrifty) {
    for (const auto& n : thrifty) ask(n);
  } else {
    for (const auto& n : claim_targets(o, e)) ask(n);
  }
  o.claim_last_sent_mono_ms = now.mono_ms;
  int64_t deadline = next;
  if (!o.at_most_once) {
    int64_t give_up_from = o.claim_started_mono_ms;
    for (const auto& [node, until] : o.not_due_until_mono) give_up_from = std::max(give_up_from, until);
    deadline = std::min(deadline, give_up_from + options_.claim_give_up_ms);
  }
  deadline = std::min(deadline, utc_to_mono(o.fire_utc_ms + e.misfire_window_ms) + 1);
  set_timer(o, std::max(deadline, now.mono_ms + 1));
}

void Scheduler::on_claim_reply(const std::string& from, const ClaimReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o != nullptr && r.kind == ClaimKind::kPrepare) {
    on_prepare_reply(*o, from, r, now);
    return;
  }
  if (o != nullptr && r.kind == ClaimKind::kAccept) {
    on_accept_reply(*o, from, r, now);
    return;
  }
  const bool granted_to_me = (r.outcome == ClaimOutcome::kGranted || r.outcome == ClaimOutcome::kHeld) &&
                             r.holder == self_ && r.promised_round == 0;
  if (o == nullptr || o->phase != Phase::kClaiming) {
    // A late grant for a round this node abandoned may be handed back — but only when
    // this node certainly never owned o.  A grant released after its holder owned (and
    // perhaps ran) o would let a second claimant win a majority: the one way to run an
    // at-most-once occurrence twice.  A forgotten occurrence keeps its grants.
    if (granted_to_me && o != nullptr && !o->ever_owned) {
      mark(Mark::kLateGrantReleased);
      host_.send(from, Release{r.volume, r.occ, self_}, false);
    }
    return;
  }
  o->answered.insert(from);
  switch (r.outcome) {
    case ClaimOutcome::kGranted:
    case ClaimOutcome::kHeld:
      if (granted_to_me) {
        // A replica that promised round 0 to us before answers a new claim of ours with
        // "granted" but keeps the attempt it accepted first (on_claim, keep_first): the
        // grant is not an acceptance of this claim's attempt.
        if (o->at_most_once && r.has_accepted && r.accepted.fire_id != o->claim_attempt.fire_id) {
          o->claim_met_older_value = true;
        }
        o->granted.insert(from);
      } else {
        o->holder = r.holder;
        o->holder_vouched = o->holder_vouched || r.holder_alive;
        o->known_round = std::max(o->known_round, r.promised_round);
        if (o->refused.empty()) o->refused_since_mono_ms = now.mono_ms;
        o->refused.insert(from);
        ++counters_.refused_claims;
      }
      break;
    case ClaimOutcome::kNotDue:
      // The replica's clock is behind ours: ask again when it says o is due.
      ask_again_later(*o, from, r, now);
      break;
    case ClaimOutcome::kStale:
      // Our config is older than the replica's and gave the volume other replica sets:
      // nothing it granted us before counts, and we ask again once the newer config
      // (which the replica advertises in its gossip) has reached us.
      stale_refusal(*o, from, r, now);
      break;
    case ClaimOutcome::kAbstain:
      if (o->refused.empty()) o->refused_since_mono_ms = now.mono_ms;
      o->refused.insert(from);
      break;
  }
  evaluate_claim(*o, *o->entry, now);
}

void Scheduler::evaluate_claim(Occ& o, const Entry& e, Clock now) {
  if (o.claim_met_older_value) {
    // An attempt of ours that some replicas accepted in round 0 may have run, and those
    // replicas' votes do not name this claim's attempt: dispatching it would leave a run
    // that no vote records, so a later takeover could not find it and would run o
    // again (swarm seed 2070: superseded by a minority holder during a partition, the
    // owner claimed again after the heal and its new attempt ran; when it crashed, the
    // takeover resolved only the attempt the votes named and ran o a second time).  A
    // higher round learns every accepted attempt and resolves them first.  Grants are
    // kept: they may be votes for an attempt that ran.
    mark(Mark::kClaimMetOlderValue);
    o.phase = Phase::kTracking;
    take_over_or_wait(o, e, now);
    return;
  }
  if (has_majority(o.granted, o.volume, e)) {
    // A claim can span a change of the volume's replica sets: grants gathered under the
    // joint sets, short of a majority of the previous ones, become a majority of the new
    // sets alone once the final step lands — while a process of the previous sets that
    // had not yet heard of the change owns o with a majority of those (swarm --reconfig
    // seed 1359 with --prepare-ahead 5s: n1, still at the old epoch, claimed and
    // dispatched o; n3's claim under the joint epoch held the new set; after the final
    // step it owned o and ran it again).  The fill rule brings that owner's record to
    // every remaining replica before the final step, so a claimant that holds another
    // process's owner record does not own o: it leaves o to the ordinary decision
    // (defer to a live owner, take over from a gone one).  And a claimant that the
    // change removed from the volume stops: it may not hold that record.
    const bool other_owner = std::any_of(o.owner_records.begin(), o.owner_records.end(),
                                         [&](const auto& r) { return !(r.second.owner == self_); });
    if (other_owner || !is_replica(o.volume)) {
      mark(Mark::kClaimOtherOwnerRecord);
      release_grants(o, &e, now);
      o.phase = Phase::kTracking;
      o.holder.reset();
      reconsider(o, now);
      return;
    }
    become_owner(o, e, FirePath::kQuorum, false, now);
    return;
  }
  if (o.at_most_once && o.holder && !(*o.holder == self_) && owner_gone(*o.holder) &&
      majority_impossible(o, e, /*unreachable_lost=*/true)) {
    mark(Mark::kClaimHolderGoneTakeover);
    // The replicas that hold o for another process, and those we cannot reach, leave
    // this claim short of a majority, and that process is gone (crashed after winning
    // its claim, with the replicas it did not hear from down too).  Waiting for them
    // to answer could outlast the misfire window: take o over through a higher round
    // instead, which resolves whatever the gone holder may have dispatched (swarm seed
    // 5191: the new master's claim waited for the dead holder and o never ran).
    o.phase = Phase::kTracking;
    take_over_or_wait(o, e, now);
    return;
  }
  if (o.holder && !(*o.holder == self_) && !(active_ && masters_.count(o.volume) > 0) &&
      majority_impossible(o, e, /*unreachable_lost=*/true)) {
    // No longer the master, and the replicas that hold o for another process together with
    // those we cannot reach leave this claim short of a majority: hand our grants back so
    // that the master can win them, and leave o to it.  Otherwise two claimants that each
    // hold a vote of three wait for the third for as long as it is cut off (swarm
    // --reconfig seed 74 with --prepare-ahead 5s: n1, master for 30 ms while it falsely
    // suspected n2, claimed o; n2, master again, claimed too; n3 was cut off, and each held
    // one vote until the partition moved 24 s later and took n1, the worker, away: the
    // at-most-once occurrence never ran).
    mark(Mark::kClaimNotMasterHandsBack);
    release_grants(o, &e, now);
    o.phase = Phase::kTracking;
    reconsider(o, now);
    return;
  }
  const int64_t lateness = now.utc_ms - o.fire_utc_ms;
  if (lateness > e.misfire_window_ms) {
    release_grants(o, &e, now);
    finish(o, Phase::kMissed, "no quorum granted the claim within the misfire window", now);
    return;
  }
  if (majority_impossible(o, e)) {
    // We hold half of some quorum set: no other claimant can hold a majority of it, so
    // the holder named by the refusals cannot own o either (a split vote between two
    // masters of a moment, each holding half).  Waiting for it (claim_give_up) would only
    // delay o; claim again after split_vote_backoff_ms instead.
    const bool holder_cannot_win = holds_half(o, e);
    release_grants(o, &e, now);
    o.phase = Phase::kTracking;
    if (o.holder && !(*o.holder == self_) && !holder_cannot_win) {
      reconsider(o, now);  // defer to the holder, or take over if it vanished
      return;
    }
    const bool split_with_holder = o.holder && !(*o.holder == self_);
    o.holder.reset();  // our own grant, just released (or a holder that cannot win)
    if (split_with_holder) {
      mark(Mark::kClaimSplitVote);
      // The other claimant released its half too, or will: both claim again after
      // split_vote_backoff_ms; at-least-once as well, since firing it degraded here
      // would run it on both sides of a vote that is merely split.
      set_timer(o, now.mono_ms + split_vote_backoff_ms(o));
      return;
    }
    // No holder, so abstentions (replicas that lost their disk cannot vote on o) or a
    // split vote.  At-least-once does not wait: it fires in this component, flagged.
    if (!o.at_most_once) {
      become_owner(o, e, FirePath::kDegraded, true, now);
      return;
    }
    // At-most-once tries again after a backoff, spread by node after a repeat, so two
    // claimants do not collide forever.
    set_timer(o, now.mono_ms + split_vote_backoff_ms(o));
    return;
  }
  // Replicas that answered "not due yet" are alive and will vote then: the give-up
  // clock runs from the latest instant one of them named, not from the first claim.
  int64_t give_up_from = o.claim_started_mono_ms;
  for (const auto& [node, until] : o.not_due_until_mono) give_up_from = std::max(give_up_from, until);
  if (!o.at_most_once && now.mono_ms - give_up_from >= options_.claim_give_up_ms) {
    // At-least-once cannot wait for a quorum that does not answer (one-way links, a
    // replica that is "reachable" only in our view): fire in this component — on a
    // worker that answered, since a dispatch to a silent one would be lost the same way.
    mark(Mark::kClaimDegradedGiveUp);
    release_grants(o, &e, now);
    for (const auto& n : claim_targets(o, e)) {
      if (!o.answered.count(n) && n != self_.node) o.silent.insert(n);
    }
    become_owner(o, e, FirePath::kDegraded, true, now);
    return;
  }
  if (o.claim_thrifty && (!o.refused.empty() || !o.not_due_until_mono.empty())) {
    // A replica a thrifty claim asked did not grant: ask the others now rather than
    // after claim_retry_ms.
    o.claim_thrifty = false;
    ++counters_.claims_widened;
    mark(Mark::kClaimWidened);
    send_claims(o, e, now, true);
    return;
  }
  if (now.mono_ms >= o.timer_mono_ms || !o.timer_armed) {
    // A retry asks every reachable replica that has not answered, and after
    // claim_give_up_ms those that refused too: the holder they named may have released
    // its grants since (it resolved a split vote so), and a claim that waits only for
    // replicas it has not heard from can wait for ever on one its messages do not reach
    // (swarm seed 1707 with --prepare-ahead 5s: n2 held two of four grants and asked n1
    // across a one-way link for 100 s, while n4, which had refused, had released its
    // own claim; the at-most-once occurrence never ran).
    if (!o.refused.empty() && now.mono_ms >= o.refused_since_mono_ms + options_.claim_give_up_ms) {
      mark(Mark::kClaimRefusedAskedAgain);
      for (const auto& n : o.refused) o.answered.erase(n);
      o.refused.clear();
      o.refused_since_mono_ms = 0;
    }
    if (o.claim_thrifty) ++counters_.claims_widened;
    o.claim_thrifty = false;
    send_claims(o, e, now, false);
  }
}

// After a split vote.  In o's first claim round, claim_retry_ms: a split is mostly two
// masters of a moment (a brief suspicion), and by then one of them no longer is, so the
// other wins at once (swarm seed 58604).  In later rounds, a backoff spread by node and by
// round, so two claimants that both stay masters (each in its own view) fall apart rather
// than colliding in step; a bucket fixed per node could match the other claimant's
// forever.
int64_t Scheduler::split_vote_backoff_ms(const Occ& o) const {
  if (o.claim_rounds <= 1) return options_.claim_retry_ms;
  const uint64_t spread = hash64(self_.node, o.claim_rounds) % 4;
  return options_.claim_retry_ms * (1 + static_cast<int64_t>(spread));
}

void Scheduler::release_grants(Occ& o, const Entry* e, Clock now) {
  (void)now;
  (void)e;
  // A process that owned o and was superseded (a replica promised a higher round to
  // another) may claim o again and find it held elsewhere or late past its window (swarm
  // seed 145).  The replicas' holds for this process may be the votes for an attempt of
  // ours that ran: releasing them could let a second claimant win a majority and run an
  // at-most-once occurrence twice, so they stay (an assertion here used to call this path
  // unreachable).
  if (o.ever_owned) return;
  for (const auto& n : o.granted) host_.send(n, Release{o.volume, o.id, self_}, false);
  o.granted.clear();
}

// --- takeover rounds (at-most-once) -------------------------------------------------------------

void Scheduler::start_prepare(Occ& o, const Entry& e, Clock now) {
  mark(Mark::kTakeoverPrepare);
  o.phase = Phase::kPreparing;
  o.owner_deferred_since_mono_ms = 0;  // a takeover began: deferring to an owner record is over
  o.granted.clear();
  o.refused.clear();
  o.answered.clear();
  o.not_due_until_mono.clear();
  o.best_set = false;
  o.prepare_values.clear();
  o.round = std::max(o.round, o.known_round) + 1;
  o.claim_started_mono_ms = now.mono_ms;
  send_claims(o, e, now, true);
}

void Scheduler::on_prepare_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  if (o.phase != Phase::kPreparing || r.round != o.round) return;
  o.answered.insert(from);
  switch (r.outcome) {
    case ClaimOutcome::kGranted:
      if (!(r.holder == self_)) return;
      o.granted.insert(from);
      if (r.has_accepted &&
          std::none_of(o.prepare_values.begin(), o.prepare_values.end(),
                       [&](const auto& v) { return v.second.fire_id == r.accepted.fire_id; })) {
        o.prepare_values.emplace_back(r.accepted_round, r.accepted);
      }
      if (r.has_accepted &&
          (!o.best_set || std::tie(r.accepted_round, r.accepted.attempt) > std::tie(o.best_round, o.best.attempt))) {
        o.best_set = true;
        o.best_round = r.accepted_round;
        o.best = r.accepted;
      }
      break;
    case ClaimOutcome::kHeld:
      o.known_round = std::max(o.known_round, r.promised_round);
      o.holder = r.holder;
      o.holder_vouched = o.holder_vouched || r.holder_alive;
      o.refused.insert(from);
      break;
    case ClaimOutcome::kNotDue:
      ask_again_later(o, from, r, now);
      break;
    case ClaimOutcome::kStale:
      stale_refusal(o, from, r, now);
      break;
    case ClaimOutcome::kAbstain:
      o.refused.insert(from);
      break;
  }
  evaluate_prepare(o, *o.entry, now);
}

void Scheduler::evaluate_prepare(Occ& o, const Entry& e, Clock now) {
  if (has_majority(o.granted, o.volume, e)) {
    take_over_at_most_once(o, e, now);
    return;
  }
  if (now.utc_ms - o.fire_utc_ms > e.misfire_window_ms) {
    finish(o, Phase::kLost, "its owner vanished and no quorum let a new master take it over in time", now);
    return;
  }
  if (majority_impossible(o, e)) {
    // Someone prepared a round at least as high.  If it is alive it finishes o; if
    // not, try a higher round after a backoff.
    o.phase = Phase::kTracking;
    const int64_t backoff = options_.claim_retry_ms * (1 + static_cast<int64_t>(hash64(self_.node) % 4));
    set_timer(o, now.mono_ms + backoff);
    return;
  }
  if (now.mono_ms >= o.timer_mono_ms || !o.timer_armed) send_claims(o, e, now, false);
}

// A majority promised our round: resolve the latest accepted attempt they named before
// anything new may run.
void Scheduler::take_over_at_most_once(Occ& o, const Entry& e, Clock now) {
  o.phase = Phase::kOwned;
  o.ever_owned = true;
  o.path = FirePath::kTakeover;
  o.possible_duplicate = false;
  ++counters_.owned_takeover;
  emit(FireEvent::Kind::kOwned, o, now, self_.node, 0, "takeover (round " + std::to_string(o.round) + ")");
  if (o.best_set) {
    // The adopted value, and every other value accepted in the same round: round 0 is
    // first-come on each replica, so two claimants' values can each hold votes, and the
    // promises of one majority cannot tell which (if either) was chosen by another.  Any
    // of them may have been dispatched, so each is resolved (revoked, refused, or known
    // to have run) before a new attempt may go out.
    auto adopt = [&](const AttemptInfo& info, bool doubt) {
      Attempt a;
      a.info = info;
      a.doubt = doubt;
      a.sent_mono_ms = now.mono_ms;
      a.resent_mono_ms = now.mono_ms;
      a.state = AttemptState::kRevoking;
      auto w = o.worker_records.find(a.info.fire_id);
      if (w != o.worker_records.end()) {
        if (finished(w->second.state)) a.state = AttemptState::kFinished;
        else if (w->second.state == WorkerState::kAccepted) a.state = AttemptState::kAccepted;
        else a.state = AttemptState::kRevoked;  // refused or revoked: durable, never runs
      }
      if (a.state == AttemptState::kRevoking) {
        a.revoke_sent_mono_ms = now.mono_ms;
        host_.send(a.info.worker, Revoke{o.volume, o.id, a.info.fire_id, a.info.issued_utc_ms}, false);
      }
      o.attempts.push_back(std::move(a));
    };
    for (const auto& [round, info] : o.prepare_values) {
      if (round == o.best_round && info.fire_id != o.best.fire_id) {
        mark(Mark::kTakeoverTwoValues);
        adopt(info, true);
      }
    }
    adopt(o.best, false);
    write_owner_record(o, OwnerOutcome::kOpen, "", now);
    owner_step(o, now);
    return;
  }
  write_owner_record(o, OwnerOutcome::kOpen, "", now);
  dispatch_attempt(o, e, now, {});
}

// --- accepting new attempts (at-most-once) -------------------------------------------------------

void Scheduler::send_accepts(Occ& o, const Entry& e, Attempt& a, Clock now) {
  Claim c;
  c.volume = o.volume;
  c.occ = o.id;
  c.claimant = self_;
  c.worker = a.info.worker;
  c.fire_utc_ms = o.fire_utc_ms;
  c.kind = ClaimKind::kAccept;
  c.round = o.round;
  c.attempt = a.info;
  stamp_config(c);
  for (const auto& n : claim_targets(o, e)) {
    if (a.accepted_by.count(n)) continue;
    if (n != self_.node && !host_.peer(n).reachable) continue;
    host_.send(n, c, false);
  }
  a.resent_mono_ms = now.mono_ms;
}

void Scheduler::on_accept_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  if (o.phase != Phase::kOwned || o.attempts.empty() || r.round != o.round) return;
  Attempt& a = o.attempts.back();
  if (a.state != AttemptState::kProposing) return;
  if (r.outcome == ClaimOutcome::kGranted && r.holder == self_ && r.accepted.fire_id == a.info.fire_id) {
    a.accepted_by.insert(from);
  } else if (r.outcome == ClaimOutcome::kHeld &&
             (r.promised_round > o.round || !(r.holder == self_))) {
    o.holder = r.holder;
    o.holder_vouched = r.holder_alive;
    superseded(o, r.promised_round, now);
    return;
  }
  owner_step(o, now);
}

// A replica promised a higher round to someone else: that process now decides o.
void Scheduler::superseded(Occ& o, uint64_t round, Clock now) {
  mark(Mark::kOwnerSuperseded);
  o.known_round = std::max(o.known_round, round);
  for (auto& a : o.attempts) uncount(a);
  o.attempts.clear();
  o.phase = Phase::kTracking;
  set_timer(o, kNever);
  reconsider(o, now);
}

}  // namespace caesium::schedule
