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
#include "base/time.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

namespace {
// A worker record that ends its attempt: it finished, or it never ran (refused, revoked).
bool worker_says_ended(const WorkerRecord& w) {
  return finished(w.state) || w.state == WorkerState::kRefused || w.state == WorkerState::kRevoked;
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

}  // namespace caesium::schedule
