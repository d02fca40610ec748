// Scheduler: the transitions between an occurrence's phases (firing_state.h).  These are
// the only functions that write Occ::phase (tests/style/check_firing_phases.sh checks
// it); each asserts the phase it leaves, clears the deadlines that meant something only
// there, and marks the occurrence so that the new phase is stepped (Scheduler::drain).
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

const char* firing::to_string(Outcome o) {
  switch (o) {
    case Outcome::kDone: return "done";
    case Outcome::kMissed: return "missed";
    case Outcome::kLost: return "lost";
    case Outcome::kSkipped: return "skipped";
    case Outcome::kSkippedOverlap: return "skipped_overlap";
  }
  return "?";
}

const char* firing::phase_name(const Phase& p) {
  static constexpr const char* kNames[] = {"tracking", "withheld", "claiming", "preparing", "owned", "finished"};
  return kNames[p.index()];
}

// Tracking or Withheld -> Claiming: round 0, "grant o to me and accept attempt A1 -> W".
void Scheduler::to_claiming(Occ& o, const Entry& e, Clock now) {
  assert(o.idle());
  assert(o.entry != nullptr);
  o.deadlines.clear();
  o.holder.reset();
  o.holder_vouched = false;
  ++o.claim_rounds;
  o.my_round = 0;
  firing::Claiming c;
  c.in_flight = firing::InFlight(&claim_flow_[o.volume].in_flight);
  c.ballot.clear(now.mono_ms);
  const uint32_t n = next_attempt_number(o);
  c.attempt = AttemptInfo{n, make_fire_id(o.volume, o.id, self_, n), choose_worker(o, e, {}, now).value_or(""),
                          now.utc_ms};
  o.phase = std::move(c);
  send_claims(o, e, now, true);
}

// Tracking -> Withheld: at-most-once without a quorum in view; emitted once.
void Scheduler::to_withheld_from_tracking(Occ& o, Clock now) {
  assert(o.is<firing::Tracking>());
  assert(o.at_most_once);
  o.phase = firing::Withheld{};
  ++counters_.withheld;
  emit(FireEvent::Kind::kWithheld, o, now, {}, 0, "no quorum of the eligible replicas is reachable");
}

// Tracking, Withheld or Claiming -> Preparing: a takeover round above every round known.
void Scheduler::to_preparing(Occ& o, const Entry& e, Clock now) {
  assert(o.idle() || o.is<firing::Claiming>());
  assert(o.at_most_once);
  assert(o.entry != nullptr);
  mark(Mark::kTakeoverPrepare);
  o.deadlines.clear();
  firing::Preparing p;
  p.owner_deferred_since_mono_ms = o.owner_deferred_since_mono_ms;
  o.owner_deferred_since_mono_ms = 0;  // a takeover began: deferring to an owner record is over
  p.ballot.clear(now.mono_ms);
  p.round = std::max(o.my_round, o.known_round) + 1;
  o.my_round = p.round;
  o.phase = std::move(p);
  send_claims(o, e, now, true);
}

// Owned -> Preparing: the owner of a prepared at-most-once attempt whose worker is gone
// before it answered takes o over itself, in a round above its own (docs/firing.md, "The
// replicas' go"): the attempt starts only with yes from a majority, so with a promise
// majority that never said yes it can never start, and o runs elsewhere at once; else the
// attempt comes back adopted and is asked about as before.  Once per attempt: an adopted
// attempt does not come here again.
void Scheduler::to_preparing_from_owned(Occ& o, const Entry& e, Clock now) {
  mark(Mark::kOwnerReprepares);
  leave_owned(o);
  to_preparing(o, e, now);  // its round is above ours (my_round)
}

// Owned, left unfinished (to Tracking or Preparing): our attempts stop counting, and our
// own vote on an attempt never sent no longer blocks the entry (settle_unsent).
void Scheduler::leave_owned(Occ& o) {
  assert(o.is<firing::Owned>());
  settle_unsent(o);
  for (auto& a : o.as<firing::Owned>().attempts) uncount(a);
  o.deadlines.clear();
  o.phase = firing::Tracking{};
}

