// Scheduler: the worker side — accepting, holding, running, revoking.  Every promise made
// here is durable before it is sent: acceptances, refusals and revocations (the worker
// record is written first; the reply and the handler wait for it).
#include <algorithm>
#include <cassert>

#include "base/time.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {

void Scheduler::put_worker_record(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id,
                                  const WorkerRecord& rec, Clock now, bool lazy) {
  // An acceptance is answered to the owner directly (the dispatch reply); the other
  // replicas need it only if the owner goes away, which takes seconds to notice, so its
  // push may wait for the completion that supersedes it.  A prepared run's completion
  // may wait too (Running::lazy_completion): the node holds such pushes back while it
  // fires a burst of prepared runs, so the burst's window is spent on the runs.
  if (rec.state == WorkerState::kAccepted || lazy) {
    host_.store_put_lazy(volume, worker_record_key(occ, fire_id), encode(rec));
  } else {
    host_.store_put(volume, worker_record_key(occ, fire_id), encode(rec));
  }
  if (Occ* o = find_occ(volume, occ)) {
    o->worker_records[fire_id] = rec;
  } else if (occ.scheduled_utc_ms >= now.utc_ms - options_.occurrence_retention_ms && is_replica(volume)) {
    track(volume, occ, now).worker_records[fire_id] = rec;
  }
}

void Scheduler::on_dispatch(const std::string& from, const Dispatch& d, Clock now) {
  if (!is_replica(d.volume)) {
    DispatchReply reply{d.volume, d.occ, d.fire_id, DispatchOutcome::kRefused, "not a replica of volume " + d.volume};
    host_.send(from, std::move(reply), false);
    return;
  }
  // Idempotence: an attempt is accepted or refused once, whatever the network repeats.
  if (answer_known_dispatch(from, d, now)) return;
  // At-most-once, issued before this node lost its disk: a previous life of this node
  // may have accepted it (and started the handler) without its reply reaching the owner.
  // A refusal would tell the owner that it never ran, and the owner would run it
  // elsewhere; so say nothing, and write nothing.  The owner retransmits until the accept
  // deadline, then revokes, and that revoke is answered `unknown` (on_revoke): the
  // occurrence is reported lost.  This check comes before every other refusal.
  // (Not one addressed to this very process: no previous one can have received it.)
  const bool maybe_ran_before = amnesia_horizon_utc_ms_ != 0 && d.issued_utc_ms <= amnesia_horizon_utc_ms_ &&
                                !(d.worker_boot != 0 && d.worker_boot == self_.boot);
  if (d.at_most_once && maybe_ran_before) {
    ++counters_.dispatches_ignored_after_wipe;
    mark(Mark::kDispatchIgnoredAfterWipe);
    return;
  }
  // The definition the occurrence was decided under when this node owns it (a dispatch
  // to itself), else the current one.
  const Occ* known = find_occ(d.volume, d.occ);
  std::shared_ptr<const Entry> e = known != nullptr ? known->entry : nullptr;
  if (!e && entry_of(d.volume, d.occ.entry_key) != nullptr) e = load_entry(d.volume, d.occ.entry_key);
  auto refuse = [&](const std::string& why, DispatchOutcome outcome = DispatchOutcome::kRefused) {
    WorkerRecord rec;
    rec.worker = self_;
    rec.attempt = d.attempt;
    rec.state = WorkerState::kRefused;
    rec.detail = outcome == DispatchOutcome::kBusy ? "busy: " + why : why;
    put_worker_record(d.volume, d.occ, d.fire_id, rec, now);
    host_.send(from, DispatchReply{d.volume, d.occ, d.fire_id, outcome, why}, true);
  };
  if (e && !node_matches_binding(self_.node, *e)) {
    refuse("this node is not in the entry's binding");
    return;
  }
  if (now.utc_ms > d.accept_by_utc_ms || (leaving_ && d.run_at_utc_ms != 0)) {
    refuse(now.utc_ms > d.accept_by_utc_ms ? "the attempt's accept deadline has passed"
                                            : "this node is stopping: it would not be here at the prepared run's instant");
    return;
  }
  // The entry was deleted, paused or edited here after the owner decided o (an edit only
  // if written no later than o's instant): the attempt never runs (docs/firing.md,
  // Preparing ahead).  The owner learns it from the refusal.
  const int64_t fire_utc_ms = d.run_at_utc_ms != 0 ? d.run_at_utc_ms : d.occ.scheduled_utc_ms;
  if (superseded_here(d.volume, d.occ.entry_key, d.entry_version, fire_utc_ms)) {
    mark(Mark::kWorkerSuperseded);
    refuse("superseded: a newer version of the entry here governs this occurrence");
    return;
  }
  if (known != nullptr && known->replaced_by_utc_ms != 0) {
    refuse("replaced by the occurrence due at " + format_rfc3339_utc(known->replaced_by_utc_ms));
    return;
  }
  // A running cap is reached: refused "busy" (durably, as every refusal), so the owner
  // tries another worker or waits; the attempt never runs here.
  if (const std::string why = at_running_cap(d.handler); !why.empty()) {
    ++counters_.busy_refused;
    refuse(why, DispatchOutcome::kBusy);
    return;
  }
  // At-least-once, issued before this node lost its disk: it runs, flagged as a possible
  // duplicate, since a previous life of this node may have run it already.
  accept_dispatch(from, d, std::move(e), d.possible_duplicate || maybe_ran_before, now);
}

