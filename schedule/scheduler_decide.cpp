// Scheduler: deciding an idle occurrence (Tracking or Withheld).  The master of a volume
// decides each due occurrence — or a backup does, when the master shows no progress on
// it (docs/firing.md, Backup deciders).  In this order:
//   1. someone else's owner record: adopt its outcome, defer to a live owner, or take
//      over from a vanished or stalled one;
//   2. someone else holds a grant for o: defer to it for claim_give_up, then claim again
//      (or take over, if it is gone);
//   3. otherwise decide afresh: missed past the window, skipped by the policy, claimed
//      with a reachable quorum, fired degraded (at-least-once) or withheld (at-most-once).
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

void Scheduler::decide(Occ& o, Clock now) {
  assert(o.idle());
  if (!deciding(o, now)) return;
  if (!o.entry) {
    // (Re)loaded: the occurrence was enumerated from a definition that may have changed.
    if (!load_definition(o)) {
      unscheduled(o, now);  // deleted: finished; not replicated here yet: nothing to decide
      return;
    }
    if (unscheduled(o, now)) return;
  }
  const std::shared_ptr<const Entry> entry = o.entry;  // held: transitions below may reload it
  const Entry& e = *entry;
  if (decide_from_owner_records(o, e, now)) return;
  if (decide_from_holder(o, e, now)) return;
  decide_fresh(o, e, now);
}

bool Scheduler::deciding(Occ& o, Clock now) {
  if (!active_ || !o.due) return false;
  if (masters_.count(o.volume) > 0 || o.backup) return true;
  auto rank = backup_ranks_.find(o.volume);
  if (rank == backup_ranks_.end() || progress_seen(o) || !host_.hears_peers()) {
    clear_deadline(o, Deadline::kBackup);
    return false;
  }
  // The master decides at F on its clock and writes its owner record before it dispatches;
  // every replica has that record within a round trip (a burst holds pushes back for at
  // most burst_hold).  Nothing by rank x backup_step after F: the master is not getting
  // anywhere (it may be master in every view and yet unable to win a claim).  After F
  // only if this process was active by then: a cluster that restarts whole started its
  // master with us, and every backup deciding at once, F long past, took at-least-once
  // work over three times (tests/sim/prepared_graceful_leave.toml).
  const int64_t from = std::max(utc_to_mono(o.fire_utc_ms), active_since_mono_ms_);
  const int64_t at = from + static_cast<int64_t>(rank->second) * options_.backup_step_ms;
  if (now.mono_ms < at) {
    set_deadline(o, Deadline::kBackup, at);
    return false;
  }
  mark(Mark::kBackupDecides);
  o.backup = true;
  clear_deadline(o, Deadline::kBackup);
  return true;
}

// What shows that some process is at work on o: a worker record (an attempt reached a
// worker) or a closed owner record (someone decided o).  A grant alone does not: its
// holder may be exactly the master that cannot win.  Nor does an open owner record alone:
// its owner may be that master too, having won a claim and then lost every dispatch and
// revoke to a worker it cannot reach: a connected majority deferred to it until the
// misfire window closed (tests/sim/regress_controls_seed_3080.toml).  A backup
// that decides then defers to a live owner for owner_stall_ms before it takes o over
// through a higher round, which resolves what the owner dispatched (decide_from_owner_records).
bool Scheduler::progress_seen(const Occ& o) const {
  // A worker record of an attempt that never runs (refused, or revoked: a held run its
  // owner's go never reached) shows nothing at work.
  if (o.worker_ran()) return true;
  return std::any_of(o.owner_records.begin(), o.owner_records.end(), [&](const auto& r) {
    return r.second.outcome != OwnerOutcome::kOpen && !lost_unrun(o, r.second);
  });
}

// An at-most-once owner record closed "lost" — its owner could not tell whether its
// attempt ran — while this node holds the worker's record of every attempt it names,
// each saying it never ran (refused, or revoked: a held run dropped for want of a go).
// The owner guessed from its side of a cut (its worker out of its view); the records
// settle it: o did not run, and a takeover round runs it (tests/sim/regress_plain_seed_6074.toml: the owner, cut
// off with no replica, reported o lost while the worker, on the majority's side, had
// dropped the run; the majority adopted "lost" and never ran it).  The round resolves
// the attempts as any takeover does, so a record that reaches us later changes nothing.
bool Scheduler::lost_unrun(const Occ& o, const OwnerRecord& r) const {
  if (!o.at_most_once || r.outcome != OwnerOutcome::kLost) return false;
  return std::all_of(r.attempts.begin(), r.attempts.end(), [&](const AttemptInfo& a) {
    auto w = o.worker_records.find(a.fire_id);
    return w != o.worker_records.end() && !ran(w->second.state);
  });
}

