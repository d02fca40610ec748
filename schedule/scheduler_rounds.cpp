// Scheduler: rounds above 0, for at-most-once work (docs/firing.md, Rounds).
//
//   prepare  a master taking over o (its owner vanished or stalled, or its claim met an
//            older value) prepares round r above every round it knows.  With a majority of
//            promises, every attempt accepted in the best round they name is adopted and
//            resolved (revoked at its worker, or found running or done) before anything new.
//   accept   a new at-most-once attempt (after a refusal, a revocation or a takeover) is
//            dispatched only once a majority accepted it in the owner's round.  A replica
//            that promised a higher round refuses, and the owner learns it was superseded.
// Why at most one attempt runs: an attempt runs only if dispatched, and is dispatched only
// after a majority accepted it in some round; a later round's prepare majority intersects
// that majority and so learns it (or a later attempt, whose proposer resolved it first);
// and every new attempt follows the resolution of the latest one.  Majorities are of the
// configured eligible set (of both sets during a replica change), never of the live view.
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

void Scheduler::prepare_step(Occ& o, Clock now) {
  firing::Preparing& p = o.as<firing::Preparing>();
  const Entry& e = *o.entry;
  if (p.ran) {
    to_finished(o, Outcome::kDone, "", now);
    return;
  }
  if (has_majority(p.ballot.granted, o.volume, e)) {
    to_owned_from_preparing(o, e, now);
    return;
  }
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    to_finished(o, Outcome::kLost, "its owner vanished and no quorum let a new master take it over in time", now);
    return;
  }
  // Someone prepared a round at least as high, and the refusals — or the refusals and the
  // replicas we cannot reach — leave us no majority.  If it is alive it finishes o; if
  // not, we try a higher round after a backoff.  Waiting for a replica we cannot reach
  // instead would keep two processes that prepared the same round in step (each holding
  // its own promise and refused by the other, the third replica cut off) waiting for that
  // replica until the misfire window closes, a connected majority idle
  // (tests/sim/regress_plain_seed_19078.toml).  A prepare with no refusal waits: nobody
  // competes for the replicas it can reach.
  // Nor for one that looks reachable and stays silent toward us: a gray process whose
  // messages to us are lost (a one-way link) while gossip relays that it is alive.  A
  // refusal that stood for claim_give_up with the silent ones still needed is a duel all
  // the same (tests/sim/regress_plain_seed_8277.toml: the two other replicas of an owner
  // that could no longer send to them each prepared round 1, each refused the other, and
  // waited for the owner's answer until the link healed a minute later).
  // Spread by node and by round: two processes preparing in step fall apart.
  const bool lost = majority_impossible(o, p.ballot, e);
  const bool refused_long =
      !p.ballot.refused.empty() && now.mono_ms - p.ballot.refused_since_mono_ms >= options_.claim_give_up_ms;
  const bool duel = !lost && !p.ballot.refused.empty() && majority_impossible(o, p.ballot, e, /*unreachable_lost=*/true);
  const bool silent_duel = !lost && !duel && refused_long &&
                           majority_impossible(o, p.ballot, e, /*unreachable_lost=*/false, /*silent_lost=*/true);
  if (lost || duel || silent_duel) {
    if (duel) mark(Mark::kPrepareDuelBackedOff);
    if (silent_duel) mark(Mark::kPrepareSilentDuelBackedOff);
    const int64_t backoff = options_.claim_retry_ms * (1 + static_cast<int64_t>(hash64(self_.node, p.round) % 4));
    // Met a rival's round: the owner it took over from stays stalled, as far as we know.
    if (duel || silent_duel) o.owner_deferred_since_mono_ms = p.owner_deferred_since_mono_ms;
    to_tracking_from_preparing(o, now);  // p is gone from here on
    set_deadline(o, Deadline::kBackoff, now.mono_ms + backoff);
    return;
  }
  if (o.fired != 0) send_claims(o, e, now, false);
}