// The worker record of this fire id, if this node wrote one: the dispatch is answered as
// it was the first time (a previous process's answer included).
bool Scheduler::answer_known_dispatch(const std::string& from, const Dispatch& d, Clock now) {
  (void)now;
  auto existing = host_.store_get(d.volume, worker_record_key(d.occ, d.fire_id));
  if (!existing) return false;
  auto rec = decode_worker_record(*existing);
  if (!rec.ok() || rec->worker.node != self_.node) return false;
  DispatchReply reply{d.volume, d.occ, d.fire_id, DispatchOutcome::kRefused, {}};
  reply.outcome = ran(rec->state) ? DispatchOutcome::kAccepted : DispatchOutcome::kRefused;
  reply.reason = to_string(rec->state);
  reply.worker_boot = rec->worker.boot;  // the process that accepted: maybe a previous one
  host_.send(from, std::move(reply), true);
  return true;
}

void Scheduler::accept_dispatch(const std::string& from, const Dispatch& d, std::shared_ptr<const Entry> e,
                                bool possible_duplicate, Clock now) {
  WorkerRecord rec;
  rec.worker = self_;
  rec.attempt = d.attempt;
  rec.state = WorkerState::kAccepted;
  rec.accepted_utc_ms = now.utc_ms;
  rec.possible_duplicate = possible_duplicate;
  rec.run_at_utc_ms = d.run_at_utc_ms;
  rec.run = d.run;
  put_worker_record(d.volume, d.occ, d.fire_id, rec, now);
  DispatchReply reply{d.volume, d.occ, d.fire_id, DispatchOutcome::kAccepted, {}};
  reply.worker_boot = self_.boot;
  host_.send(from, std::move(reply), true);

  const uint64_t id = next_invocation_id_++;
  const bool lazy_completion = d.run_at_utc_ms != 0 && (d.at_most_once || (e != nullptr && e->complete_time_ms == 0));
  Running& run = running_[id];
  run = Running{d.volume, d.occ, d.fire_id, d.attempt, possible_duplicate, lazy_completion, d.at_most_once, now.utc_ms};
  run.run = d.run;
  run.runs = d.runs;
  run.on_failure = d.on_failure;
  run.handler = d.handler;
  ++running_per_handler_[d.handler];
  run.fire_utc_ms = d.run_at_utc_ms != 0 ? d.run_at_utc_ms
                    : e != nullptr       ? fire_time(*e, d.occ.scheduled_utc_ms)
                                         : d.occ.scheduled_utc_ms;
  ++counters_.accepted;
  emit_worker(FireEvent::Kind::kAccepted, d.volume, d.occ, d.attempt, d.at_most_once, true, d.fire_id);
  Invocation inv;
  inv.id = id;
  inv.handler = d.handler;
  inv.volume = d.volume;
  if (auto n = split_entry_key(d.occ.entry_key)) {
    inv.entity = n->entity;
    inv.entry = n->name;
  }
  inv.scheduled_utc_ms = d.occ.scheduled_utc_ms;
  inv.fire_id = d.fire_id;
  inv.attempt = d.attempt;
  inv.run = d.run;
  inv.possible_duplicate = possible_duplicate;
  inv.sequence = d.sequence;
  inv.payload = d.payload;
  inv.timeout_ms = d.timeout_ms;
  if (d.run_at_utc_ms == 0) {
    run.lateness_ms = now.utc_ms - run.fire_utc_ms;
    emit_run(FireEvent::Kind::kStarted, run, true, {});
    host_.invoke(std::move(inv));
    return;
  }
  // Prepared: held until its instant and the clock check (start_held), which the next
  // tick does at once when both are met already.
  run.held = true;
  Held& h = held_[{d.run_at_utc_ms, id}];
  h.fire_utc_ms = d.run_at_utc_ms;
  h.invocation = std::move(inv);
  h.entry = std::move(e);
  h.own_clock_only = possible_duplicate;
  h.asks = d.at_most_once && !possible_duplicate;
  h.accepted_mark = host_.write_mark();
  h.entry_version = d.entry_version;
  h.owner = d.owner;
  h.go_by_utc_ms = std::max(d.run_at_utc_ms, d.issued_utc_ms) + options_.owner_silence_ms;
  ++counters_.prepared;
}

