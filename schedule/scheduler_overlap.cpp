// Scheduler: overlap = forbid (docs/firing.md, "Overlap").  Two rules, one per side:
//
//   replica   An at-most-once forbid claim (kClaim, or kAccept of a new attempt) is refused
//             (kOverlap) while this replica holds an accepted vote of another occurrence
//             of the same entry that it does not know ended.  Two runs of one entry both
//             need a majority of accepts; any two majorities share a replica, and that
//             replica accepted one of them first and so refused the other — unless it
//             knew the first had ended (a worker record), or never ran (a refusal, a
//             revocation, an owner's missed/skipped verdict).
//   decider   An occurrence due while this node knows another run of the entry is running
//             (a worker record accepted before the due time and not finished by it) is
//             skipped: `skipped_overlap`.  For at-least-once entries this is all there is
//             (best effort); for at-most-once ones it turns a refusal into a verdict.  A
//             claim refused for overlap whose blocker this node cannot see as running is
//             asked again (the blocker may have ended with the news still on its way),
//             for up to the misfire threshold after o was due: then `skipped_overlap`.
#include <algorithm>

#include "base/time.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {

namespace {
// A worker record that ends its attempt: it finished, or it never ran (refused, revoked).
bool worker_says_ended(const WorkerRecord& w) {
  return finished(w.state) || w.state == WorkerState::kRefused || w.state == WorkerState::kRevoked;
}
// A worker record of p says its run started and has not ended.
bool run_open(const firing::Occ& p) {
  return std::any_of(p.worker_records.begin(), p.worker_records.end(),
                     [](const auto& w) { return ran(w.second.state) && !finished(w.second.state); });
}
}  // namespace

bool Scheduler::vote_ended(const std::string& volume, const OccurrenceId& occ, const Vote& vote) {
  // Only the verdict of the process that proposed the accepted attempt says that attempt
  // never ran: another process's "missed" or "skipped" is about what it knew (a replica
  // that skipped o itself may be asked to accept another claimant's attempt of o).
  auto owner_says_never_ran = [&vote](const OwnerRecord& r) {
    return r.owner == vote.accepted_by &&
           (r.outcome == OwnerOutcome::kMissed || r.outcome == OwnerOutcome::kSkipped ||
            r.outcome == OwnerOutcome::kSkippedOverlap);
  };
  if (vote.ended) return true;
  if (Occ* o = find_occ(volume, occ)) {
    auto w = o->worker_records.find(vote.accepted.fire_id);
    if (w != o->worker_records.end() && worker_says_ended(w->second)) return true;
    auto r = o->owner_records.find(vote.accepted_by.node);
    if (r != o->owner_records.end() && owner_says_never_ran(r->second)) return true;
    // Its runs are over: every attempt of o that was accepted is resolved or is the one
    // that ran — a new attempt follows only one that can no longer run (O2) — so the
    // accepted one runs no more (tests/sim/regress_controls_seed_1962.toml).
    if (runs_over(*o)) return true;
  }
  // A forgotten occurrence (finished here long ago, or never tracked): its records may
  // still be in the store, under keys the vote names exactly.
  if (auto v = host_.store_get(volume, worker_record_key(occ, vote.accepted.fire_id))) {
    const Result<WorkerRecord> w = decode_worker_record(*v);
    if (w.ok() && worker_says_ended(*w)) return true;
  }
  if (auto v = host_.store_get(volume, owner_record_key(occ, vote.accepted_by.node))) {
    const Result<OwnerRecord> r = decode_owner_record(*v);
    if (r.ok() && owner_says_never_ran(*r)) return true;
  }
  return false;
}

