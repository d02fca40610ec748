// Scheduler: inputs, the worklist, deadlines, purging.
//
// Every input (`on_*`, `set_*`) updates what this node knows and marks the occurrences it
// touched; `drain` then steps each marked occurrence by its phase (firing_state.h):
//   Tracking, Withheld  decide               scheduler_decide.cpp
//   Claiming            claim_step           scheduler_claim.cpp
//   Preparing           prepare_step         scheduler_rounds.cpp
//   Owned               owner_step           scheduler_owner.cpp
// A step may change the phase (scheduler_transitions.cpp), which marks the occurrence
// again; it never calls another step.  Deadlines are per occurrence and per reason; the
// mono wheel holds each occurrence's earliest, and its expiry marks the occurrence.
#include <algorithm>
#include <cassert>

#include "base/check.h"
#include "base/hash.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"
#include "schedule/timing.h"

namespace caesium::schedule {

const char* to_string(FireEvent::Kind k) {
  switch (k) {
    case FireEvent::Kind::kDue: return "due";
    case FireEvent::Kind::kOwned: return "owned";
    case FireEvent::Kind::kDispatched: return "dispatched";
    case FireEvent::Kind::kAccepted: return "accepted";
    case FireEvent::Kind::kCompleted: return "completed";
    case FireEvent::Kind::kWithheld: return "withheld";
    case FireEvent::Kind::kMissed: return "missed";
    case FireEvent::Kind::kLost: return "lost";
    case FireEvent::Kind::kSkipped: return "skipped";
    case FireEvent::Kind::kSkippedOverlap: return "skipped_overlap";
    case FireEvent::Kind::kRetryScheduled: return "retry_scheduled";
    case FireEvent::Kind::kRedispatched: return "redispatched";
    case FireEvent::Kind::kGranted: return "granted";
    case FireEvent::Kind::kDeferred: return "deferred";
    case FireEvent::Kind::kStarted: return "started";
  }
  return "?";
}

const char* firing::to_string(Deadline d) {
  switch (d) {
    case Deadline::kResend: return "resend";
    case Deadline::kNotDue: return "not_due";
    case Deadline::kGiveUp: return "give_up";
    case Deadline::kWindow: return "window";
    case Deadline::kHolderRecheck: return "holder_recheck";
    case Deadline::kOwnerSilence: return "owner_silence";
    case Deadline::kOwnerStall: return "owner_stall";
    case Deadline::kBackoff: return "backoff";
    case Deadline::kQuorumRetry: return "quorum_retry";
    case Deadline::kAccept: return "accept";
    case Deadline::kComplete: return "complete";
    case Deadline::kTakeoverWait: return "takeover_wait";
    case Deadline::kNoWorker: return "no_worker";
    case Deadline::kBackup: return "backup";
    case Deadline::kRetry: return "retry";
    case Deadline::kInstant: return "instant";
    case Deadline::kCount: break;
  }
  return "?";
}

Scheduler::Scheduler(ProcessId self, SchedulerOptions options, SchedulerHost& host, int64_t start_mono_ms,
                     int64_t start_utc_ms)
    : self_(std::move(self)),
      options_(options),
      host_(host),
      last_{start_mono_ms, start_utc_ms},
      utc_wheel_(start_utc_ms),
      mono_wheel_(start_mono_ms),
      started_utc_ms_(start_utc_ms),
      started_mono_ms_(start_mono_ms) {
#ifndef NDEBUG
  options_.check_invariants = true;
#endif
}

Scheduler::~Scheduler() = default;

// --- configuration and view ---------------------------------------------------------------

uint64_t sets_hash(const Topology::Volume& v) {
  uint64_t h = hash64("caesium-replica-sets");
  for (const auto& r : v.replicas) h = hash_combine(h, hash64(r));
  h = hash_combine(h, v.replicas.size());
  for (const auto& r : v.previous_replicas) h = hash_combine(h, hash64(r));
  return hash_combine(h, v.previous_replicas.size());
}

void Scheduler::set_topology(Topology topology, Clock now) {
  last_ = now;
  topology_ = std::move(topology);
  for (auto& [name, v] : topology_.volumes) v.sets_hash = sets_hash(v);
  volume_quorum_sets_.clear();
  const Entry unbound;  // no binding: every replica is eligible
  for (const auto& [name, v] : topology_.volumes) {
    volume_quorum_sets_[name] = make_quorum_sets(&v, unbound);
    auto [since, fresh] = sets_since_.try_emplace(name, v.sets_hash, now.utc_ms);
    if (!fresh && since->second.first != v.sets_hash) since->second = {v.sets_hash, now.utc_ms};
  }
  // Entries of volumes this node no longer replicates are dropped from the index.
  std::vector<std::pair<std::string, std::string>> gone;
  for (const EntryRec& rec : entries_) {
    if (rec.live && !is_replica(volume_names_[rec.volume])) gone.emplace_back(volume_names_[rec.volume], key_of(rec));
  }
  for (const auto& [volume, key] : gone) remove_entry(volume, key);
  for (const auto& [name, v] : topology_.volumes) dirty_volumes_.insert(name);
}

void Scheduler::set_master(const std::string& volume, bool master, Clock now) {
  last_ = now;
  const bool was = masters_.count(volume) > 0;
  if (master == was) return;
  if (master) {
    masters_.insert(volume);
    dirty_volumes_.insert(volume);
  } else {
    masters_.erase(volume);
  }
}

void Scheduler::set_backup_rank(const std::string& volume, uint32_t rank, Clock now) {
  last_ = now;
  auto it = backup_ranks_.find(volume);
  const uint32_t was = it == backup_ranks_.end() ? 0 : it->second;
  if (rank == was) return;
  if (rank == 0) backup_ranks_.erase(volume);
  else backup_ranks_[volume] = rank;
  dirty_volumes_.insert(volume);
}

void Scheduler::set_active(bool active, Clock now) {
  last_ = now;
  if (active && !active_) {
    active_since_mono_ms_ = now.mono_ms;
    for (const auto& v : masters_) dirty_volumes_.insert(v);
    for (const auto& [v, rank] : backup_ranks_) dirty_volumes_.insert(v);
  }
  active_ = active;
}

// The held runs never start once this process is gone, and their owners could not tell
// that from its silence: a run held here for F might have started had the process been
// cut off instead of stopped, so an at-most-once one would be reported lost (and an
// at-least-once one run again, flagged).  The revoked records say it never ran, durably
// before the process exits (the host flushes its storage on leave); whoever owns the
// occurrence then runs it elsewhere, as after any revoke (tests/sim/prepared_graceful_leave.toml).
void Scheduler::leave(Clock now) {
  set_active(false, now);
  leaving_ = true;
  for (auto it = running_.begin(); it != running_.end();) {
    auto next = std::next(it);
    if (it->second.held) {
      mark(Mark::kHeldDroppedOnLeave);
      drop_held_run(it, "its worker stopped before its instant (graceful leave): never started", now);
    }
    it = next;
  }
  held_.clear();
  go_parked_.clear();
  drain(now);
}

void Scheduler::on_peer_change(const std::string& node, Clock now) {
  last_ = now;
  // Owner duties first: a worker of ours may have died.
  for (auto& [key, o] : occs_) {
    if (!o.is<firing::Owned>()) continue;
    const auto& attempts = o.as<firing::Owned>().attempts;
    if (!attempts.empty() && attempts.back().info.worker == node) {
      touch(o);
      drain(now);
    }
  }
  // Every volume is decided again: an owner or a holder may have vanished, quorum may
  // have changed.
  for (const auto& [name, v] : topology_.volumes) dirty_volumes_.insert(name);
}

bool Scheduler::is_replica(const std::string& volume) const {
  auto it = topology_.volumes.find(volume);
  if (it == topology_.volumes.end()) return false;
  const auto& r = it->second.replicas;
  const auto& p = it->second.previous_replicas;
  return std::binary_search(r.begin(), r.end(), self_.node) || std::binary_search(p.begin(), p.end(), self_.node);
}

// --- inputs -----------------------------------------------------------------------------------

void Scheduler::on_record(const std::string& volume, const std::string& key,
                          const std::optional<std::string>& value, Clock now) {
  last_ = now;
  if (!is_replica(volume)) return;
  if (is_entry_key(key)) {
    if (!value) {
      remove_entry(volume, key);
    } else if (auto entry = decode_entry(*value); entry.ok()) {
      upsert_entry(volume, key, *entry, now);
    } else {
      ++counters_.bad_records;
    }
    entry_changed(volume, key, now);
    return;
  }
  if (!is_occ_key(key)) return;
  // Parsed into a member whose strings keep their storage from one record to the next.
  ParsedOccKey& parsed = parsed_scratch_;
  if (!parse_occ_key(key, parsed)) {
    ++counters_.bad_records;
    return;
  }
  switch (parsed.kind) {
    case ParsedOccKey::Kind::kOwner: on_owner_record(volume, parsed, value, now); break;
    case ParsedOccKey::Kind::kWorker: on_worker_record(volume, parsed, value, now); break;
    case ParsedOccKey::Kind::kReplace: on_replace_record(volume, parsed, value, now); break;
  }
}

void Scheduler::settle(Clock now) {
  last_ = now;
  drain(now);
}

void Scheduler::on_local_record(const std::string& key, const std::string& value) {
  auto parsed = parse_grant_key(key);
  if (!parsed) {
    ++counters_.bad_records;
    return;
  }
  auto vote = decode_vote(value);
  if (!vote.ok()) {
    ++counters_.bad_records;
    return;
  }
  const OccKey k = occ_key(parsed->volume, parsed->occ);
  if (votes_.insert_or_assign(k, std::move(*vote)).second) {
    vote_keys_by_entry_.insert(k);
    retain_interned(k.entry);
  }
  restored_votes_ = true;
}

void Scheduler::on_message(const std::string& from, const FireMessage& msg, Clock now) {
  last_ = now;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Claim>) on_claim(from, m, now);
        else if constexpr (std::is_same_v<T, ClaimReply>) on_claim_reply(from, m, now);
        else if constexpr (std::is_same_v<T, Release>) on_release(m);
        else if constexpr (std::is_same_v<T, Dispatch>) on_dispatch(from, m, now);
        else if constexpr (std::is_same_v<T, DispatchReply>) on_dispatch_reply(from, m, now);
        else if constexpr (std::is_same_v<T, Revoke>) on_revoke(from, m, now);
        else if constexpr (std::is_same_v<T, RevokeReply>) on_revoke_reply(from, m, now);
        else if constexpr (std::is_same_v<T, Go>) on_go(from, m, now);
        else if constexpr (std::is_same_v<T, GoAsk>) on_go_ask(from, m, now);
        else if constexpr (std::is_same_v<T, GoAnswer>) on_go_answer(from, m, now);
      },
      msg);
  drain(now);
}

