// Scheduler: the owner's go (docs/firing.md, Preparing ahead, "The owner's go").
//
// A prepared attempt waits at its worker for its instant F.  Without more, a worker that
// dies or is cut off before F holds an attempt that can neither start (its clock check
// needs a majority) nor be revoked (it does not answer), and an at-most-once owner must
// report the occurrence lost.  So a held run also needs its owner's word:
//
//   owner:  once its clock reads F, sends the worker go(up_to = its clock) — one message
//           per worker per tick for every attempt there that reached its instant — if it
//           heard from the worker lately; otherwise it fences the attempt: it never sends
//           that worker a go reaching F without listing the attempt, and runs the
//           occurrence elsewhere;
//   worker: starts a held run only once a go of the process that dispatched it reaches F
//           and does not list it; drops it, recorded revoked, when a go lists it or none
//           came within owner_silence after F.
//
// A fence is safe because the owner decides it only while no go it sent that worker
// reached F (sent_up_to < F), and lists it in every go after: the worker cannot meet a go
// that starts it.  It lists it until the worker has certainly dropped it (F + owner_silence
// on the worker's clock, which is within 2 max_clock_skew of the owner's).
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

// Owner side: attempt a went out prepared; its worker waits for a go reaching F.
void Scheduler::await_go(const Occ& o, const Attempt& a) {
  GoOut& out = go_out_[a.info.worker];
  GoWaiting w{o.volume, o.id, a.info.fire_id, o.fire_utc_ms <= out.sent_up_to_utc_ms};
  out.waiting.emplace(o.fire_utc_ms, std::move(w));
}

bool Scheduler::go_reaches(const std::string& worker) const {
  if (worker == self_.node) return true;
  const PeerView p = host_.peer(worker);
  return p.reachable && !p.suspect && p.silent_ms < options_.owner_silence_ms;
}

// Fences a, if no go reached its instant yet: it never starts, and a new attempt may go
// out beside it as after a revoke.  False when a go may have started it.
bool Scheduler::fence(Occ& o, Attempt& a) {
  if (!a.prepared || a.adopted) return false;
  if (a.state != AttemptState::kSent && a.state != AttemptState::kAccepted && a.state != AttemptState::kRevoking) {
    return false;
  }
  auto it = go_out_.find(a.info.worker);
  if (it == go_out_.end()) return false;  // never dispatched by this process
  GoOut& out = it->second;
  if (o.fire_utc_ms <= out.sent_up_to_utc_ms) return false;
  // Listed while a go could still start it: until our clock passes its go_by.
  const int64_t until = std::max(o.fire_utc_ms, a.info.issued_utc_ms) + options_.owner_silence_ms;
  out.fenced.emplace_back(a.info.fire_id, until);
  a.state = AttemptState::kRevoked;
  uncount(a);
  ++counters_.prepared_fenced;
  mark(Mark::kAttemptFenced);
  touch(o);
  return true;
}

int64_t Scheduler::next_go_utc_ms() const {
  int64_t best = kNever;
  for (const auto& [worker, out] : go_out_) {
    if (!out.waiting.empty()) best = std::min(best, out.waiting.begin()->first);
    if (out.resend_until_utc_ms > out.resend_at_utc_ms) best = std::min(best, out.resend_at_utc_ms);
  }
  return best;
}

