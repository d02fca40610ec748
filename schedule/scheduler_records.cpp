// Scheduler: occurrence records of the volume store (occurrence.h) — what every replica
// learns of o from the owners and workers that wrote them.  One writer per key, so
// last-writer-wins never loses a fact someone else wrote.
#include <algorithm>
#include <cassert>

#include "schedule/scheduler.h"

namespace caesium::schedule {

void Scheduler::on_owner_record(const std::string& volume, const ParsedOccKey& k,
                                const std::optional<std::string>& value, Clock now) {
  Occ* existing = find_occ(volume, k.occ);
  if (!value) {
    if (existing) existing->owner_records.erase(k.suffix);
    return;
  }
  auto rec = decode_owner_record(*value);
  if (!rec.ok()) {
    ++counters_.bad_records;
    return;
  }
  // Records of occurrences past retention are not worth tracking.
  if (k.occ.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms) return;
  Occ& o = existing ? *existing : track(volume, k.occ, now);
  o.owner_records[k.suffix] = std::move(rec).value();
  if (!o.is<firing::Owned>() && !o.finished()) touch(o);
}

void Scheduler::on_worker_record(const std::string& volume, const ParsedOccKey& k,
                                 const std::optional<std::string>& value, Clock now) {
  Occ* existing = find_occ(volume, k.occ);
  if (!value) {
    if (existing) existing->worker_records.erase(k.suffix);
    return;
  }
  auto rec = decode_worker_record(*value);
  if (!rec.ok()) {
    ++counters_.bad_records;
    return;
  }
  if (k.occ.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms) return;
  Occ& o = existing ? *existing : track(volume, k.occ, now);
  const WorkerRecord& w = o.worker_records[k.suffix] = std::move(rec).value();
  if (o.is<firing::Owned>()) {
    apply_worker_record(o, k.suffix, w, now);
    touch(o);
    return;
  }
  // Settled — ended, or never to run (a held run dropped without its owner's go): whoever
  // waits for the attempt looks again.
  if (w.state != WorkerState::kAccepted && !o.finished()) touch(o);
}

void Scheduler::apply_worker_record(Occ& o, const std::string& fire_id, const WorkerRecord& w, Clock now) {
  for (auto& a : o.as<firing::Owned>().attempts) {
    if (a.info.fire_id != fire_id) continue;
    const bool open = a.state == AttemptState::kSent || a.state == AttemptState::kRevoking;
    if (w.state == WorkerState::kReplaced && a.state == AttemptState::kRevoked) {
      // Fenced here (the owner's go, or a promise majority that never said yes) while its
      // worker held it, then replaced there before it started: it never ran either way,
      // and an attempt may already follow it (O2).  (Held runs dropped for a replace are
      // recorded revoked now; a record of an earlier version may still say replaced.)
      continue;
    }
    if (finished(w.state)) {
      a.state = AttemptState::kFinished;
      a.failed = failed(w.state);
      uncount(a);
    } else if (w.state == WorkerState::kAccepted && open) {
      a.state = AttemptState::kAccepted;
      a.accepted_mono_ms = now.mono_ms;
    } else if (w.state == WorkerState::kRevoked && (open || a.state == AttemptState::kAccepted)) {
      // The worker's durable promise that it never runs the attempt, also after it had
      // accepted it (a prepared attempt revoked before its instant): its revoke reply may
      // have met the attempt marked accepted here by the acceptance record, and been
      // passed over.
      a.state = AttemptState::kRevoked;
      uncount(a);
    }
  }
}

bool Scheduler::ran_somewhere(const Occ& o) const {
  return std::any_of(o.worker_records.begin(), o.worker_records.end(),
                     [](const auto& w) { return finished(w.second.state); });
}

void Scheduler::write_owner_record(Occ& o, OwnerOutcome outcome, const std::string& reason, Clock now) {
  OwnerRecord r;
  r.owner = self_;
  r.path = o.path;
  r.outcome = outcome;
  r.reason = reason;
  r.decided_utc_ms = now.utc_ms;
  if (auto* own = std::get_if<firing::Owned>(&o.phase)) {
    own->recorded = true;
    for (const auto& a : own->attempts) r.attempts.push_back(a.info);
  }
  host_.store_put(o.volume, owner_record_key(o.id, self_.node), encode(r));
  o.owner_records[self_.node] = std::move(r);
}

}  // namespace caesium::schedule