std::optional<int64_t> Scheduler::overlap_vote(const Claim& c) {
  const std::optional<OccKey> key = known_occ_key(c.volume, c.occ);
  if (!key) return std::nullopt;  // nothing of the entry is known here: no vote of it either
  for (auto it = vote_keys_by_entry_.lower_bound(OccKey{key->entry, INT64_MIN});
       it != vote_keys_by_entry_.end() && it->entry == key->entry; ++it) {
    const OccKey& k = *it;
    const Vote& vote = votes_.at(k);
    if (k.scheduled_utc_ms == c.occ.scheduled_utc_ms || !vote.has_accepted) continue;
    const OccurrenceId other{c.occ.entry_key, k.scheduled_utc_ms};
    if (!vote_ended(c.volume, other, vote)) return k.scheduled_utc_ms;
  }
  return std::nullopt;
}

void Scheduler::settle_vote(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id) {
  const std::optional<OccKey> key = known_occ_key(volume, occ);
  if (!key) return;
  auto it = votes_.find(*key);
  if (it == votes_.end()) return;
  Vote& v = it->second;
  if (!v.has_accepted || v.ended || v.accepted.fire_id != fire_id) return;
  mark(Mark::kVoteSettled);
  v.ended = true;
  host_.local_put(grant_key(volume, occ), encode(v));
}

// Only this process dispatches an attempt it proposed, and only from the phase it leaves
// here (Claiming -> Owned dispatches the claim's attempt; Owned dispatches what a majority
// accepted): after that, a higher round resolves it and never sends it.  So our own vote
// on an attempt that stayed unsent names a run that will never be — and must not block
// the entry's next occurrences under overlap = forbid for the vote's lifetime.
void Scheduler::settle_unsent(Occ& o) {
  if (!o.at_most_once) return;
  if (const auto* c = std::get_if<firing::Claiming>(&o.phase)) {
    settle_vote(o.volume, o.id, c->attempt.fire_id);
  } else if (const auto* own = std::get_if<firing::Owned>(&o.phase)) {
    for (const Attempt& a : own->attempts) {
      if (a.state == AttemptState::kProposing && !a.check) settle_vote(o.volume, o.id, a.info.fire_id);
    }
  }
}

void Scheduler::settle_forgotten(Occ& o) {
  const std::optional<OccKey> key = known_occ_key(o.volume, o.id);
  if (!key) return;
  auto it = votes_.find(*key);
  if (it == votes_.end() || !it->second.has_accepted || it->second.ended) return;
  // Settled only where the stored records would not tell (the common case: the accepted
  // attempt's own record says it ended, and costs no write).  Whatever the entry's
  // policy now: an edit may make it forbid later, while the vote lives.
  auto w = o.worker_records.find(it->second.accepted.fire_id);
  if (w != o.worker_records.end() && worker_says_ended(w->second)) return;
  if (runs_over(o)) settle_vote(o.volume, o.id, it->second.accepted.fire_id);
}

bool Scheduler::overlap_stops(Occ& o, const Entry& e, Clock now) {
  if (replaced_stops(o, now)) return true;
  if (e.overlap == OverlapPolicy::allow) return false;
  if (now.utc_ms < o.fire_utc_ms) return overlap_waits(o, now);
  if (e.overlap == OverlapPolicy::replace) ask_replace(o, now);
  if (e.overlap != OverlapPolicy::forbid) return false;
  const std::optional<OccKey> key = known_occ_key(o.volume, o.id);
  if (!key) return false;
  // Earlier occurrences of the entry, as this node tracks them.  A run counts when its
  // worker accepted it by o's fire time and had not finished by then (by the worker's
  // clock): o was due while it ran.  One that started after o was due does not make o an
  // overlap; o then waits for it (the votes refuse) instead of being skipped.
  for (auto it = occs_.lower_bound(OccKey{key->entry, INT64_MIN}); it != occs_.end() && it->first.entry == key->entry;
       ++it) {
    if (it->first.scheduled_utc_ms >= o.id.scheduled_utc_ms) break;
    for (const auto& [fire_id, w] : it->second.worker_records) {
      if (!ran(w.state) || w.accepted_utc_ms > o.fire_utc_ms) continue;
      if (finished(w.state) && w.finished_utc_ms < o.fire_utc_ms) continue;
      mark(Mark::kOverlapSkipped);
      if (o.is<firing::Claiming>()) release_grants(o);
      to_finished(o, Outcome::kSkippedOverlap,
                  "due while the run of " + format_rfc3339_utc(it->first.scheduled_utc_ms) + " (" + fire_id +
                      ") was running",
                  now);
      return true;
    }
  }
  return false;
}