void Scheduler::count_owned(FirePath path) {
  switch (path) {
    case FirePath::kQuorum: ++counters_.owned_quorum; break;
    case FirePath::kDegraded: ++counters_.owned_degraded; break;
    case FirePath::kTakeover: ++counters_.owned_takeover; break;
  }
}

// Every way into Owned ends here: the phase, the counters, the event; then the owner step
// (marked) dispatches.  The misfire window and policy judge o here, where the run is
// decided, against its due time: a claim that stayed open through an outage must not run
// what the policy skips for the rest of that outage (one outage, one outcome).
void Scheduler::enter_owned(Occ& o, const Entry& e, firing::Owned owned, Clock now) {
  assert(o.entry != nullptr);
  o.deadlines.clear();
  o.ever_owned = true;
  o.path = owned.path;
  const FirePath path = owned.path;
  const uint64_t round = owned.round;
  o.phase = std::move(owned);
  count_owned(path);
  emit(FireEvent::Kind::kOwned, o, now, self_.node, 0,
       round == 0 ? std::string(to_string(path)) : "takeover (round " + std::to_string(round) + ")");
  // A takeover first resolves what its predecessor dispatched (a new attempt is judged
  // when it goes out: dispatch_attempt); a claim or a degraded fire decides a run now.
  if (path != FirePath::kTakeover && misfire_stops(o, e, now)) return;
  touch(o);
}

// Claiming -> Owned: a majority granted round 0 (kQuorum), or an at-least-once claim gave
// up on a quorum that does not answer (kDegraded, possible duplicate).
void Scheduler::to_owned_from_claiming(Occ& o, const Entry& e, FirePath path, Clock now) {
  assert(o.is<firing::Claiming>());
  firing::Claiming& c = o.as<firing::Claiming>();
  firing::Owned own;
  own.path = path;
  own.possible_duplicate = path != FirePath::kQuorum;
  if (path == FirePath::kQuorum) {
    assert(has_majority(c.ballot.granted, o.volume, e));
    own.claimed = c.attempt;
  } else {
    assert(!o.at_most_once);
    // Targets that never answered our claim would not receive a dispatch either.
    for (const auto& n : claim_targets(o, e)) {
      if (!c.ballot.answered.count(n) && n != self_.node) own.silent.insert(n);
    }
  }
  enter_owned(o, e, std::move(own), now);
}

// Tracking or Withheld -> Owned without a vote: at-least-once only — fired degraded (no
// quorum reachable, or abstentions leave none), or taken over from a vanished owner.
void Scheduler::to_owned_from_idle(Occ& o, const Entry& e, FirePath path, Clock now) {
  assert(o.idle() || o.is<firing::Claiming>());
  assert(!o.at_most_once);
  assert(path != FirePath::kQuorum);
  firing::Owned own;
  own.path = path;
  own.possible_duplicate = true;
  if (path == FirePath::kTakeover && e.complete_time_ms > 0) {
    // An accepted attempt on a live worker gets its complete_time before o is redispatched
    // (seed 003, scheduler replacement).  A prepared attempt starts at F, not at acceptance.
    for (const auto& [fid, w] : o.worker_records) {
      if (w.state == WorkerState::kAccepted && owner_alive(w.worker)) {
        own.takeover_wait_until_utc_ms =
            std::max(own.takeover_wait_until_utc_ms, std::max(w.accepted_utc_ms, o.fire_utc_ms) + e.complete_time_ms);
      }
    }
  }
  enter_owned(o, e, std::move(own), now);
  if (path == FirePath::kTakeover && o.is<firing::Owned>()) adopt_held_for_takeover(o, now);
}