void Scheduler::on_tick(Clock now) {
  last_ = now;
  drain(now);  // records applied since the last input
  poll_due_entries(now);
  poll_timers(now);
  send_gos(now);
  start_held(now);
  drain(now);  // fences and dropped held runs touched occurrences
  if (!dirty_volumes_.empty()) {
    std::set<std::string> dirty;
    dirty.swap(dirty_volumes_);
    for (const auto& v : dirty) {
      touch_volume(v);
      drain(now);
    }
  }
  if (now.mono_ms >= next_purge_mono_ms_) {
    next_purge_mono_ms_ = now.mono_ms + 5'000;
    purge(now);
  } else if (votes_expiring_) {
    purge_votes(now);
  }
}

int64_t Scheduler::next_deadline_mono() const {
  int64_t best = kNever;
  if (utc_wheel_.size() > 0) {
    if (auto d = utc_wheel_.next_deadline()) best = std::min(best, utc_to_mono(*d));
  }
  if (mono_wheel_.size() > 0) {
    if (auto d = mono_wheel_.next_deadline()) best = std::min(best, *d);
  }
  if (!held_.empty()) best = std::min(best, utc_to_mono(held_.begin()->first.first));
  if (!go_out_.empty()) {
    if (const int64_t go = next_go_utc_ms(); go != kNever) best = std::min(best, utc_to_mono(go));
  }
  if (!dirty_volumes_.empty() || !worklist_.empty()) best = std::min(best, last_.mono_ms);
  if (!due_backlog_.empty()) best = std::min(best, last_.mono_ms);
  if (!occs_.empty() || !votes_.empty()) best = std::min(best, votes_expiring_ ? last_.mono_ms : next_purge_mono_ms_);
  return best;
}

