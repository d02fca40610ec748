// Scheduler: the replica side of claims — votes.  A round is first-come: round 0 (the
// ordinary claim) belongs to the first claimant that asks, a higher round to the first
// process that prepares it.  Everything a vote promises is durable before the reply
// leaves (the reply is sent after_durable).  A replica refuses to vote, in this order:
//   not a replica / malformed             abstain
//   the claim names older replica sets    stale (the claimant retries with our config)
//   this replica holds a newer version of the entry (an edit, a delete)   superseded
//   the round is held by another          held, naming the holder and its accepted value
//   due before this replica's amnesia horizon   abstain (it may have voted in a past life)
//   not due by this replica's clock       not due, with the delay
//   overlap = forbid (at-most-once): another occurrence of the entry accepted here may be
//   running                               overlap (a wiped replica: abstain)
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {
namespace {

void describe(ClaimReply& reply, const Vote& v) {
  reply.promised_round = v.promised_round;
  reply.has_accepted = v.has_accepted;
  reply.accepted_round = v.accepted_round;
  reply.accepted_by = v.accepted_by;
  reply.accepted = v.accepted;
}

}  // namespace

bool Scheduler::stale_claim(const Claim& c) const {
  if (c.config_epoch >= topology_.epoch) return false;       // ours is not newer
  if (c.config_epoch == 0 && c.sets_hash == 0) return false;  // a sender without the fields
  auto it = topology_.volumes.find(c.volume);
  return it != topology_.volumes.end() && it->second.sets_hash != c.sets_hash;
}

// A newer record of the entry supersedes a claim when it deletes or pauses the entry, or
// when it is an edit made before the occurrence was due: an edit governs what falls due
// after it (its version's time), and an occurrence already due when it was written still
// runs.
bool Scheduler::superseded_claim(const Claim& c) const {
  return c.kind != ClaimKind::kPrepare && superseded_here(c.volume, c.occ.entry_key, c.entry_version, c.fire_utc_ms);
}

// An edit governs what falls due after it; a delete or a pause everything not yet run.
bool Scheduler::superseded_here(const std::string& volume, const std::string& key, const Version& decided,
                                int64_t fire_utc_ms) const {
  if (decided.physical_ms == 0) return false;  // not said: never refused so
  const std::optional<Version> mine = host_.entry_version(volume, key);
  if (!mine || !(decided < *mine)) return false;
  return stops_everything(volume, key) || fire_utc_ms >= mine->physical_ms;
}

// The entry's record here deletes or pauses it: nothing of it not yet dispatched runs.
bool Scheduler::stops_everything(const std::string& volume, const std::string& key) const {
  const std::optional<std::string> value = host_.store_get(volume, key);
  if (!value) return true;
  const Result<Entry> entry = decode_entry(*value);
  return entry.ok() && entry->paused;
}

// The refusals that need no vote: not a replica, malformed, stale, superseded.  Returns
// whether it answered.
bool Scheduler::refuse_before_vote(const std::string& from, const Claim& c, ClaimReply& reply) {
  const bool test_any = options_.test_grant_every_claim;
  const bool well_formed =
      (c.kind == ClaimKind::kClaim) == (c.round == 0) || c.kind == ClaimKind::kAccept || c.kind == ClaimKind::kCheck;
  if (!is_replica(c.volume) || c.claimant.node != from || !well_formed) {
    host_.send(from, std::move(reply), false);
    return true;
  }
  if (stale_claim(c) && !test_any) {
    // The claimant missed a change of this volume's replica sets: granting it could
    // complete a majority of sets the cluster has left, while the new sets decide too.
    ++counters_.stale_claims_refused;
    mark(Mark::kVoteStale);
    reply.outcome = ClaimOutcome::kStale;
    reply.retry_after_ms = options_.claim_retry_ms;
    host_.send(from, std::move(reply), false);
    return true;
  }
  if (superseded_claim(c) && !test_any) {
    // The claim decides under a definition of the entry this replica has seen replaced
    // (an edit) or removed (a delete).  Refused before any vote: so once a majority holds
    // the change, no claim of the old definition can win one.
    ++counters_.superseded_claims_refused;
    mark(Mark::kVoteSuperseded);
    reply.outcome = ClaimOutcome::kSuperseded;
    host_.send(from, std::move(reply), false);
    return true;
  }
  if (c.kind != ClaimKind::kCheck && !test_any) {
    // This replica holds the worker record that o ran (and no retry follows): no vote for
    // a run of o.  The records of an occurrence reach every replica of a new set before
    // the old set leaves (the fill rule, docs/firing.md Replica changes), while the votes
    // stay with the replicas that gave them: without this a majority of the new set,
    // holding no vote of o, could grant a second run of o that a majority of the old set
    // granted and ran (tests/sim/regress_reconfig_seed_1359.toml).
    Occ* o = find_occ(c.volume, c.occ);
    if (o != nullptr && runs_over(*o)) {
      ++counters_.ran_claims_refused;
      mark(Mark::kVoteRan);
      reply.outcome = ClaimOutcome::kRan;
      host_.send(from, std::move(reply), false);
      return true;
    }
  }
  return false;
}

// A wiped replica may have accepted, in its previous life, an attempt of an occurrence of
// c's entry due at or before its amnesia horizon (+ prepare_ahead), and that run may still
// be going on.  Only entries with such an occurrence are concerned, and only while such a
// run can last: dispatched within the entry's misfire window, then bounded by its timeout
// (+ kOverlapKillGraceMs for the stop); without a timeout, by the occurrence retention
// (beyond which no replica remembers a vote anyway).
bool Scheduler::amnesia_blocks_overlap(const Claim& c, Clock now) const {
  if (amnesia_horizon_utc_ms_ == 0) return false;
  const int64_t horizon = amnesia_horizon_utc_ms_ + options_.prepare_ahead_ms;
  const std::optional<std::string> value = host_.store_get(c.volume, c.occ.entry_key);
  const Result<Entry> entry = value ? decode_entry(*value) : Result<Entry>(Error("no entry"));
  if (!entry.ok()) return now.utc_ms <= horizon + options_.occurrence_retention_ms;
  const std::optional<int64_t> first = next_occurrence(*entry, entry->created_utc_ms - 1);
  if (!first || *first > horizon) return false;
  const int64_t run_bound_ms = entry->timeout_ms > 0
                                   ? entry->misfire_window_ms + entry->timeout_ms + kOverlapKillGraceMs
                                   : options_.occurrence_retention_ms;
  return now.utc_ms <= horizon + run_bound_ms;
}

// overlap = forbid, at-most-once (scheduler_overlap.cpp): a new acceptance is refused
// while another occurrence of the entry accepted here may be running.  A repeat of what
// this replica already accepted is answered as before (it adds nothing).  A wiped replica
// lost the votes it gave before its horizon, and any of them may name a run still going:
// it abstains on forbid claims until those votes would have expired anyway.  Returns
// whether it answered.
bool Scheduler::refuse_overlap(const std::string& from, const Claim& c, const Vote* mine, ClaimReply& reply,
                               Clock now) {
  if (!c.forbid_overlap || c.kind == ClaimKind::kPrepare || options_.test_grant_ignores_overlap) return false;
  if (mine != nullptr && mine->has_accepted &&
      (mine->accepted.fire_id == c.attempt.fire_id || (c.kind == ClaimKind::kClaim && mine->promised_by == c.claimant))) {
    return false;
  }
  if (amnesia_blocks_overlap(c, now)) {
    mark(Mark::kVoteAbstainAmnesia);
    host_.send(from, std::move(reply), false);  // kAbstain
    return true;
  }
  if (!overlap_vote(c)) return false;
  ++counters_.overlap_refused;
  mark(Mark::kVoteOverlapRefused);
  reply.outcome = ClaimOutcome::kOverlap;
  reply.retry_after_ms = options_.claim_retry_ms;
  host_.send(from, std::move(reply), false);
  return true;
}

void Scheduler::on_claim(const std::string& from, const Claim& c, Clock now) {
  ClaimReply reply;
  reply.volume = c.volume;
  reply.occ = c.occ;
  reply.outcome = ClaimOutcome::kAbstain;
  reply.kind = c.kind;
  reply.round = c.round;
  reply.lease = c.lease;
  const bool test_any = options_.test_grant_every_claim;
  if (refuse_before_vote(from, c, reply)) return;
  if (c.kind == ClaimKind::kCheck) {
    // The definition stands here: no vote, nothing written.  The answer still holds back
    // this replica's acknowledgements of the entry's writes (ack_hold_until_mono).
    if (c.occ.scheduled_utc_ms >= now.utc_ms - options_.occurrence_retention_ms) {
      track(c.volume, c.occ, now).granted_mono_ms = now.mono_ms;
    }
    reply.outcome = ClaimOutcome::kGranted;
    reply.holder = c.claimant;
    host_.send(from, std::move(reply), false);
    return;
  }
  // Interned only when a vote is stored (intern's contract): a refused claim leaves no id.
  const std::optional<OccKey> known = known_occ_key(c.volume, c.occ);
  auto it = known ? votes_.find(*known) : votes_.end();
  const bool same_round =
      it != votes_.end() && it->second.promised_round == c.round && it->second.promised_by == c.claimant;
  bool allowed = it == votes_.end() || same_round;
  if (c.kind != ClaimKind::kClaim && it != votes_.end()) allowed = allowed || c.round > it->second.promised_round;
  if (!allowed && !test_any) {
    reply.outcome = ClaimOutcome::kHeld;
    reply.holder = it->second.promised_by;
    reply.holder_alive = owner_alive(it->second.promised_by);
    describe(reply, it->second);
    host_.send(from, std::move(reply), false);
    return;
  }
  // Preparing ahead, a replica votes on o from prepare_ahead before F (so a previous life
  // may have voted that much further ahead too).  Not early is then the worker's clock
  // check at F (start_held), no longer the grant's.
  const int64_t ahead = options_.prepare_ahead_ms;
  if (it == votes_.end() && amnesia_horizon_utc_ms_ != 0 && c.fire_utc_ms <= amnesia_horizon_utc_ms_ + ahead &&
      !test_any) {
    mark(Mark::kVoteAbstainAmnesia);
    host_.send(from, std::move(reply), false);
    return;
  }
  if (!same_round && now.utc_ms < c.fire_utc_ms - ahead) {
    // Never promise before o is due by this replica's own clock, so a master whose clock
    // runs ahead cannot fire early on its own.
    mark(Mark::kVoteNotDue);
    reply.outcome = ClaimOutcome::kNotDue;
    reply.retry_after_ms = c.fire_utc_ms - ahead - now.utc_ms;
    host_.send(from, std::move(reply), false);
    return;
  }
  if (refuse_overlap(from, c, it == votes_.end() ? nullptr : &it->second, reply, now)) return;
  grant(from, c, reply, now);
}

// Promises c's round to the claimant and, unless c is a prepare, accepts its attempt —
// durably — then answers.
void Scheduler::grant(const std::string& from, const Claim& c, ClaimReply& reply, Clock now) {
  const OccKey key = occ_key(c.volume, c.occ);
  auto it = votes_.find(key);
  const bool same_round =
      it != votes_.end() && it->second.promised_round == c.round && it->second.promised_by == c.claimant;
  assert(it == votes_.end() || same_round || c.round > it->second.promised_round || options_.test_grant_every_claim);
  Vote v = it == votes_.end() ? Vote{} : it->second;
  v.promised_round = c.round;
  v.promised_by = c.claimant;
  if (c.kind != ClaimKind::kPrepare) {
    // Accept the attempt, unless this is a repeat of an older one of the same round
    // arriving late (a proposer moves to attempt n+1 only after n was revoked), or a
    // repeated round-0 claim of the same claimant: the first attempt it accepted stays.
    const bool stale = same_round && v.has_accepted && v.accepted_round == c.round && c.attempt.attempt < v.accepted.attempt;
    const bool keep_first = c.kind == ClaimKind::kClaim && same_round && v.has_accepted;
    if (!stale && !keep_first) {
      v.has_accepted = true;
      v.accepted_round = c.round;
      v.accepted_by = c.claimant;
      v.accepted = c.attempt;
      v.ended = false;
    }
  }
  check_vote(v);
  if (it == votes_.end()) {
    ++counters_.granted;
    votes_.emplace(key, v);
    vote_keys_by_entry_.insert(key);
    retain_interned(key.entry);
    host_.local_put(grant_key(c.volume, c.occ), encode(v));
  } else if (!(v == it->second)) {
    it->second = v;
    host_.local_put(grant_key(c.volume, c.occ), encode(v));
  }
  if (c.kind != ClaimKind::kPrepare && c.occ.scheduled_utc_ms >= now.utc_ms - options_.occurrence_retention_ms) {
    Occ& o = track(c.volume, c.occ, now);
    o.holder = c.claimant;
    o.granted_mono_ms = now.mono_ms;  // may lead to a dispatch: holds acks of its entry's writes
  }
  reply.outcome = ClaimOutcome::kGranted;
  reply.holder = c.claimant;
  describe(reply, v);
  if (c.kind == ClaimKind::kPrepare) reply.went = went(v, c.fire_utc_ms);
  host_.send(from, std::move(reply), true);
  emit_grant(c);
}

// Observable (debug log, simulator checker): the attempt a grant accepted names the
// worker the claimant may dispatch to as soon as it holds a quorum.
void Scheduler::emit_grant(const Claim& c) {
  if (c.attempt.worker.empty()) return;
  FireEvent& e = event_scratch_;  // every field is set: the event is the reused one
  e.kind = FireEvent::Kind::kGranted;
  e.volume = c.volume;
  e.occ = c.occ;
  e.node = c.claimant.node;
  e.attempt = c.attempt.attempt;
  e.run = 0;
  e.at_most_once = false;
  e.path = FirePath::kQuorum;
  e.ok = true;
  e.lateness_ms = 0;
  e.replaced = false;
  e.detail = c.attempt.worker;
  host_.emit(e);
}

// A grant for an occurrence of the entry, given within the claim lease, that may still be
// dispatched: the claimant counts it only within claim_lease_ms of asking, so once this
// replica's acknowledgement of a delete or edit goes out (after this hold), no claim it
// granted under the old definition can still win a majority and dispatch.  A grant whose
// accepted attempt a worker record shows is past that (it was dispatched before).  Votes
// a previous process gave are not timed: everything waits the hold after a restart.
int64_t Scheduler::ack_hold_until_mono(const std::string& volume, const std::string& key,
                                       int64_t written_mono_ms) const {
  int64_t hold = restored_votes_ ? started_mono_ms_ + ack_hold_ms() : 0;
  const auto id = find_interned(volume, key, SlotIndex::tag(interned_hash(volume, key)));
  if (!id) return hold;
  for (auto it = occs_.lower_bound(OccKey{*id, INT64_MIN}); it != occs_.end() && it->first.entry == *id; ++it) {
    const Occ& o = it->second;
    hold = std::max(hold, prepared_hold_mono(it->first, o, written_mono_ms));
    // Finished here or not: the write being acknowledged may be what finished o on this
    // node (a delete skips it), while the grant still counts at its claimant.
    if (o.granted_mono_ms == 0 || o.granted_mono_ms + ack_hold_ms() <= hold) continue;
    auto v = votes_.find(it->first);
    if (v != votes_.end() && v->second.has_accepted && o.worker_records.count(v->second.accepted.fire_id) > 0) continue;
    hold = o.granted_mono_ms + ack_hold_ms();
  }
  return hold;
}

// Preparing ahead, an accepted attempt may be dispatched long before its instant, and its
// worker starts it then without asking anyone.  A write that reached this replica while it
// held such an attempt (accepted before `written_mono_ms`: under the version the write
// replaces) is acknowledged only once the attempt can no longer start under the old
// definition: its worker's record says it never runs (refused, revoked — the owner
// revokes it, supersede_owned) or already started, or its instant passed on every clock
// (F + 2 max_clock_skew here).  So a write acknowledged by a majority before F — which
// meets every majority that accepted the attempt — stops the run (docs/firing.md,
// Preparing ahead).
int64_t Scheduler::prepared_hold_mono(const OccKey& key, const Occ& o, int64_t written_mono_ms) const {
  // Whether o is finished on this node does not matter: the vote does.  The write itself
  // finishes o here (a delete skips it) before this replica acknowledges it, and the
  // attempt this vote accepted still starts at its worker (tests/sim/regress_plain_seed_7277.toml: the replica
  // that took a delete had accepted the prepared attempt, skipped o, and acknowledged at
  // once; with a replica that never accepted it that made a majority before F).
  if (options_.prepare_ahead_ms == 0 || o.granted_mono_ms > written_mono_ms) return 0;
  const auto v = votes_.find(key);
  if (v == votes_.end() || !v->second.has_accepted || v->second.ended) return 0;
  if (auto w = o.worker_records.find(v->second.accepted.fire_id); w != o.worker_records.end()) {
    if (w->second.state != WorkerState::kAccepted || w->second.run_at_utc_ms == 0) return 0;
  }
  // At most prepare_ahead + 2 max_clock_skew away: a grant comes no earlier.
  assert(options_.max_clock_skew_ms >= 0);
  return utc_to_mono(o.fire_utc_ms + 2 * options_.max_clock_skew_ms);
}

// Only an ordinary (round 0) claim that was never taken over may be handed back.
void Scheduler::on_release(const Release& r) {
  const auto key = known_occ_key(r.volume, r.occ);
  if (!key) return;
  auto it = votes_.find(*key);
  if (it == votes_.end() || it->second.promised_round != 0 || !(it->second.promised_by == r.claimant)) return;
  drop_vote(it);
  if (Occ* o = find_occ(r.volume, r.occ); o && o->holder && *o->holder == r.claimant) o->holder.reset();
}

}  // namespace caesium::schedule
