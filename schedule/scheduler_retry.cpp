// Scheduler: retries (docs/firing.md, Retries).  A run of o that ends in a definite
// failure — its worker's record says failed or timed_out — is followed by the next run
// after the entry's back-off, until `retry.attempts` runs in all.  The facts come from
// the worker records of the volume store, which every replica holds, so the owner and,
// should it vanish, whoever takes o over compute the same next run at the same instant.
//
// At-most-once: the next run is a new attempt, which a majority must accept in the owner's
// round before it is dispatched (as every attempt after the first), and it follows only an
// attempt that finished in a definite failure (O2) — never one whose outcome is unknown
// (lost), never one that may still run.
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "base/time.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

// The failed runs are counted by their run numbers (Dispatch::run, AttemptInfo::run), not
// by the records this node happens to hold: a takeover learns the latest attempt from a
// majority's promises (and whatever owner records name), which carry its run number, while
// the worker records of earlier runs may not have reached it yet
// (tests/sim/regress_retries_seed_684.toml, tests/sim/regress_retries_seed_1057.toml).
Scheduler::RunsSoFar Scheduler::runs_so_far(const Occ& o) const {
  RunsSoFar r;
  uint32_t records = 0, highest_run = 0;
  for (const auto& [fid, w] : o.worker_records) {
    if (w.state == WorkerState::kCompleted) r.succeeded = true;
    if (!failed(w.state)) continue;
    ++records;
    highest_run = std::max(highest_run, w.run);
    r.last_failed_utc_ms = std::max(r.last_failed_utc_ms, w.finished_utc_ms);
  }
  r.failed = records > 0 ? highest_run : 0;
  // Attempts proposed for a later run than the records account for.
  auto implied = [&](const AttemptInfo& a) {
    if (a.run < 2 || a.run - 1 < r.failed) return;
    if (a.run - 1 > r.failed) r.implied_due_utc_ms.reset();
    if (!r.implied_due_utc_ms || a.issued_utc_ms < *r.implied_due_utc_ms) r.implied_due_utc_ms = a.issued_utc_ms;
    r.failed = a.run - 1;
  };
  if (const auto* own = std::get_if<firing::Owned>(&o.phase)) {
    for (const Attempt& a : own->attempts) implied(a.info);
  }
  for (const auto& [node, rec] : o.owner_records) {
    for (const AttemptInfo& a : rec.attempts) implied(a);
  }
  // A record of run failed + 1's failure is counted above; its due time came from the back-off.
  if (highest_run == r.failed && records > 0) r.implied_due_utc_ms.reset();
  return r;
}

std::optional<int64_t> Scheduler::next_run_due_utc_ms(const Occ& o, const Entry& e) const {
  if (!e.retry.enabled()) return std::nullopt;
  const RunsSoFar r = runs_so_far(o);
  if (r.succeeded || r.failed == 0 || r.failed >= e.retry.attempts) return std::nullopt;
  int64_t at = 0;
  if (r.implied_due_utc_ms) {
    at = *r.implied_due_utc_ms;
  } else {
    const uint64_t seed = hash_combine(hash64(o.id.entry_key), static_cast<uint64_t>(o.id.scheduled_utc_ms) + r.failed);
    at = r.last_failed_utc_ms + retry_backoff_ms(e.retry, r.failed, seed);
  }
  // An occurrence's records are kept for occurrence_retention; a run that would start in
  // its second half could outlive them (and be decided again by a replica that forgot).
  if (at - o.fire_utc_ms > options_.occurrence_retention_ms / 2) return std::nullopt;
  return at;
}

// (True only where a worker record finished: it implies ran_somewhere.)
bool Scheduler::runs_over(Occ& o) {
  const RunsSoFar r = runs_so_far(o);
  if (r.succeeded) return true;
  if (r.failed == 0) return false;
  // A run failed: over unless the entry retries it.  The definition decided with, or the
  // stored one for a replica that has not decided o (read only here, when a run failed).
  std::shared_ptr<const Entry> e = o.entry ? o.entry : load_entry(o.volume, o.id.entry_key);
  return e == nullptr || e->paused || !next_run_due_utc_ms(o, *e).has_value();
}

int64_t Scheduler::due_utc_ms(const Occ& o) const {
  if (!o.entry || !o.entry->retry.enabled()) return o.fire_utc_ms;
  return std::max(o.fire_utc_ms, next_run_due_utc_ms(o, *o.entry).value_or(o.fire_utc_ms));
}

bool Scheduler::retry_step(Occ& o, Clock now) {
  const Entry& e = *o.entry;
  const std::optional<int64_t> at = next_run_due_utc_ms(o, e);
  if (!at) return false;
  // A delete or a pause since o was decided stops what was not dispatched: the next run too.
  const std::shared_ptr<const Entry> current = load_entry(o.volume, o.id.entry_key);
  if (current == nullptr || current->paused) return false;
  firing::Owned& own = o.as<firing::Owned>();
  const uint32_t failed_runs = runs_so_far(o).failed;
  if (own.retry_announced < failed_runs) {
    own.retry_announced = failed_runs;
    emit(FireEvent::Kind::kRetryScheduled, o, now, {}, failed_runs + 1,
         "run " + std::to_string(failed_runs) + " of " + std::to_string(e.retry.attempts) + " failed; next at " +
             format_rfc3339_utc(*at));
  }
  if (now.utc_ms < *at) {
    set_deadline(o, Deadline::kRetry, std::max(utc_to_mono(*at), now.mono_ms + 1));
    return true;
  }
  mark(Mark::kRetryDispatched);
  ++counters_.retried;
  dispatch_attempt(o, now, {});
  return true;
}

}  // namespace caesium::schedule