// --- occurrences ---------------------------------------------------------------------------------

Scheduler::Occ& Scheduler::track(const std::string& volume, const OccurrenceId& id, Clock now, const Entry* entry) {
  (void)now;
  const OccKey key = occ_key(volume, id);
  auto it = occs_.find(key);
  if (it != occs_.end()) return it->second;
  Occ& o = occs_[key];
  retain_interned(key.entry);
  o.serial = next_serial_++;
  o.volume = volume;
  o.id = id;
  o.fire_utc_ms = id.scheduled_utc_ms;
  std::shared_ptr<const Entry> loaded;
  if (entry == nullptr && entry_of(volume, id.entry_key) != nullptr) {
    loaded = load_entry(volume, id.entry_key);
    entry = loaded.get();
  }
  if (entry != nullptr) {
    o.fire_utc_ms = fire_time(*entry, id.scheduled_utc_ms);
    o.at_most_once = entry->semantics == Semantics::at_most_once;
  }
  occ_by_serial_[o.serial] = &o;
  return o;
}

Scheduler::Occ* Scheduler::find_occ(const std::string& volume, const OccurrenceId& id) {
  const auto key = known_occ_key(volume, id);
  if (!key) return nullptr;
  auto it = occs_.find(*key);
  return it == occs_.end() ? nullptr : &it->second;
}