// Each turn: every worker with attempts whose instant came gets one go, or, silent, has
// those attempts fenced.
void Scheduler::send_gos(Clock now) {
  for (auto it = go_out_.begin(); it != go_out_.end();) {
    const std::string& worker = it->first;
    GoOut& out = it->second;
    std::erase_if(out.fenced, [&](const auto& f) { return f.second < now.utc_ms; });  // past go_by: no go starts it
    if (out.resend_until_utc_ms <= now.utc_ms) out.resend_until_utc_ms = 0;
    const bool due = !out.waiting.empty() && out.waiting.begin()->first <= now.utc_ms;
    // A go may be lost with its connection: sent again every claim_retry while runs it
    // started may still wait for it (until owner_silence after the latest one's instant).
    const bool resend = out.resend_until_utc_ms > now.utc_ms && out.resend_at_utc_ms <= now.utc_ms;
    const bool reaches = (due || resend) && go_reaches(worker);
    if (reaches) {
      Go g{self_, now.utc_ms, {}};
      for (const auto& f : out.fenced) g.fenced.push_back(f.first);
      out.sent_up_to_utc_ms = std::max(out.sent_up_to_utc_ms, now.utc_ms);
      auto covered_end = out.waiting.upper_bound(now.utc_ms);
      if (due) {
        out.resend_until_utc_ms = std::max(out.resend_until_utc_ms, std::prev(covered_end)->first + options_.owner_silence_ms);
      }
      out.resend_at_utc_ms = now.utc_ms + options_.claim_retry_ms;
      out.waiting.erase(out.waiting.begin(), covered_end);
      host_.send(worker, std::move(g), false);
    } else if (resend) {
      out.resend_at_utc_ms = now.utc_ms + options_.claim_retry_ms;  // not now: look again then
    }
    if (due && !reaches) {
      while (!out.waiting.empty() && out.waiting.begin()->first <= now.utc_ms) {
        GoWaiting w = std::move(out.waiting.begin()->second);
        out.waiting.erase(out.waiting.begin());
        if (w.covered) continue;
        Occ* o = find_occ(w.volume, w.occ);
        if (o == nullptr || !o->is<firing::Owned>()) continue;
        for (Attempt& a : o->as<firing::Owned>().attempts) {
          if (a.info.fire_id == w.fire_id) fence(*o, a);
        }
      }
    }
    ++it;  // kept (one per worker node): sent_up_to must outlive the attempts it started
  }
}

// --- the worker's side ------------------------------------------------------------------------

std::optional<bool> Scheduler::go_given(const Held& h, const std::string& fire_id) const {
  auto it = go_in_.find(h.owner.node);
  if (it == go_in_.end() || it->second.boot != h.owner.boot) return false;
  if (it->second.fenced.count(fire_id) > 0 || it->second.up_to_utc_ms > h.go_by_utc_ms) return std::nullopt;
  return it->second.up_to_utc_ms >= h.fire_utc_ms;
}

void Scheduler::on_go(const std::string& from, const Go& g, Clock now) {
  if (g.owner.node != from) return;  // a node speaks for its own attempts only
  // The latest go stands, whatever its up_to: each go is true on its own (one that starts
  // a run was sent before any fence of it, and every later one lists the fence), and a
  // clock stepped back must not leave the owner's newer gos ignored.  A go of another
  // process of the node replaces its previous process's (whose runs: owner_gone).
  go_in_[from] = GoIn{g.owner.boot, g.up_to_utc_ms, std::set<std::string>(g.fenced.begin(), g.fenced.end())};
  // Held runs parked for this owner's go look again now (start_held decides).
  auto parked = go_parked_.find(from);
  if (parked == go_parked_.end()) return;
  for (const auto& [key_utc_ms, id] : parked->second) {
    auto item = held_.extract({key_utc_ms, id});
    if (item.empty()) continue;  // dropped or started meanwhile
    item.key().first = now.utc_ms;
    held_.insert(std::move(item));
  }
  go_parked_.erase(parked);
  start_held(now);
}

// A held run that never starts: its owner fenced it, or no go of its owner came in time.
// The record says so durably, as for a revoke; the owner and the replicas learn it there.
void Scheduler::drop_held_run(const std::map<uint64_t, Running>::iterator& run, const char* detail, Clock now) {
  assert(run->second.held);
  WorkerRecord rec;
  rec.worker = self_;
  rec.attempt = run->second.attempt;
  rec.state = WorkerState::kRevoked;
  rec.accepted_utc_ms = run->second.accepted_utc_ms;
  rec.run = run->second.run;
  rec.detail = detail;
  const std::string volume = run->second.volume;
  const OccurrenceId occ = run->second.occ;
  const std::string fire_id = run->second.fire_id;
  erase_running(run);
  put_worker_record(volume, occ, fire_id, rec, now);
}

}  // namespace caesium::schedule