// Preparing ahead (docs/firing.md, Overlap, "At the instant"): o is decided prepare_ahead
// before F, but forbid and replace are about what runs at F.  A run in flight now may end
// before F, and judged now o would be skipped (forbid) or would stop it (replace) early.
// So an o that nothing of ours claims yet waits for F, undecided: no claim goes out, so
// no vote is left to clean up (turning a claim back before F left accepted votes that
// refused the entry's next claims).  A claim already out goes on: at-most-once, the votes
// keep two runs apart and the claim's steps from F judge o; at-least-once, an earlier run
// that starts after o was claimed is one this node could not hear of (best effort).
bool Scheduler::overlap_waits(Occ& o, Clock now) {
  if (!o.idle() || !earlier_in_flight(o)) return false;
  mark(Mark::kOverlapWaitsForInstant);
  defer(o, now, "an earlier occurrence of the entry is in flight: overlap is judged at the instant");
  set_deadline(o, Deadline::kInstant, std::max(utc_to_mono(o.fire_utc_ms), now.mono_ms + 1));
  return true;
}

bool Scheduler::earlier_in_flight(const Occ& o) const {
  const std::optional<OccKey> key = known_occ_key(o.volume, o.id);
  if (!key) return false;
  for (auto it = occs_.lower_bound(OccKey{key->entry, INT64_MIN}); it != occs_.end() && it->first.entry == key->entry;
       ++it) {
    const Occ& p = it->second;
    if (p.id.scheduled_utc_ms >= o.id.scheduled_utc_ms) break;
    if (p.volume != o.volume) continue;
    if (!p.finished() || run_open(p)) return true;
  }
  return false;
}

// overlap = replace (docs/firing.md, "Overlap").  Three rules:
//
//   decider   o is due while an earlier occurrence p of its entry runs (a worker record
//             accepted and not finished): it writes a replace record under p, once.  It
//             then goes on deciding o: at-least-once runs at once (best effort: p may
//             still be stopping), at-most-once claims as under forbid — the votes refuse
//             o until p's run is recorded over, which the stop brings about.
//   worker    a replace record of p stops p's runs here (SchedulerHost::cancel; the run
//             is recorded replaced when it ends), drops its held attempts (recorded
//             revoked: they never start) and refuses p's dispatches from then on.
//   owner     p's decider, seeing the record — or p's successor due already (a backlog
//             after an outage: a run of p would be stopped as it started) — starts no
//             new attempt of p: with none open, p ends skipped_overlap ("replaced by ...").
void Scheduler::ask_replace(const Occ& o, Clock now) {
  const std::optional<OccKey> key = known_occ_key(o.volume, o.id);
  if (!key) return;
  for (auto it = occs_.lower_bound(OccKey{key->entry, INT64_MIN}); it != occs_.end() && it->first.entry == key->entry;
       ++it) {
    Occ& p = it->second;
    if (p.id.scheduled_utc_ms >= o.id.scheduled_utc_ms) break;
    if (p.volume != o.volume || p.replaced_by_utc_ms >= o.id.scheduled_utc_ms) continue;
    if (!run_open(p)) continue;
    mark(Mark::kReplaceAsked);
    ++counters_.replace_asked;
    // Written through the store: the record reaches p's workers and deciders, now or
    // after a heal.  Applied here at once (this node may be p's worker or owner).
    host_.store_put(o.volume, replace_record_key(p.id, self_.node),
                    encode(ReplaceRecord{self_, o.id.scheduled_utc_ms, now.utc_ms}));
    p.replaced_by_utc_ms = o.id.scheduled_utc_ms;
    stop_replaced_runs(p, now);
    touch(p);
  }
}