bool Scheduler::withheld(const std::string& volume, const OccurrenceId& id) const {
  const auto key = known_occ_key(volume, id);
  if (!key) return false;
  auto it = occs_.find(*key);
  return it != occs_.end() && it->second.is<firing::Withheld>();
}

void Scheduler::touch(Occ& o) {
  if (o.queued) return;
  o.queued = true;
  worklist_.push_back(o.serial);
}

void Scheduler::touch_volume(const std::string& volume) {
  // In key order; drain steps the last marked first, so they are marked in reverse.
  std::vector<Occ*> marked;
  for (auto& [key, o] : occs_) {
    if (o.volume == volume && !o.finished()) marked.push_back(&o);
  }
  for (auto it = marked.rbegin(); it != marked.rend(); ++it) touch(**it);
}

void Scheduler::drain(Clock now) {
  // A step that changes the phase marks its occurrence again; a cycle of transitions
  // without progress would never end, so the steps of one drain are bounded.
  if (claims_waiting_) admit_claims();
  size_t steps = 0;
  const size_t bound = 64 * (worklist_.size() + 1);
  while (!worklist_.empty()) {
    const uint64_t serial = worklist_.back();
    worklist_.pop_back();
    auto it = occ_by_serial_.find(serial);
    if (it == occ_by_serial_.end()) continue;
    Occ& o = *it->second;
    o.queued = false;
    step(o, now);
    o.fired = 0;
    o.claim_let_through = false;  // good for the step it was let through for only
    sync_timer(o);
    if (options_.check_invariants) check_occ(o);
    CAESIUM_ASSERT(++steps <= bound);
  }
}

void Scheduler::step(Occ& o, Clock now) {
  if (o.finished()) return;
  if (runs_over(o)) {
    // A worker ran it (and no retry follows): whatever this node was doing about o is over.
    if (o.is<firing::Claiming>()) release_grants(o);
    to_finished(o, Outcome::kDone, "", now);
    return;
  }
  std::visit(
      [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, firing::Tracking> || std::is_same_v<P, firing::Withheld>) decide(o, now);
        else if constexpr (std::is_same_v<P, firing::Claiming>) claim_step(o, now);
        else if constexpr (std::is_same_v<P, firing::Preparing>) prepare_step(o, now);
        else if constexpr (std::is_same_v<P, firing::Owned>) owner_step(o, now);
      },
      o.phase);
}

// --- deadlines ------------------------------------------------------------------------------------

int64_t Scheduler::utc_to_mono(int64_t utc_ms) const {
  if (utc_ms == kNever) return kNever;
  return last_.mono_ms + (utc_ms - last_.utc_ms);
}

// O4 (firing_state.h): a deadline is never armed in the past.  A step woken by one would
// arm it again and be woken again at once, for ever.  (A deadline may pass unpolled while
// an input arrives before the tick that polls it; that one is on the wheel.)
void Scheduler::set_deadline(Occ& o, Deadline d, int64_t mono_ms) {
  CAESIUM_ASSERT(mono_ms == kNever || mono_ms > last_.mono_ms);
  o.deadlines[d] = mono_ms;
}

// Puts the occurrence's earliest deadline on the wheel (after every step; a step may
// have moved several).
void Scheduler::sync_timer(Occ& o) {
  const int64_t at = o.deadlines.earliest();
  if (o.timer_armed) {
    if (o.timer_mono_ms == at) return;
    mono_wheel_.cancel(o.timer);
    o.timer_armed = false;
  }
  o.timer_mono_ms = at;
  if (at == kNever) return;
  o.timer = mono_wheel_.insert(at, o.serial);
  o.timer_armed = true;
}