void Scheduler::on_prepare_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  auto* p = std::get_if<firing::Preparing>(&o.phase);
  if (p == nullptr || r.round != p->round) return;
  p->ballot.answered.insert(from);
  switch (r.outcome) {
    case ClaimOutcome::kGranted:
      if (!(r.holder == self_)) return;
      p->ballot.granted.insert(from);
      if (r.went) p->never_went.erase(from);
      else p->never_went.insert(from);
      if (!r.has_accepted) break;
      if (std::none_of(p->values.begin(), p->values.end(),
                       [&](const auto& v) { return v.second.fire_id == r.accepted.fire_id; })) {
        p->values.emplace_back(r.accepted_round, r.accepted);
      }
      if (!p->best_set ||
          std::tie(r.accepted_round, r.accepted.attempt) > std::tie(p->best_round, p->best.attempt)) {
        p->best_set = true;
        p->best_round = r.accepted_round;
        p->best = r.accepted;
      }
      o.max_attempt = std::max(o.max_attempt, r.accepted.attempt);
      break;
    case ClaimOutcome::kHeld:
      o.known_round = std::max(o.known_round, r.promised_round);
      o.holder = r.holder;
      o.holder_vouched = o.holder_vouched || r.holder_alive;
      p->ballot.refuse(from, now.mono_ms);
      break;
    case ClaimOutcome::kNotDue:
      ask_again_later(p->ballot, from, r, now);
      break;
    case ClaimOutcome::kStale:
      ++counters_.stale_claims_sent;
      p->ballot.granted.erase(from);
      p->never_went.erase(from);
      ask_again_later(p->ballot, from, r, now);
      break;
    case ClaimOutcome::kAbstain:
    case ClaimOutcome::kOverlap:     // prepares are not refused so either
    case ClaimOutcome::kSuperseded:  // prepares are not refused so; counted as a refusal all the same
      p->ballot.refuse(from, now.mono_ms);
      break;
    case ClaimOutcome::kRan:  // the replica holds the record that o ran: o is done
      ++counters_.ran_claims_sent;
      p->ran = true;
      host_.behind(o.volume, from);
      break;
  }
  touch(o);
}

// A majority promised our round (to_owned_from_preparing): the adopted value, and every
// other value accepted in the same round.  Round 0 is first-come on each replica, so two
// claimants' values can each hold votes, and the promises of one majority cannot tell
// which (if either) was chosen by another.  Any of them may have been dispatched, so each
// is resolved (revoked, refused, or known to have run) before a new attempt may go out.
//
// So is every attempt another process's owner record names (from the best value's number
// up): an owner record is durable before each dispatch, so it names whatever that owner
// may have sent.  The promises alone do not always: across a replica change the
// promising majority of the new sets need not include anyone who accepted under the old
// ones (after [n1 n2 n3] → [n2 n3] → [n2 n3 n4], n2 and n4 may promise a round knowing
// nothing of an attempt n1 dispatched and n3 ran; tests/sim/regress_reconfig_seed_3726.toml).
void Scheduler::adopt_values(Occ& o, const firing::Preparing& p, Clock now) {
  firing::Owned& own = o.as<firing::Owned>();
  // A majority of our promises never said yes to a go ask of o: no prepared at-most-once
  // attempt of an earlier round can start (scheduler_replica_go.cpp).
  const bool none_went = o.at_most_once && majority_of_each(p.never_went, *quorum_sets(o.volume, *o.entry));
  // ... and only for attempts issued under the sets we promised under (sets_held_since).
  auto adopt = [&](const AttemptInfo& info, bool doubt) {
    Attempt a;
    a.info = info;
    a.adopted = true;
    a.doubt = doubt;
    a.sent_mono_ms = now.mono_ms;
    a.resent_mono_ms = now.mono_ms;
    a.state = AttemptState::kRevoking;
    auto w = o.worker_records.find(a.info.fire_id);
    if (w != o.worker_records.end()) {
      if (finished(w->second.state)) {
        a.state = AttemptState::kFinished;
        a.failed = failed(w->second.state);
      }
      else if (w->second.state == WorkerState::kAccepted) {
        a.state = AttemptState::kAccepted;
        // Held for its instant, perhaps: a vanished worker is asked (step_accepted) before o
        // counts as lost, as for our own prepared attempts.
        a.prepared = w->second.run_at_utc_ms != 0;
      }
      else a.state = AttemptState::kRevoked;  // refused or revoked: durable, never runs
    }
    // Issued before its instant (by its owner's clock), an attempt was prepared: its run_at
    // is the instant, which lets a worker that lost its disk since answer the revoke.
    if (a.info.issued_utc_ms < o.fire_utc_ms) a.prepared = true;
    // Held for yes from a majority that will never give it: it never starts.  (An acceptance
    // record does not say the run started; without that majority it cannot have.)
    const bool unresolved = a.state == AttemptState::kRevoking || (a.state == AttemptState::kAccepted && a.prepared);
    if (none_went && a.prepared && a.info.issued_utc_ms < o.fire_utc_ms && unresolved &&
        sets_held_since(o.volume, a.info.issued_utc_ms)) {
      a.state = AttemptState::kRevoked;
      ++counters_.prepared_fenced_by_promises;
      mark(Mark::kFencedByPromises);
    }
    if (a.state == AttemptState::kRevoking) host_.send(a.info.worker, make_revoke(o, a), false);
    o.max_attempt = std::max(o.max_attempt, info.attempt);
    own.attempts.push_back(std::move(a));
  };
  std::set<std::string> adopted;
  if (p.best_set) adopted.insert(p.best.fire_id);
  for (const auto& [round, info] : p.values) {
    if (round != p.best_round || adopted.count(info.fire_id)) continue;
    mark(Mark::kTakeoverTwoValues);
    adopted.insert(info.fire_id);
    adopt(info, true);
  }
  for (const auto& [node, r] : o.owner_records) {
    if (r.owner == self_) continue;
    for (const AttemptInfo& info : r.attempts) {
      // One numbered below the best promised value was resolved by that value's proposer
      // before it proposed (O2); attempt numbers only grow along o's rounds.
      if (p.best_set && info.attempt < p.best.attempt) continue;
      if (!adopted.insert(info.fire_id).second) continue;
      adopt(info, true);
    }
  }
  if (p.best_set) adopt(p.best, false);
}