void Scheduler::on_replace_record(const std::string& volume, const ParsedOccKey& k,
                                  const std::optional<std::string>& value, Clock now) {
  if (!value) return;  // removed by retention: nothing left to stop
  auto rec = decode_replace_record(*value);
  if (!rec.ok() || rec->by_scheduled_utc_ms <= k.occ.scheduled_utc_ms) {
    ++counters_.bad_records;  // only a later occurrence replaces an earlier one
    return;
  }
  if (k.occ.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms) return;
  Occ* existing = find_occ(volume, k.occ);
  Occ& o = existing ? *existing : track(volume, k.occ, now);
  if (o.replaced_by_utc_ms >= rec->by_scheduled_utc_ms) return;
  o.replaced_by_utc_ms = rec->by_scheduled_utc_ms;
  stop_replaced_runs(o, now);
  touch(o);
}

void Scheduler::stop_replaced_runs(const Occ& o, Clock now) {
  std::vector<uint64_t> held;
  for (auto& [id, run] : running_) {
    if (run.volume != o.volume || !(run.occ == o.id)) continue;
    if (run.held) {
      held.push_back(id);
    } else if (!run.stopping) {
      mark(Mark::kReplaceStopped);
      run.stopping = true;
      host_.cancel(id);
    }
  }
  for (uint64_t id : held) {
    const Running r = running_.at(id);
    drop_held(id);
    // Recorded revoked, not replaced: it never started, and its owner must not count it
    // as a run of p (p ends skipped_overlap, not done; tests/sim/regress_prepared_replace_
    // held_seed_120.toml) — nor run it elsewhere once it knows the replace record.
    WorkerRecord rec;
    rec.worker = self_;
    rec.attempt = r.attempt;
    rec.state = WorkerState::kRevoked;
    rec.accepted_utc_ms = r.accepted_utc_ms;
    rec.finished_utc_ms = now.utc_ms;
    rec.run = r.run;
    rec.run_at_utc_ms = r.fire_utc_ms;
    rec.detail = "replaced before it started by the occurrence due at " + format_rfc3339_utc(o.replaced_by_utc_ms);
    ++counters_.replaced;
    put_worker_record(r.volume, r.occ, r.fire_id, rec, now);
  }
}

bool Scheduler::replaced_stops(Occ& o, Clock now) {
  if (o.replaced_by_utc_ms == 0 && (o.entry == nullptr || o.entry->overlap != OverlapPolicy::replace)) return false;
  // First what is cheap: an open attempt (the common case, owner_step runs often while a
  // run goes on) concludes o by its own end.
  bool ran_once = false;  // a run of o failed (no retry follows it now)
  if (auto* own = std::get_if<firing::Owned>(&o.phase)) {
    for (const Attempt& a : own->attempts) {
      if (!may_be_followed(a)) return false;  // open, or it ran: its own end concludes o
      ran_once = ran_once || a.state == AttemptState::kFinished;
    }
  }
  int64_t by = o.replaced_by_utc_ms;
  if (by == 0) {
    // Its successor is due already (a backlog after an outage): a run of o would be
    // stopped as soon as it started.
    const std::optional<int64_t> next = next_occurrence(*o.entry, o.id.scheduled_utc_ms);
    if (!next || fire_time(*o.entry, *next) > now.utc_ms) return false;
    by = *next;
  }
  if (o.is<firing::Claiming>()) release_grants(o);
  const std::string why = "replaced by the occurrence due at " + format_rfc3339_utc(by);
  if (ran_once) {
    to_finished(o, Outcome::kDone, why, now);
    return true;
  }
  mark(Mark::kOverlapSkipped);
  to_finished(o, Outcome::kSkippedOverlap, why, now);
  return true;
}

}  // namespace caesium::schedule