// The wheel's expired occurrences: their expired deadlines are cleared (a step arms again
// what it still needs) and each is stepped.
void Scheduler::poll_timers(Clock now) {
  std::vector<uint64_t> expired;
  if (mono_wheel_.size() > 0) mono_wheel_.poll(now.mono_ms, [&](const wheel::Expired& e) { expired.push_back(e.payload); });
  for (uint64_t serial : expired) {
    auto it = occ_by_serial_.find(serial);
    if (it == occ_by_serial_.end()) continue;
    Occ& o = *it->second;
    o.timer_armed = false;
    o.timer_mono_ms = kNever;
    for (size_t d = 0; d < o.deadlines.at.size(); ++d) {
      if (o.deadlines.at[d] > now.mono_ms) continue;
      o.deadlines.at[d] = kNever;
      o.fired |= 1u << d;
    }
    touch(o);
    drain(now);
  }
}

// --- purging --------------------------------------------------------------------------------------

void Scheduler::purge(Clock now) {
  for (auto it = occs_.begin(); it != occs_.end();) {
    Occ& o = it->second;
    const bool linger_over = o.finished() && now.mono_ms - o.as<firing::Finished>().since_mono_ms > options_.terminal_linger_ms;
    // Unresolved occurrences this node only tracked are forgotten well after any
    // decision could still be made about them.
    const int64_t window = o.entry ? o.entry->misfire_window_ms : 0;
    const bool stale = o.is<firing::Tracking>() && now.utc_ms - due_utc_ms(o) > window + 2 * options_.terminal_linger_ms;
    const bool expired = o.id.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms;
    const bool in_flight = o.is<firing::Owned>() || o.is<firing::Claiming>();
    auto next = std::next(it);
    if ((linger_over || stale || expired) && !in_flight) forget(it);
    it = next;
  }
  purge_votes(now);
}

void Scheduler::forget(std::map<OccKey, Occ>::iterator it) {
  Occ& o = it->second;
  settle_forgotten(o);
  if (o.timer_armed) mono_wheel_.cancel(o.timer);
  if (auto* own = std::get_if<firing::Owned>(&o.phase)) {
    for (auto& a : own->attempts) uncount(a);
  }
  occ_by_serial_.erase(o.serial);
  const uint32_t id = it->first.entry;
  occs_.erase(it);
  release_interned(id);
}

void Scheduler::purge_votes(Clock now) {
  // Votes are ordered by instant, so the expired ones are a prefix.  A burst's votes
  // expire together a retention after it; at most purge_step of them go per turn, and
  // on_tick comes back at once for the rest (next_deadline_mono).
  size_t budget = std::max<size_t>(options_.purge_step, 1);
  auto expired = [&] {
    return !votes_.empty() && votes_.begin()->first.scheduled_utc_ms < now.utc_ms - options_.occurrence_retention_ms;
  };
  for (; budget > 0 && expired(); --budget) drop_vote(votes_.begin());
  votes_expiring_ = expired();
}

void Scheduler::drop_vote(Votes::iterator it) {
  const OccKey k = it->first;
  const InternedEntry& e = interned_[k.entry];
  host_.local_erase(grant_key(e.volume, OccurrenceId{e.entry_key, k.scheduled_utc_ms}));
  votes_.erase(it);
  vote_keys_by_entry_.erase(k);
  release_interned(k.entry);
}

// --- events --------------------------------------------------------------------------------------

void Scheduler::emit(FireEvent::Kind kind, const Occ& o, Clock now, const std::string& node, uint32_t attempt,
                     const std::string& detail, bool ok) {
  // Every field is set: the event is the reused one (event_scratch_).
  FireEvent& e = event_scratch_;
  e.kind = kind;
  e.volume = o.volume;
  e.occ = o.id;
  e.node = node;
  e.attempt = attempt;
  e.run = 0;
  e.runs = 0;
  e.on_failure.clear();
  e.at_most_once = o.at_most_once;
  e.path = o.path;
  e.ok = ok;
  e.lateness_ms = now.utc_ms - o.fire_utc_ms;
  e.replaced = false;
  e.detail = detail;
  host_.emit(e);
}

}  // namespace caesium::schedule