bool Scheduler::clocks_passed(const std::string& volume, const Entry* e, int64_t fire_utc_ms, Clock now,
                              int64_t& retry_mono) const {
  if (now.utc_ms < fire_utc_ms) {
    retry_mono = utc_to_mono(fire_utc_ms);
    return false;
  }
  const QuorumSets* volume_sets = nullptr;
  if (e == nullptr) {
    // The definition had not reached this replica when it accepted: the volume's sets.
    auto it = volume_quorum_sets_.find(volume);
    if (it == volume_quorum_sets_.end()) return true;  // no longer a replica: its own clock
    volume_sets = &it->second;
  }
  const auto sets = e != nullptr ? quorum_sets(volume, *e) : Borrowed<QuorumSets>(volume_sets);
  int64_t next = kNever;
  for (const auto& set : *sets) {
    size_t passed = 0;
    for (const auto& n : set) {
      if (n == self_.node) {
        ++passed;
        continue;
      }
      const int64_t ahead = host_.clock_ahead(n);
      if (ahead == PeerView::kClockUnknown) continue;
      // Its clock reads at least ours + ahead: past F once ours reads F - ahead.
      if (now.utc_ms + ahead >= fire_utc_ms) ++passed;
      else next = std::min(next, utc_to_mono(fire_utc_ms - ahead));
    }
    if (set.empty() || passed * 2 <= set.size()) {
      // Look again when the nearest known clock passes, and at least every 50 ms (new
      // frames tighten the bounds, and bring the first of a silent peer).
      retry_mono = std::min(next, now.mono_ms + 50);
      return false;
    }
  }
  return true;
}