void Scheduler::send_accepts(Occ& o, Attempt& a, Clock now) {
  const firing::Owned& own = o.as<firing::Owned>();
  Claim c;
  c.volume = o.volume;
  c.occ = o.id;
  c.claimant = self_;
  c.worker = a.info.worker;
  c.fire_utc_ms = o.fire_utc_ms;
  c.kind = a.check ? ClaimKind::kCheck : ClaimKind::kAccept;
  c.round = own.round;
  c.attempt = a.info;
  c.entry_version = o.entry_version;
  c.lease = a.lease;
  c.forbid_overlap = !a.check && forbids_overlap(*o.entry);
  stamp_config(c);
  for (const auto& n : claim_targets(o, *o.entry)) {
    if (a.accepted_by.count(n)) continue;
    if (n != self_.node && !host_.peer(n).reachable) continue;
    host_.send(n, c, false);
  }
  a.resent_mono_ms = now.mono_ms;
}

void Scheduler::on_accept_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  auto* own = std::get_if<firing::Owned>(&o.phase);
  if (own == nullptr || own->attempts.empty() || r.round != own->round) return;
  Attempt& a = own->attempts.back();
  if (a.state != AttemptState::kProposing) return;
  if (r.outcome == ClaimOutcome::kSuperseded) {
    // The replica holds a newer definition that governs o (an edit or a delete written
    // before o's instant): this attempt, never dispatched, never runs, and o is decided
    // again under that definition once its record is here (superseded_before_attempt).
    ++counters_.superseded_claims_sent;
    mark(Mark::kClaimSuperseded);
    host_.behind(o.volume, from);
    a.state = AttemptState::kRefused;
    uncount(a);
    own->superseded = true;
    touch(o);
    return;
  }
  if (r.outcome == ClaimOutcome::kRan) {
    // A replica holds the record that o ran (and no retry follows): nothing more runs.
    ++counters_.ran_claims_sent;
    host_.behind(o.volume, from);
    to_finished(o, Outcome::kDone, "", now);
    return;
  }
  const bool counts = a.check || r.accepted.fire_id == a.info.fire_id;  // a check names no value
  if (r.outcome == ClaimOutcome::kGranted && r.holder == self_ && counts) {
    if (r.lease == a.lease) a.accepted_by.insert(from);
  } else if (r.outcome == ClaimOutcome::kHeld && r.promised_round > own->round) {
    // A replica promised a higher round to someone else: that process now decides o.
    // (Our own round promised to a rival that prepared the same number is only a
    // refusal: each replica promises a round once, and a majority promised it to us, so
    // the rival cannot win it — stepping down for it left both deferring to each other
    // until the owner-stall timeout, round after round: tests/sim/regress_notify_seed_8585.toml.)
    o.holder = r.holder;
    o.holder_vouched = r.holder_alive;
    to_tracking_from_owned(o, r.promised_round, now);
    return;
  }
  touch(o);
}

}  // namespace caesium::schedule