void Scheduler::defer(Occ& o, Clock now, const std::string& why) {
  if (o.deferred_reason == why) return;
  o.deferred_reason = why;
  emit(FireEvent::Kind::kDeferred, o, now, {}, 0, why);
}

// Someone else's decision, as recorded in the volume store.
bool Scheduler::decide_from_owner_records(Occ& o, const Entry& e, Clock now) {
  for (const auto& [node, r] : o.owner_records) {
    if (r.owner == self_) continue;
    if (lost_unrun(o, r)) {
      mark(Mark::kLostRecordUnrunTakeover);
      take_over_or_wait(o, e, now);
      return true;
    }
    if (r.outcome != OwnerOutcome::kOpen) {
      to_finished_by_record(o, r.outcome, now);
      return true;
    }
    if (owner_gone(r.owner)) continue;
    // Its owner is at work — or was, and a higher round superseded it: a superseded
    // owner's record stays open while it lives, and two owners superseded in turn could
    // defer to each other's record for ever.  So at-most-once deferral is bounded: after
    // an accept timeout plus claim_give_up with no live worker holding an accepted
    // attempt, the master takes o over through a higher round — safe against an owner
    // that is in fact at work, since the round resolves its attempts first.
    if (o.at_most_once && owner_stalled(o, e, now)) {
      mark(Mark::kOwnerStalledTakeover);
      take_over_or_wait(o, e, now);
      return true;
    }
    defer(o, now, "owner " + r.owner.node + " is at work");
    // A suspect owner that stays silent counts as gone later: look again then.
    set_deadline(o, Deadline::kOwnerSilence, owner_gone_at(r.owner, now));
    if (o.at_most_once) set_deadline(o, Deadline::kOwnerStall, o.owner_deferred_since_mono_ms + owner_stall_ms(e));
    return true;
  }
  // An owner vanished before the occurrence ran.
  for (const auto& [node, r] : o.owner_records) {
    if (r.owner == self_ || r.outcome != OwnerOutcome::kOpen || !owner_gone(r.owner)) continue;
    if (!o.at_most_once) {
      to_owned_from_idle(o, e, FirePath::kTakeover, now);
      return true;
    }
    // At-most-once: an accepted attempt on a live worker still completes.  Otherwise a
    // new master takes over through a higher round, which first resolves whatever the
    // vanished owner may have dispatched (scheduler_rounds.cpp).  The worker is judged as
    // the owner is (suspect and silent for owner_silence is gone): the owner's own held
    // runs — preparing ahead, a master is the worker of many — waited for its death to be
    // declared, ~26 s after a crash (tests/sim/fire_burst_master_crash.toml).
    for (const auto& [fid, w] : o.worker_records) {
      if (w.state == WorkerState::kAccepted && !owner_gone(w.worker)) return true;
    }
    take_over_or_wait(o, e, now);
    return true;
  }
  return false;
}

// Granted to a live process: it decides.  "Live" includes a holder this node cannot see
// but a replica that can see it vouched for (a non-transitive partition).  But a holder
// may hold only part of a split vote and have released it, as we did: if no owner record
// from it appears within the give-up time, claim again — claims are exclusive, so if it
// does own o the replicas simply say so again.
bool Scheduler::decide_from_holder(Occ& o, const Entry& e, Clock now) {
  if (!o.holder || *o.holder == self_) return false;
  if (owner_gone(*o.holder) && !o.holder_vouched) {
    if (!o.at_most_once) to_owned_from_idle(o, e, FirePath::kTakeover, now);
    else take_over_or_wait(o, e, now);
    return true;
  }
  if (o.holder_deferred_since_mono_ms == 0) o.holder_deferred_since_mono_ms = now.mono_ms;
  const int64_t recheck = o.holder_deferred_since_mono_ms + options_.claim_give_up_ms;
  if (now.mono_ms < recheck) {
    defer(o, now, "granted to " + o.holder->node);
    set_deadline(o, Deadline::kHolderRecheck, recheck);
    return true;
  }
  o.holder_deferred_since_mono_ms = 0;
  o.holder.reset();
  o.holder_vouched = false;
  clear_deadline(o, Deadline::kHolderRecheck);
  if (o.at_most_once) {
    // At-most-once: the holder showed no progress for claim_give_up (an owner record of
    // it would have been deferred to above), so o goes to a higher round, as a claim held
    // up by it does (claim_step).  A round-0 claim instead meets the same holds, ends as a
    // split vote long before it is old enough to escalate, and defers to the holder again
    // — for ever, when the holder is a gray process that cannot win either, until the
    // misfire policy skips o.
    mark(Mark::kClaimHolderStalledTakeover);
    take_over_or_wait(o, e, now);
    return true;
  }
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    to_finished(o, Outcome::kMissed, "not fired within its misfire window", now);
  } else if (quorum_reachable(o.volume, e)) {
    to_claiming(o, e, now);
  } else {
    set_deadline(o, Deadline::kQuorumRetry, now.mono_ms + options_.claim_retry_ms);
  }
  return true;
}

