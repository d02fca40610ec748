// Scheduler: owning.  The owner of o drives its attempts until one runs (docs/firing.md,
// Running): dispatch, retransmit until answered, accept timeout, revoke (at-most-once),
// complete_time (at-least-once), worker death, the misfire window.  An attempt's life:
//
//   Proposing ──majority accepted──▶ Sent ──accepted──▶ Accepted ──record──▶ Finished
//                                     │ └──refused──▶ Refused ──▶ (a new attempt)
//                                     └─no accept in time─▶ Revoking ──▶ Revoked ──▶ (a new attempt)
//                                        (at-least-once: Abandoned ──▶ a new attempt)
//
// At-most-once: a new attempt follows only attempts that can no longer run (refused or
// revoked); an accepted attempt whose worker vanished is `lost`, never run again.
// Prepared attempts (Sent, Accepted, Revoking) whose worker is gone before any go of
// ours reached their instant are fenced ──▶ Revoked (scheduler_go.cpp).
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {

const char* firing::to_string(AttemptState s) {
  switch (s) {
    case AttemptState::kProposing: return "proposing";
    case AttemptState::kSent: return "sent";
    case AttemptState::kAccepted: return "accepted";
    case AttemptState::kFinished: return "finished";
    case AttemptState::kRefused: return "refused";
    case AttemptState::kRevoking: return "revoking";
    case AttemptState::kRevoked: return "revoked";
    case AttemptState::kAbandoned: return "abandoned";
  }
  return "?";
}

// The attempt this step works on.  Before a new attempt follows a resolved one (revoked
// or refused: never runs; or failed, for a retry), every in-doubt value of a collided
// takeover round is resolved too: the first unresolved one becomes the current attempt.
// A value that failed is resolved as well — but one that may still run is not, nor one
// that succeeded (o is then done): a retry must not go out beside either
// (tests/sim/regress_retries_seed_116.toml).
Scheduler::Attempt& Scheduler::current_attempt(firing::Owned& own) {
  assert(!own.attempts.empty());
  if (may_be_followed(own.attempts.back())) {
    for (size_t i = 0; i + 1 < own.attempts.size(); ++i) {
      const Attempt& a = own.attempts[i];
      if (a.doubt && !may_be_followed(a) && a.state != AttemptState::kAbandoned) {
        std::swap(own.attempts[i], own.attempts.back());
        break;
      }
    }
  }
  return own.attempts.back();
}

void Scheduler::owner_step(Occ& o, Clock now) {
  firing::Owned& own = o.as<firing::Owned>();
  const Entry& e = *o.entry;
  o.deadlines.clear();  // each path below arms what it waits for
  if (replaced_stops(o, now)) return;
  if (own.attempts.empty()) {
    step_no_attempt(o, now);
    return;
  }
  Attempt& a = current_attempt(own);
  // Once accepted, the attempt lives in one process: its reply and the worker record name
  // its boot, so a worker that restarted (even within the suspicion timeout, and even
  // when the record never left it) counts as gone.
  ProcessId worker{a.info.worker, a.worker_boot};
  if (auto w = o.worker_records.find(a.info.fire_id); w != o.worker_records.end()) worker = w->second.worker;
  const bool worker_up = owner_alive(worker);
  const bool window_over = now.utc_ms - due_utc_ms(o) > e.misfire_window_ms;
  if (own.superseded && revoke_superseded(o, a, now)) return;
  // A prepared attempt whose worker is gone before any go of ours reached its instant is
  // fenced: it never starts, and o runs elsewhere (scheduler_go.cpp).
  if (!worker_up) fence(o, a);
  switch (a.state) {
    case AttemptState::kProposing: step_proposing(o, a, window_over, now); return;
    case AttemptState::kSent: step_sent(o, a, worker_up, window_over, now); return;
    case AttemptState::kRevoking: step_revoking(o, a, worker_up, window_over, now); return;
    case AttemptState::kAccepted: step_accepted(o, a, worker_up, window_over, now); return;
    case AttemptState::kRefused:
    case AttemptState::kRevoked:
      if (window_over) {
        to_finished(o, Outcome::kMissed, "no worker accepted within the misfire window", now);
        return;
      }
      dispatch_attempt(o, now, {a.info.worker});
      return;
    case AttemptState::kFinished:
      if (a.failed && retry_step(o, now)) return;
      to_finished(o, Outcome::kDone, "", now);
      return;
    case AttemptState::kAbandoned: dispatch_attempt(o, now, {a.info.worker}); return;
  }
}

void Scheduler::step_no_attempt(Occ& o, Clock now) {
  firing::Owned& own = o.as<firing::Owned>();
  // The wait is for accepted attempts on live workers (to_owned_from_idle).  When every
  // worker record says its attempt never ran (a held run dropped without its owner's go:
  // revoked), nothing is left to wait for.
  if (own.takeover_wait_until_utc_ms > now.utc_ms && (o.worker_records.empty() || o.worker_ran())) {
    // Taken over (at-least-once) with an attempt still running elsewhere: its
    // complete_time first.  The record says we own o meanwhile.
    if (!own.recorded) write_owner_record(o, OwnerOutcome::kOpen, "", now);
    set_deadline(o, Deadline::kTakeoverWait, utc_to_mono(own.takeover_wait_until_utc_ms));
    return;
  }
  own.takeover_wait_until_utc_ms = 0;
  if (now.utc_ms - due_utc_ms(o) > o.entry->misfire_window_ms) {
    to_finished(o, Outcome::kMissed, "no worker accepted within the misfire window", now);
    return;
  }
  dispatch_attempt(o, now, {});
}

void Scheduler::step_proposing(Occ& o, Attempt& a, bool window_over, Clock now) {
  if (has_majority(a.accepted_by, o.volume, *o.entry)) {
    send_dispatch(o, a, now);
    return;
  }
  if (a.check && now.mono_ms >= a.checking_since_mono_ms + options_.claim_give_up_ms) {
    // At-least-once and no majority answers the check (a one-way link, replicas only our
    // view holds alive): the attempt goes out, as degraded work does.
    mark(Mark::kCheckGaveUp);
    send_dispatch(o, a, now);
    return;
  }
  if (window_over) {
    to_finished(o, Outcome::kMissed, "no quorum accepted a new attempt within the misfire window", now);
    return;
  }
  if (now.mono_ms >= a.lease_started_mono_ms + options_.claim_lease_ms) {
    // Acceptances older than the lease may not be dispatched on: ask again (Ballot::renew).
    mark(Mark::kClaimLeaseRenewed);
    a.lease = static_cast<uint64_t>(now.mono_ms) + 1;
    a.lease_started_mono_ms = now.mono_ms;
    a.accepted_by.clear();
    send_accepts(o, a, now);
  } else if (now.mono_ms >= a.resent_mono_ms + options_.claim_retry_ms) {
    send_accepts(o, a, now);
  }
  set_deadline(o, Deadline::kResend, a.resent_mono_ms + options_.claim_retry_ms);
}

void Scheduler::step_sent(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now) {
  const int64_t deadline = a.sent_mono_ms + o.entry->accept_timeout_ms;
  if (!worker_up && !o.at_most_once) {
    abandon_and_redispatch(o, a, window_over, "worker died before accepting", now);
    return;
  }
  // At-most-once and the worker vanished: it may have accepted before dying, so nobody
  // else may run o until it answers a revoke — which a worker that comes back with its
  // disk can do truthfully.  Revoke right away instead of waiting out the accept timeout.
  if (now.mono_ms < deadline && worker_up) {
    // The dispatch or its reply may be lost (a broken connection, a corrupted frame):
    // send it again until the worker answers.  Acceptance is idempotent per fire id, and
    // the accept deadline and issue time travel unchanged.
    if (now.mono_ms >= a.resent_mono_ms + options_.claim_retry_ms) {
      a.resent_mono_ms = now.mono_ms;
      host_.send(a.info.worker, make_dispatch(o, a), true);
    }
    set_deadline(o, Deadline::kResend, a.resent_mono_ms + options_.claim_retry_ms);
    set_deadline(o, Deadline::kAccept, deadline);
    return;
  }
  if (!o.at_most_once) {
    abandon_and_redispatch(o, a, window_over, "no accept within accept_timeout", now);
    return;
  }
  // At-most-once: the worker must promise it never will before anyone else may run it.
  mark(Mark::kAttemptRevoked);
  send_revoke(o, a, now);
}

void Scheduler::send_revoke(Occ& o, Attempt& a, Clock now) {
  a.state = AttemptState::kRevoking;
  a.resent_mono_ms = now.mono_ms;
  host_.send(a.info.worker, make_revoke(o, a), false);
  set_deadline(o, Deadline::kResend, now.mono_ms + options_.revoke_retry_ms);
}

// At-least-once takeover while preparing ahead: the vanished owner's latest attempt may be
// held by a live worker for its instant with nothing here saying so (its acceptance record
// is written lazily).  It is revoked before a new attempt goes out: the worker promises
// never to run it, or answers that it started (o then waits for it, as for any accepted
// attempt) — instead of a second run beside it (docs/firing.md, Changes inside the prepared
// window).
void Scheduler::adopt_held_for_takeover(Occ& o, Clock now) {
  assert(!o.at_most_once);
  if (options_.prepare_ahead_ms == 0 || o.fire_utc_ms + 2 * options_.max_clock_skew_ms <= now.utc_ms) return;
  const AttemptInfo* latest = nullptr;
  for (const auto& [key, rec] : o.owner_records) {
    if (rec.owner == self_) continue;
    for (const AttemptInfo& a : rec.attempts) {
      if (latest == nullptr || a.attempt > latest->attempt) latest = &a;
    }
  }
  if (latest == nullptr || latest->worker.empty() || o.worker_records.count(latest->fire_id) > 0 ||
      !host_.peer(latest->worker).reachable) {
    return;
  }
  firing::Owned& own = o.as<firing::Owned>();
  Attempt a;
  a.info = *latest;
  a.adopted = true;
  a.prepared = true;
  a.revoke_tried = true;
  a.sent_mono_ms = now.mono_ms;
  o.max_attempt = std::max(o.max_attempt, latest->attempt);
  own.attempts.push_back(std::move(a));
  mark(Mark::kTakeoverRevokesHeld);
  send_revoke(o, own.attempts.back(), now);
  assert(own.attempts.back().state == AttemptState::kRevoking);
}

Revoke Scheduler::make_revoke(const Occ& o, const Attempt& a) const {
  Revoke r{o.volume, o.id, a.info.fire_id, a.info.issued_utc_ms};
  if (a.prepared) r.run_at_utc_ms = o.fire_utc_ms;  // make_dispatch's run_at
  r.worker_boot = a.addressed_boot;
  return r;
}

void Scheduler::step_revoking(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now) {
  if (!o.at_most_once && (!worker_up || now.mono_ms >= a.sent_mono_ms + o.entry->accept_timeout_ms)) {
    // At-least-once (a prepared attempt revoked for a change of its entry, or by a
    // takeover): its worker is gone or does not answer, and o may run again elsewhere, as
    // after any worker death or accept timeout.
    abandon_and_redispatch(o, a, window_over, "the worker did not answer the revoke", now);
    return;
  }
  // A prepared attempt issued before its instant starts only with yes from a majority of
  // the replicas (the replicas' go): its worker gone, a round above ours finds out whether
  // that majority can still form, without the worker.
  if (o.at_most_once && a.prepared && !a.adopted && !worker_up && !window_over &&
      a.info.issued_utc_ms < o.fire_utc_ms && sets_held_since(o.volume, a.info.issued_utc_ms) &&
      quorum_reachable(o.volume, *o.entry)) {
    to_preparing_from_owned(o, *o.entry, now);
    return;
  }
  // A prepared attempt whose worker's node has no process left, once our clock read its
  // instant: any process of that node started from now on started past the instant
  // (within the clock bound), so it can only answer accepted or unknown
  // (prepared_never_started), never revoked.  Asking on would wait for ever when the
  // misfire window is unbounded (tests/sim/prepared_owner_worker_crash.toml).
  if (o.at_most_once && a.prepared && now.utc_ms >= o.fire_utc_ms && !host_.peer(a.info.worker).reachable) {
    mark(Mark::kPreparedWorkerGoneAtDue);
    to_finished(o, Outcome::kLost, "the worker's node is gone and the prepared attempt's instant passed", now);
    return;
  }
  // Keep asking until the worker answers (it may restart) or the window closes.
  if (window_over) {
    to_finished(o, Outcome::kLost, "the worker never answered the revoke within the misfire window", now);
    return;
  }
  if (now.mono_ms >= a.resent_mono_ms + options_.revoke_retry_ms) {
    a.resent_mono_ms = now.mono_ms;
    host_.send(a.info.worker, make_revoke(o, a), false);
  }
  set_deadline(o, Deadline::kResend, a.resent_mono_ms + options_.revoke_retry_ms);
}

void Scheduler::step_accepted(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now) {
  const Entry& e = *o.entry;
  if (!worker_up) {
    if (o.at_most_once && a.prepared && !a.revoke_tried) {
      // Prepared: the worker may have stopped before F, and if it comes back (with its
      // disk or not) it can tell that it never started the attempt.  Ask it; a worker
      // that answers nothing within the misfire window leaves o lost, as before.
      a.revoke_tried = true;
      send_revoke(o, a, now);
      return;
    }
    if (o.at_most_once) {
      mark(Mark::kAttemptLostWorkerDied);
      to_finished(o, Outcome::kLost, "worker died while running", now);
    } else {
      abandon_and_redispatch(o, a, window_over, "worker died while running", now);
    }
    return;
  }
  if (e.complete_time_ms > 0 && !o.at_most_once) {
    const int64_t deadline = std::max(a.accepted_mono_ms, utc_to_mono(o.fire_utc_ms)) + e.complete_time_ms;
    if (now.mono_ms >= deadline) {
      abandon_and_redispatch(o, a, window_over, "not completed within complete_time", now);
      return;
    }
    set_deadline(o, Deadline::kComplete, deadline);
  }
  // complete_time = 0: wait indefinitely.
}

void Scheduler::abandon_and_redispatch(Occ& o, Attempt& a, bool window_over, const char* why, Clock now) {
  assert(!o.at_most_once);  // at-most-once attempts are revoked, never abandoned
  a.state = AttemptState::kAbandoned;
  uncount(a);
  o.as<firing::Owned>().possible_duplicate = true;  // the abandoned attempt may still run
  if (window_over) {
    to_finished(o, Outcome::kMissed, why, now);
    return;
  }
  dispatch_attempt(o, now, {a.info.worker});
}

// --- dispatching -------------------------------------------------------------------------------

void Scheduler::dispatch_attempt(Occ& o, Clock now, const std::set<std::string>& exclude_in) {
  // A process that is stopping sends no new attempt: whoever owns o after it does
  // (its leave is announced, so the takeover comes soon).
  if (leaving_) return;
  if (superseded_before_attempt(o, now)) return;
  const Entry& e = *o.entry;
  // A run failed and the entry retries it: the next run waits out its back-off, whatever
  // calls for a new attempt (the retry itself, a revoke or refusal before it ran, a
  // takeover between two runs).
  if (const auto at = next_run_due_utc_ms(o, e); at && now.utc_ms < *at) {
    set_deadline(o, Deadline::kRetry, std::max(utc_to_mono(*at), now.mono_ms + 1));
    return;
  }
  if (late_attempt_stops(o, e, now)) return;
  firing::Owned& own = o.as<firing::Owned>();
  assert(!o.at_most_once || std::all_of(own.attempts.begin(), own.attempts.end(),
                                        [](const Attempt& prev) { return may_be_followed(prev); }));  // O2
  Attempt a;
  const bool first_claimed = own.attempts.empty() && own.path == FirePath::kQuorum && own.round == 0 &&
                             !own.claimed.fire_id.empty() && !own.claimed.worker.empty() &&
                             host_.peer(own.claimed.worker).reachable;
  if (first_claimed) {
    a.info = own.claimed;  // accepted together with the claim: dispatched as is
  } else {
    auto worker = next_worker(o, e, exclude_in, now);
    if (!worker) return;  // the deadline to look again is armed
    const uint32_t n = next_attempt_number(o);
    // (Without retries every attempt is of run 1: no scan of the records on this path.)
    const uint32_t run = e.retry.enabled() ? runs_so_far(o).failed + 1 : 1;
    a.info = AttemptInfo{n, make_fire_id(o.volume, o.id, self_, n), *worker, now.utc_ms, run};
  }
  a.sent_mono_ms = now.mono_ms;
  a.resent_mono_ms = now.mono_ms;
  a.addressed_boot = a.info.worker == self_.node ? self_.boot : host_.peer(a.info.worker).boot;
  a.accept_by_utc_ms = accept_by_utc_ms(o, now);
  a.prepared = options_.prepare_ahead_ms > 0;  // make_dispatch sets run_at then
  // At-most-once: a majority must accept a new attempt in our round first, so a master
  // that took over in a higher round meanwhile stops us (scheduler_rounds.cpp).
  // At-least-once work no fresh vote backs (a takeover, a redispatch) asks a majority
  // whether its definition still stands first, where one is reachable: an acknowledged
  // delete or edit stops it as it stops a claim.
  const bool needs_accept = o.at_most_once && !(first_claimed && own.round == 0);
  const bool needs_check = !o.at_most_once && (own.path == FirePath::kTakeover || !own.attempts.empty()) &&
                           quorum_reachable(o.volume, e);
  a.state = needs_accept || needs_check ? AttemptState::kProposing : AttemptState::kSent;
  a.check = needs_check;
  a.checking_since_mono_ms = now.mono_ms;
  own.attempts.push_back(std::move(a));
  // The owner record is durable before the dispatch leaves, so an owner that restarts
  // with its disk knows what it sent.
  write_owner_record(o, OwnerOutcome::kOpen, "", now);
  Attempt& added = own.attempts.back();
  count(added);
  if (needs_accept || needs_check) {
    added.lease = static_cast<uint64_t>(now.mono_ms) + 1;
    added.lease_started_mono_ms = now.mono_ms;
    send_accepts(o, added, now);
    set_deadline(o, Deadline::kResend, now.mono_ms + options_.claim_retry_ms);
    return;
  }
  send_dispatch(o, added, now);
}

// The worker of o's next attempt: not one that refused or revoked an attempt of it, nor a
// silent one.  When every eligible one has, they are asked again claim_retry after the
// last attempt went out: a refusal may last (a worker stopping, a cap reached), and asking
// again at once went round the workers at message speed (tests/sim/prepared_full_leave.toml).
// None: a deadline to look again is armed.
std::optional<std::string> Scheduler::next_worker(Occ& o, const Entry& e, const std::set<std::string>& exclude_in,
                                                  Clock now) {
  const firing::Owned& own = o.as<firing::Owned>();
  std::set<std::string> exclude = exclude_in;
  exclude.insert(own.silent.begin(), own.silent.end());
  for (const auto& prev : own.attempts) {
    if (never_runs(prev.state) || prev.state == AttemptState::kAbandoned) exclude.insert(prev.info.worker);
  }
  auto worker = choose_worker(o, e, exclude, now);
  if (!worker) {
    const int64_t again = own.attempts.empty() ? now.mono_ms : own.attempts.back().sent_mono_ms + options_.claim_retry_ms;
    if (now.mono_ms < again) {
      set_deadline(o, Deadline::kNoWorker, again);
      return std::nullopt;
    }
    worker = choose_worker(o, e, exclude_in, now);
  }
  // No reachable eligible worker now; look again shortly (or when a peer changes).
  if (!worker) set_deadline(o, Deadline::kNoWorker, now.mono_ms + options_.claim_retry_ms);
  return worker;
}

// A new attempt goes out under the definition that stands here.  Before any run of o
// started, a change of the entry that governs o and reached this node after o was decided
// (an edit written no later than o's instant, a delete, a pause) has o decided again
// under it first, as one that arrives while a prepared attempt is out does
// (supersede_owned).  A worker's or a replica's answer may say first that a newer
// definition governs o (own.superseded with no newer record here: on_accept_reply): o
// waits for a newer record, asked for (SchedulerHost::behind), within the misfire window —
// it is never skipped on the word of an answer, since the newer definition may still
// schedule o (an edit that keeps its instant: each node of a cluster writes the config's
// static entries at its first start, so the nodes hold different versions of them for
// their first moments).  Whatever newer record comes (the one the replica held, or a later
// one that replaced it), o is decided again under it.  Returns whether o needs nothing
// now (skipped, or waiting for the record).
bool Scheduler::superseded_before_attempt(Occ& o, Clock now) {
  firing::Owned& own = o.as<firing::Owned>();
  // One read of the record's version on the usual path (nothing newer here).
  const std::optional<Version> here = host_.entry_version(o.volume, o.id.entry_key);
  const bool newer_here = here && o.entry_version < *here;
  if (!own.superseded) {
    if (!newer_here || o.worker_ran() ||
        !superseded_here(o.volume, o.id.entry_key, o.entry_version, o.fire_utc_ms)) {
      return false;
    }
    own.superseded = true;
  }
  if (!newer_here) {
    set_deadline(o, Deadline::kNoWorker, now.mono_ms + options_.claim_retry_ms);
    return true;
  }
  return redecide_superseded(o, now);
}

void Scheduler::send_dispatch(Occ& o, Attempt& a, Clock now) {
  const firing::Owned& own = o.as<firing::Owned>();
  a.state = AttemptState::kSent;
  a.sent_mono_ms = now.mono_ms;
  a.resent_mono_ms = now.mono_ms;
  a.accept_by_utc_ms = accept_by_utc_ms(o, now);
  host_.send(a.info.worker, make_dispatch(o, a), true);
  if (a.prepared) await_go(o, a);
  if (own.attempts.size() == 1) {
    ++counters_.dispatched;
    emit(FireEvent::Kind::kDispatched, o, now, a.info.worker, a.info.attempt);
  } else {
    ++counters_.redispatched;
    emit(FireEvent::Kind::kRedispatched, o, now, a.info.worker, a.info.attempt);
  }
  set_deadline(o, Deadline::kResend, now.mono_ms + options_.claim_retry_ms);
  set_deadline(o, Deadline::kAccept, now.mono_ms + o.entry->accept_timeout_ms);
}

Dispatch Scheduler::make_dispatch(const Occ& o, const Attempt& a) const {
  const Entry& e = *o.entry;
  Dispatch d;
  d.volume = o.volume;
  d.occ = o.id;
  d.owner = self_;
  d.fire_id = a.info.fire_id;
  d.attempt = a.info.attempt;
  d.at_most_once = o.at_most_once;
  d.possible_duplicate = o.as<firing::Owned>().possible_duplicate;
  d.accept_by_utc_ms = a.accept_by_utc_ms;
  d.handler = e.handler;
  d.payload = e.payload;
  d.timeout_ms = e.timeout_ms;
  d.run = a.info.run;
  d.runs = e.retry.enabled() ? e.retry.attempts : 1;
  d.entry_version = o.entry_version;
  d.worker_boot = a.addressed_boot;
  d.on_failure = e.on_failure;
  if (const auto* timer = std::get_if<Timer>(&e.timing)) {
    d.sequence = timer_sequence(*timer, e.created_utc_ms, o.id.scheduled_utc_ms);
  }
  d.issued_utc_ms = a.info.issued_utc_ms;
  // Prepared ahead: the worker holds it until F (on its clock and a majority's).
  if (options_.prepare_ahead_ms > 0) d.run_at_utc_ms = o.fire_utc_ms;
  return d;
}

// A worker accepts an attempt until its accept timeout — and an entry whose policy skips
// late occurrences only until the misfire threshold after F: a dispatch that reaches its
// worker later would start a run the policy forbids (the owner then decides o again, and
// skips it).
int64_t Scheduler::accept_by_utc_ms(const Occ& o, Clock now) const {
  int64_t by = now.utc_ms + o.entry->accept_timeout_ms;
  // (Not a retry: the policy does not skip one, docs/firing.md Retries.)
  if (o.entry->misfire == MisfirePolicy::skip && due_utc_ms(o) == o.fire_utc_ms) {
    by = std::min(by, o.fire_utc_ms + options_.misfire_threshold_ms);
  }
  return by;
}

uint32_t Scheduler::next_attempt_number(Occ& o) {
  for (const auto& [node, r] : o.owner_records) {
    for (const auto& a : r.attempts) o.max_attempt = std::max(o.max_attempt, a.attempt);
  }
  for (const auto& [fid, w] : o.worker_records) o.max_attempt = std::max(o.max_attempt, w.attempt);
  return ++o.max_attempt;
}

void Scheduler::count(Attempt& a) {
  assert(!a.counted);
  ++outstanding_[a.info.worker];
  a.counted = true;
}

void Scheduler::uncount(Attempt& a) {
  if (!std::exchange(a.counted, false)) return;
  auto it = outstanding_.find(a.info.worker);
  assert(it != outstanding_.end() && it->second > 0);
  if (--it->second == 0) outstanding_.erase(it);
}

// --- answers from workers -------------------------------------------------------------------

void Scheduler::on_dispatch_reply(const std::string& from, const DispatchReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o == nullptr || !o->is<firing::Owned>()) return;
  for (auto& a : o->as<firing::Owned>().attempts) {
    if (a.info.fire_id != r.fire_id || a.info.worker != from) continue;
    const bool open = a.state == AttemptState::kSent || a.state == AttemptState::kRevoking;
    if (r.outcome == DispatchOutcome::kAccepted) {
      if (open) {
        a.state = AttemptState::kAccepted;
        a.accepted_mono_ms = now.mono_ms;
      }
      if (a.worker_boot == 0) a.worker_boot = r.worker_boot;
    } else if (open) {
      a.state = AttemptState::kRefused;
      uncount(a);
      if (r.outcome == DispatchOutcome::kBusy) {
        // At a running cap: the next attempt goes elsewhere, and this worker is left
        // alone for a retry interval (every worker busy: the owner waits, kNoWorker).
        ++counters_.busy_refusals_received;
        mark(Mark::kDispatchBusy);
        busy_until_mono_[from] = now.mono_ms + options_.claim_retry_ms;
      }
    }
  }
  touch(*o);
}

void Scheduler::on_revoke_reply(const std::string& from, const RevokeReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o == nullptr || !o->is<firing::Owned>()) return;
  for (auto& a : o->as<firing::Owned>().attempts) {
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
        if (!o->at_most_once) {
          // At-least-once (a revoke of a takeover or of a change): it may have run before
          // the disk was lost; o runs again, flagged (tests/sim/regress_prepared_takeover_seed_2448.toml).
          a.state = AttemptState::kAbandoned;
          uncount(a);
          o->as<firing::Owned>().possible_duplicate = true;
          break;
        }
        to_finished(*o, Outcome::kLost, "worker lost its disk since the dispatch", now);
        return;
    }
  }
  touch(*o);
}

}  // namespace caesium::schedule