void Scheduler::start_held(Clock now) {
  while (!held_.empty() && held_.begin()->first.first <= now.utc_ms) {
    auto item = held_.extract(held_.begin());
    Held& h = item.mapped();
    auto run = running_.find(h.invocation.id);
    if (run == running_.end()) continue;
    const int64_t no_go_by = h.go_by_utc_ms;  // on this clock: a bound to give up by, not a rule
    // The owner's go (scheduler_go.cpp): fenced, or none within owner_silence of the
    // instant, the run never starts; not yet, it waits parked for the owner's next go.
    const std::optional<bool> go = h.go ? std::optional<bool>(true) : go_given(h, run->second.fire_id);
    if (!go || (!*go && (now.utc_ms >= no_go_by || owner_gone(h.owner)))) {
      if (auto parked = go_parked_.find(h.owner.node); parked != go_parked_.end()) {
        auto [lo, hi] = parked->second.equal_range(no_go_by);
        for (auto p = lo; p != hi; ++p) {
          if (p->second == h.invocation.id) {
            parked->second.erase(p);
            break;
          }
        }
      }
      ++counters_.prepared_no_go;
      mark(Mark::kHeldWithoutGo);
      drop_held_run(run, go ? "its owner's go did not come (the owner is gone, or silent for owner_silence)"
                            : "fenced by its owner before its instant, or its go came past go_by", now);
      continue;
    }
    // At-most-once: yes from a majority of the replicas, asked while the owner's go travels.
    if (const std::optional<int64_t> wait = await_replicas(h, run, now)) {
      if (*wait != kNever) {
        item.key().first = *wait;
        held_.insert(std::move(item));
      }
      continue;
    }
    h.go = *go;
    if (!*go) {
      item.key().first = no_go_by;
      go_parked_[h.owner.node].emplace(no_go_by, h.invocation.id);
      held_.insert(std::move(item));
      continue;
    }
    int64_t retry = kNever;
    if (!h.own_clock_only && !clocks_passed(h.invocation.volume, h.entry.get(), h.fire_utc_ms, now, retry)) {
      // Not yet: back in the queue under the instant to look again (the others go on).
      item.key().first = now.utc_ms + std::max<int64_t>(1, retry - now.mono_ms);
      held_.insert(std::move(item));
      continue;
    }
    if (superseded_here(run->second.volume, run->second.occ.entry_key, h.entry_version, h.fire_utc_ms)) {
      drop_superseded(run, now);
      continue;
    }
    assert(now.utc_ms >= h.fire_utc_ms);  // never before its instant on this clock
    last_held_start_utc_ms_ = now.utc_ms;
    run->second.held = false;
    run->second.lateness_ms = now.utc_ms - run->second.fire_utc_ms;
    emit_run(FireEvent::Kind::kStarted, run->second, true, {});
    host_.invoke_after(std::move(h.invocation), h.accepted_mark);
  }
  send_go_asks();
}

void Scheduler::on_revoke(const std::string& from, const Revoke& r, Clock now) {
  RevokeReply reply{r.volume, r.occ, r.fire_id, RevokeOutcome::kUnknown};
  if (!is_replica(r.volume)) {
    host_.send(from, std::move(reply), false);
    return;
  }
  if (auto existing = host_.store_get(r.volume, worker_record_key(r.occ, r.fire_id))) {
    auto rec = decode_worker_record(*existing);
    if (rec.ok() && rec->worker.node == self_.node) {
      if (revoke_prepared(from, r, *rec, now)) return;
      switch (rec->state) {
        case WorkerState::kAccepted: reply.outcome = RevokeOutcome::kAccepted; break;
        case WorkerState::kCompleted:
        case WorkerState::kFailed:
        case WorkerState::kTimedOut:
        case WorkerState::kReplaced: reply.outcome = RevokeOutcome::kCompleted; break;
        case WorkerState::kRefused:
        case WorkerState::kRevoked: reply.outcome = RevokeOutcome::kRevoked; break;
      }
      reply.worker_boot = rec->worker.boot;
      host_.send(from, std::move(reply), true);
      return;
    }
  }
  const bool addressed_here = r.worker_boot != 0 && r.worker_boot == self_.boot;
  if (amnesia_horizon_utc_ms_ != 0 && r.issued_utc_ms <= amnesia_horizon_utc_ms_ && !addressed_here) {
    // A previous process may have accepted it — and run it, unless it was prepared for an
    // instant beyond anything that process's clock can have read (as prepared_never_started).
    if (r.run_at_utc_ms == 0 || r.run_at_utc_ms <= started_utc_ms_ + 2 * options_.max_clock_skew_ms) {
      mark(Mark::kRevokeUnknownAmnesia);
      host_.send(from, std::move(reply), false);  // kUnknown: it may have run before the disk was lost
      return;
    }
    mark(Mark::kRevokePreparedAfterWipe);
  }
  WorkerRecord rec;
  rec.worker = self_;
  rec.state = WorkerState::kRevoked;
  rec.detail = "revoked by the owner before acceptance";
  put_worker_record(r.volume, r.occ, r.fire_id, rec, now);
  reply.outcome = RevokeOutcome::kRevoked;
  host_.send(from, std::move(reply), true);
}