void Scheduler::decide_fresh(Occ& o, const Entry& e, Clock now) {
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    to_finished(o, Outcome::kMissed, "not fired within its misfire window", now);
    return;
  }
  if (!misfire_policy_allows(o, e, now)) {
    to_finished(o, Outcome::kSkipped, "late beyond the misfire threshold; policy skips it", now);
    return;
  }
  if (eligible(o.volume, e)->empty()) {
    to_finished(o, Outcome::kMissed, "no replica of the volume matches the entry's binding", now);
    return;
  }
  if (overlap_stops(o, e, now)) return;
  if (quorum_reachable(o.volume, e)) {
    if (!claim_admitted(o)) return;
    to_claiming(o, e, now);
  } else if (!o.at_most_once) {
    to_owned_from_idle(o, e, FirePath::kDegraded, now);
  } else {
    if (o.is<firing::Tracking>()) to_withheld_from_tracking(o, now);
    // Until quorum returns (a peer change) or the window closes.
    set_deadline(o, Deadline::kWindow, utc_to_mono(due_utc_ms(o) + e.misfire_window_ms) + 1);
  }
}

// Past the cluster's capacity, claims sent faster than the replicas answer queue in the
// streams; answered after the claim lease, they do not count and are asked again, and the
// burst's own retries multiply its traffic.  So at most max_claims_in_flight round-0
// claims are open at once and the rest wait here, in the order decided: the claims then
// move at the pace the answers come back (docs/firing.md, Flow control).  Waiting changes
// no vote: a waiting occurrence is decided again when let through, from the start.
bool Scheduler::claim_admitted(Occ& o) {
  if (o.claim_let_through) {
    o.claim_let_through = false;
    return true;
  }
  const auto bound = static_cast<size_t>(options_.max_claims_in_flight);
  if (bound == 0) return true;
  ClaimFlow& flow = claim_flow_[o.volume];
  if (flow.in_flight < bound && flow.waiters.empty()) return true;
  if (!o.waits_for_claim) {
    mark(Mark::kClaimWaitsForSlot);
    o.waits_for_claim = true;
    flow.waiters.push_back(o.serial);
    claims_waiting_ = true;
  }
  return false;
}

void Scheduler::admit_claims() {
  const auto bound = static_cast<size_t>(options_.max_claims_in_flight);
  claims_waiting_ = false;
  for (auto& [volume, flow] : claim_flow_) {
    size_t let_through = 0;
    while (!flow.waiters.empty() && (bound == 0 || flow.in_flight + let_through < bound)) {
      const uint64_t serial = flow.waiters.front();
      flow.waiters.pop_front();
      auto it = occ_by_serial_.find(serial);
      if (it == occ_by_serial_.end() || !it->second->waits_for_claim) continue;  // forgotten, or gone on
      Occ& o = *it->second;
      o.waits_for_claim = false;
      if (!o.idle()) continue;  // decided otherwise meanwhile (another's record, say)
      o.claim_let_through = true;
      ++let_through;
      touch(o);
    }
    claims_waiting_ = claims_waiting_ || !flow.waiters.empty();
  }
}

void Scheduler::take_over_or_wait(Occ& o, const Entry& e, Clock now) {
  assert(o.idle());
  assert(o.at_most_once);
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    const bool maybe_ran = !o.owner_records.empty() || o.holder.has_value();
    to_finished(o, maybe_ran ? Outcome::kLost : Outcome::kMissed,
                "its owner vanished or stalled and no new master could take it over within the misfire window", now);
    return;
  }
  // A round that met a rival's waits out its backoff (spread by node and round) whatever
  // wakes o meanwhile: an event both rivals see at once — the owner's liveness flapping in
  // every view — would start them again in step, each refusing the other, round after
  // round (tests/sim/regress_plain_seed_8277.toml).
  if (o.deadlines[Deadline::kBackoff] != kNever && o.deadlines[Deadline::kBackoff] > now.mono_ms) {
    mark(Mark::kTakeoverWaitsBackoff);
    return;
  }
  if (quorum_reachable(o.volume, e)) {
    to_preparing(o, e, now);
    return;
  }
  set_deadline(o, Deadline::kQuorumRetry,
               std::min(now.mono_ms + options_.revoke_retry_ms, utc_to_mono(due_utc_ms(o) + e.misfire_window_ms) + 1));
}

