// The occurrence history of an entry as JSON: what the replicated occurrence records
// (schedule/occurrence.h) say about each occurrence — who owned it and how, which
// attempts were dispatched, what each worker did — plus a one-word outcome and the
// duplicate count, so a person does not have to read the records to answer "did it run,
// and how many times?".
#include <algorithm>
#include <cstdio>

#include "node/daemon/api/api_internal.h"

namespace caesium::daemon::api_detail {

namespace {

using nlohmann::json;

json instant(int64_t utc_ms) { return utc_ms == 0 ? json(nullptr) : json(format_rfc3339_utc(utc_ms)); }

std::string hex64(uint64_t v) {
  char buf[17] = {};
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// One word for the occurrence, most telling fact first: a run that completed beats a
// failed one; an owner's verdict (lost, missed, skipped) beats an attempt still shown
// as running (a lost at-most-once attempt stays "accepted" in its worker record).
std::string outcome(const node::Node::OccurrenceHistory& h, bool retries) {
  bool completed = false, failed = false, timed_out = false, running = false, dispatched = false, replaced = false;
  for (const auto& [fire_id, w] : h.workers) {
    completed |= w.state == schedule::WorkerState::kCompleted;
    replaced |= w.state == schedule::WorkerState::kReplaced;
    timed_out |= w.state == schedule::WorkerState::kTimedOut;
    failed |= schedule::failed(w.state);
    running |= w.state == schedule::WorkerState::kAccepted;
  }
  bool lost = false, missed = false, skipped = false, skipped_overlap = false;
  for (const auto& o : h.owners) {
    lost |= o.outcome == schedule::OwnerOutcome::kLost;
    missed |= o.outcome == schedule::OwnerOutcome::kMissed;
    skipped |= o.outcome == schedule::OwnerOutcome::kSkipped;
    skipped_overlap |= o.outcome == schedule::OwnerOutcome::kSkippedOverlap;
    dispatched |= !o.attempts.empty();
  }
  if (completed) return "completed";
  if (replaced) return "replaced";  // stopped for a later occurrence (overlap = replace)
  if (retries && failed && running) return "running";  // a retry of a failed run
  if (timed_out) return "timed_out";
  if (failed) return "failed";
  if (lost) return "lost";
  if (missed) return "missed";
  if (skipped) return "skipped";
  if (skipped_overlap) return "skipped_overlap";
  if (running) return "running";
  if (dispatched) return "dispatched";
  if (!h.owners.empty()) return "owned";
  return "pending";
}

}  // namespace

json history_json(const std::vector<node::Node::OccurrenceHistory>& occurrences, const schedule::Entry* entry) {
  json out = json::array();
  for (const auto& h : occurrences) {
    json owners = json::array();
    for (const auto& o : h.owners) {
      json attempts = json::array();
      for (const auto& a : o.attempts) {
        attempts.push_back({{"attempt", a.attempt},
                            {"fire_id", a.fire_id},
                            {"worker", a.worker},
                            {"issued", instant(a.issued_utc_ms)}});
      }
      json owner = {{"node", o.owner.node},
                    {"boot", hex64(o.owner.boot)},
                    {"path", schedule::to_string(o.path)},
                    {"outcome", schedule::to_string(o.outcome)},
                    {"decided", instant(o.decided_utc_ms)},
                    {"attempts", std::move(attempts)}};
      if (!o.reason.empty()) owner["reason"] = o.reason;
      owners.push_back(std::move(owner));
    }
    json attempts = json::array();
    size_t runs = 0, failed_runs = 0;
    for (const auto& [fire_id, w] : h.workers) {
      if (schedule::ran(w.state)) ++runs;
      if (schedule::failed(w.state)) ++failed_runs;
      json a = {{"fire_id", fire_id},
                {"worker", w.worker.node},
                {"boot", hex64(w.worker.boot)},
                {"attempt", w.attempt},
                {"state", schedule::to_string(w.state)},
                {"accepted", instant(w.accepted_utc_ms)},
                {"finished", instant(w.finished_utc_ms)},
                {"possible_duplicate", w.possible_duplicate}};
      if (!w.detail.empty()) a["detail"] = w.detail;
      attempts.push_back(std::move(a));
    }
    // An entry that retries runs a failed occurrence again: those runs are retries, not
    // duplicates (each follows a failed one).
    const bool retries = entry != nullptr && entry->retry.enabled();
    const size_t retried = retries && runs > 1 ? std::min(failed_runs, runs - 1) : 0;
    out.push_back({{"scheduled", format_rfc3339_utc(h.occ.scheduled_utc_ms)},
                   {"scheduled_ms", h.occ.scheduled_utc_ms},
                   {"outcome", outcome(h, retries)},
                   {"owners", std::move(owners)},
                   {"attempts", std::move(attempts)},
                   {"runs", runs},
                   {"retries", retried},
                   {"duplicates", runs > 1 ? runs - 1 - retried : 0}});
    // A manual occurrence ("run now") is one of the entry's triggers.  One that the entry
    // no longer keeps (kMaxTriggers, or older than it remembers) shows as scheduled.
    const schedule::Trigger* t = entry != nullptr ? entry->trigger_at(h.occ.scheduled_utc_ms) : nullptr;
    out.back()["manual"] = t != nullptr;
    if (t != nullptr) out.back()["trigger"] = t->id;
  }
  return out;
}

}  // namespace caesium::daemon::api_detail