// A prepared attempt that never started (still held here, or accepted by a previous
// process of this node that cannot have reached its instant): it never will, which the
// record says durably before the answer leaves.  Without this a worker that restarted
// between acceptance and F left its at-most-once work lost.
bool Scheduler::revoke_prepared(const std::string& from, const Revoke& r, const WorkerRecord& rec, Clock now) {
  uint64_t held_id = 0;
  if (rec.state != WorkerState::kAccepted || rec.run_at_utc_ms == 0 ||
      !prepared_never_started(r.volume, r.occ, r.fire_id, rec, &held_id)) {
    return false;
  }
  if (held_id != 0) drop_held(held_id);
  WorkerRecord revoked = rec;
  revoked.worker = self_;
  revoked.state = WorkerState::kRevoked;
  revoked.detail = "revoked by the owner before its instant (prepared, never started)";
  ++counters_.prepared_revoked;
  mark(Mark::kRevokePreparedNeverStarted);
  put_worker_record(r.volume, r.occ, r.fire_id, revoked, now);
  RevokeReply reply{r.volume, r.occ, r.fire_id, RevokeOutcome::kRevoked};
  reply.worker_boot = self_.boot;
  host_.send(from, std::move(reply), true);
  return true;
}

void Scheduler::erase_running(std::map<uint64_t, Running>::iterator it) {
  auto h = running_per_handler_.find(it->second.handler);
  assert(h != running_per_handler_.end() && h->second > 0);
  if (--h->second == 0) running_per_handler_.erase(h);
  if (it->second.held) asking_.erase(it->second.fire_id);
  running_.erase(it);
}

std::string Scheduler::at_running_cap(const std::string& handler) const {
  if (options_.test_ignore_running_cap) return {};
  if (options_.running_cap > 0 && running_.size() >= options_.running_cap) {
    return std::to_string(running_.size()) + " handlers running here, at this node's cap (max_running = " +
           std::to_string(options_.running_cap) + ")";
  }
  auto cap = options_.handler_caps.find(handler);
  if (cap == options_.handler_caps.end() || cap->second == 0) return {};
  auto n = running_per_handler_.find(handler);
  const uint32_t running = n == running_per_handler_.end() ? 0 : n->second;
  if (running < cap->second) return {};
  return std::to_string(running) + " runs of handler " + handler + " here, at its cap (max_running = " +
         std::to_string(cap->second) + ")";
}

void Scheduler::set_running_caps(uint32_t running_cap, std::map<std::string, uint32_t> handler_caps) {
  options_.running_cap = running_cap;
  options_.handler_caps = std::move(handler_caps);
}

void Scheduler::drop_held(uint64_t id) {
  if (auto it = running_.find(id); it != running_.end()) erase_running(it);
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->first.second == id) {
      held_.erase(it);
      return;
    }
  }
}