int64_t Scheduler::owner_stall_ms(const Entry& e) const { return e.accept_timeout_ms + options_.claim_give_up_ms; }

// Deferring to another process's open owner record for longer than owner_stall_ms, with
// no live worker holding an accepted attempt of o (that one still completes).  Starts
// the deferral clock on the first call; a takeover round stops it (to_preparing).
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

bool Scheduler::misfire_policy_allows(const Occ& o, const Entry& e, Clock now) const {
  if (now.utc_ms - o.fire_utc_ms <= options_.misfire_threshold_ms) return true;
  if (due_utc_ms(o) != o.fire_utc_ms) return true;  // a retry: the occurrence started on time
  switch (e.misfire) {
    case MisfirePolicy::fire_all: return true;
    case MisfirePolicy::skip: return false;
    case MisfirePolicy::fire_once: {
      // Only the most recent due occurrence of the entry runs: the one whose next
      // occurrence's instant has not come.  Preparing ahead, the index makes occurrences
      // due up to prepare_ahead before their instant, so a later one being tracked does
      // not make o superseded (tests/sim/prepared_resume_fire_once.toml: on resume, the
      // latest occurrence due while paused was skipped for the prepared ones after it).
      const EntryRec* rec = entry_of(o.volume, o.id.entry_key);
      if (rec == nullptr || rec->cursor_utc_ms <= o.id.scheduled_utc_ms) return true;
      const std::optional<int64_t> next = next_occurrence(e, o.id.scheduled_utc_ms);
      return !next || fire_time(e, *next) > now.utc_ms;
    }
  }
  return true;
}

// Where a run is decided (an ownership begins, a new attempt is about to go out), the
// misfire window and policy judge o against its due time: an occurrence decided late
// runs only if the policy lets it, however long ago its claim started.
// A new attempt of an occurrence owned in time continues that decision: only the window,
// and a policy that forbids late runs outright (skip), stop it.  Under fire_once a run
// whose first worker could not be reached for a while still runs (a later occurrence
// already due does not make it a misfire: it was decided in time).  Not so an occurrence
// prepared ahead whose attempts all never ran: deciding it before its instant says nothing
// of its instant (the cluster may have stopped in between), so a new attempt is judged as
// a fresh decision — under fire_once only the latest of an outage runs
// (tests/sim/prepared_full_leave.toml).
bool Scheduler::late_attempt_stops(Occ& o, const Entry& e, Clock now) {
  // A retry is judged against its own due time, and the policy does not skip it: the
  // occurrence started on time (docs/firing.md, Retries).
  const int64_t due = due_utc_ms(o);
  const bool retry = due != o.fire_utc_ms;
  const bool past_window = now.utc_ms - due > e.misfire_window_ms;
  const bool skip_late = !retry && now.utc_ms - o.fire_utc_ms > options_.misfire_threshold_ms &&
                         (e.misfire == MisfirePolicy::skip || (prepared_unrun(o) && !misfire_policy_allows(o, e, now)));
  if (!past_window && !skip_late) return false;
  mark(Mark::kMisfireAtDecision);
  to_finished(o, past_window ? Outcome::kMissed : Outcome::kSkipped,
              past_window ? "no attempt ran within the misfire window" : "a new attempt would start late; policy skips it",
              now);
  return true;
}

// o was decided ahead of its instant and nothing of it ran: every attempt this owner holds
// was prepared and never runs, or — a takeover that holds none yet — every attempt its
// previous owners recorded was issued before the instant, and no worker record says one ran.
bool Scheduler::prepared_unrun(const Occ& o) const {
  const auto& attempts = o.as<firing::Owned>().attempts;
  if (!attempts.empty()) {
    return std::all_of(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.prepared && never_runs(a.state); });
  }
  if (o.worker_ran()) return false;
  bool any = false;
  for (const auto& [node, r] : o.owner_records) {
    for (const AttemptInfo& info : r.attempts) {
      if (info.issued_utc_ms >= o.fire_utc_ms) return false;
      any = true;
    }
  }
  return any;
}

bool Scheduler::misfire_stops(Occ& o, const Entry& e, Clock now) {
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    mark(Mark::kMisfireAtDecision);
    to_finished(o, Outcome::kMissed, "decided after its misfire window", now);
    return true;
  }
  if (!misfire_policy_allows(o, e, now)) {
    mark(Mark::kMisfireAtDecision);
    to_finished(o, Outcome::kSkipped, "decided late beyond the misfire threshold; policy skips it", now);
    return true;
  }
  return false;
}

}  // namespace caesium::schedule