// Preparing -> Owned: a majority promised our round.  Every value they named accepted in
// the best round is adopted, to be resolved before anything new may run.
void Scheduler::to_owned_from_preparing(Occ& o, const Entry& e, Clock now) {
  assert(o.is<firing::Preparing>());
  assert(o.at_most_once);
  const firing::Preparing p = std::move(o.as<firing::Preparing>());
  assert(has_majority(p.ballot.granted, o.volume, e));
  assert(p.round >= 1);
  firing::Owned own;
  own.path = FirePath::kTakeover;
  own.round = p.round;
  enter_owned(o, e, std::move(own), now);
  if (!o.is<firing::Owned>()) return;  // the misfire policy decided it
  adopt_values(o, p, now);
  write_owner_record(o, OwnerOutcome::kOpen, "", now);
}

void Scheduler::to_tracking_from_claiming(Occ& o, Clock now) {
  assert(o.is<firing::Claiming>());
  (void)now;
  settle_unsent(o);
  o.deadlines.clear();
  o.phase = firing::Tracking{};
}

void Scheduler::to_tracking_from_preparing(Occ& o, Clock now) {
  assert(o.is<firing::Preparing>());
  (void)now;
  o.deadlines.clear();
  o.phase = firing::Tracking{};
}

// Owned -> Tracking: a replica promised a higher round to another process, which now
// decides o.  Our attempts stop counting; the record we wrote stays open while we live.
void Scheduler::to_tracking_from_owned(Occ& o, uint64_t round, Clock now) {
  (void)now;
  mark(Mark::kOwnerSuperseded);
  o.known_round = std::max(o.known_round, round);
  leave_owned(o);
  touch(o);
}

void Scheduler::to_finished(Occ& o, Outcome outcome, const std::string& reason, Clock now) {
  assert(!o.finished());
  settle_unsent(o);
  if (auto* own = std::get_if<firing::Owned>(&o.phase)) {
    for (auto& a : own->attempts) uncount(a);
  }
  const bool had_outcome_record = o.owner_records.count(self_.node) > 0 &&
                                  o.owner_records[self_.node].outcome != OwnerOutcome::kOpen;
  OwnerOutcome recorded = OwnerOutcome::kMissed;
  FireEvent::Kind kind = FireEvent::Kind::kMissed;
  switch (outcome) {
    case Outcome::kMissed: ++counters_.missed; break;
    case Outcome::kLost:
      ++counters_.lost;
      recorded = OwnerOutcome::kLost;
      kind = FireEvent::Kind::kLost;
      break;
    case Outcome::kSkipped:
      ++counters_.skipped;
      recorded = OwnerOutcome::kSkipped;
      kind = FireEvent::Kind::kSkipped;
      break;
    case Outcome::kSkippedOverlap:
      ++counters_.skipped_overlap;
      recorded = OwnerOutcome::kSkippedOverlap;
      kind = FireEvent::Kind::kSkippedOverlap;
      break;
    case Outcome::kDone: break;
  }
  // The decision is made visible on every replica (history), once, with the attempts an
  // ownership made (written before the phase, which holds them, is left).
  if (outcome != Outcome::kDone && !had_outcome_record) write_owner_record(o, recorded, reason, now);
  o.deadlines.clear();
  o.phase = firing::Finished{outcome, now.mono_ms};
  sync_timer(o);  // an input may finish o outside a step (a revoke answered "unknown")
  if (outcome == Outcome::kDone) return;  // it ran: the worker's record says so
  emit(kind, o, now, {}, 0, reason);
}

void Scheduler::to_finished_by_record(Occ& o, OwnerOutcome outcome, Clock now) {
  assert(o.idle());
  assert(outcome != OwnerOutcome::kOpen);
  const Outcome mine = outcome == OwnerOutcome::kLost             ? Outcome::kLost
                       : outcome == OwnerOutcome::kSkipped        ? Outcome::kSkipped
                       : outcome == OwnerOutcome::kSkippedOverlap ? Outcome::kSkippedOverlap
                                                                  : Outcome::kMissed;
  o.deadlines.clear();
  o.phase = firing::Finished{mine, now.mono_ms};
  sync_timer(o);
}

}  // namespace caesium::schedule