// A held run whose entry changed here before its instant, in a way that governs it (a
// delete, a pause, an edit written no later): it never starts, which the record says
// durably — the owner, and the replicas holding back their acknowledgements of the change
// (prepared_hold_mono), learn it from there.
void Scheduler::drop_superseded(const std::map<uint64_t, Running>::iterator& run, Clock now) {
  ++counters_.prepared_superseded;
  mark(Mark::kWorkerSuperseded);
  drop_held_run(run, "superseded before its instant: a newer version of the entry governs it", now);
}

bool Scheduler::prepared_never_started(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id,
                                       const WorkerRecord& rec, uint64_t* held_id) const {
  if (rec.worker.boot == self_.boot) {
    for (const auto& [id, run] : running_) {
      if (run.held && run.fire_id == fire_id && run.volume == volume && run.occ == occ) {
        *held_id = id;
        return true;
      }
    }
    return false;  // started (or finished, its record not written yet)
  }
  // A previous process ran it only once its clock read run_at.  Every clock is within
  // max_clock_skew of true time, so that process's clock read at most our start plus
  // twice the bound before it stopped.
  return rec.run_at_utc_ms > started_utc_ms_ + 2 * options_.max_clock_skew_ms;
}

void Scheduler::emit_run(FireEvent::Kind kind, const Running& r, bool ok, const std::string& detail, bool replaced) {
  emit_worker(kind, r.volume, r.occ, r.attempt, r.at_most_once, ok, detail, r.lateness_ms, replaced, r.run, r.runs,
              r.on_failure);
}

void Scheduler::emit_worker(FireEvent::Kind kind, const std::string& volume, const OccurrenceId& occ, uint32_t attempt,
                            bool at_most_once, bool ok, const std::string& detail, int64_t lateness_ms, bool replaced,
                            uint32_t run, uint32_t runs, const std::string& on_failure) {
  FireEvent& e = event_scratch_;  // every field is set: the event is the reused one
  e.kind = kind;
  e.volume = volume;
  e.occ = occ;
  e.node = self_.node;
  e.attempt = attempt;
  e.run = run;
  e.runs = runs;
  e.on_failure = on_failure;
  e.at_most_once = at_most_once;
  e.path = FirePath::kQuorum;
  e.ok = ok;
  e.lateness_ms = lateness_ms;
  e.replaced = replaced;
  e.detail = detail;
  host_.emit(e);
}

bool Scheduler::running_in(const std::string& volume) const {
  return std::any_of(running_.begin(), running_.end(), [&](const auto& r) { return r.second.volume == volume; });
}

void Scheduler::on_invocation_done(const InvocationResult& result, Clock now) {
  last_ = now;
  auto it = running_.find(result.id);
  if (it == running_.end()) return;
  const Running r = it->second;
  erase_running(it);
  WorkerRecord rec;
  rec.worker = self_;
  rec.attempt = r.attempt;
  rec.state = result.ok          ? WorkerState::kCompleted
              : result.replaced  ? WorkerState::kReplaced
              : result.timed_out ? WorkerState::kTimedOut
                                 : WorkerState::kFailed;
  rec.accepted_utc_ms = r.accepted_utc_ms;
  rec.finished_utc_ms = now.utc_ms;
  rec.run = r.run;
  rec.possible_duplicate = r.possible_duplicate;
  rec.detail = result.detail;
  // Written even when this node has stopped replicating the volume since it accepted the
  // attempt: the host keeps the departing volume open while a handler runs and hands the
  // record over with the rest.  Without it the run looked unfinished and a later takeover
  // could run an at-most-once occurrence again.
  put_worker_record(r.volume, r.occ, r.fire_id, rec, now, r.lazy_completion);
  if (result.ok) ++counters_.completed;
  else if (result.replaced) ++counters_.replaced;
  else ++counters_.failed;
  if (result.timed_out) ++counters_.timed_out;
  emit_run(FireEvent::Kind::kCompleted, r, result.ok, result.detail, !result.ok && result.replaced);
  if (Occ* o = find_occ(r.volume, r.occ)) touch(*o);
  drain(now);
}

}  // namespace caesium::schedule
