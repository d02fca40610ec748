// Scheduler: the replicas' go (docs/firing.md, Preparing ahead, "The replicas' go").
//
// The owner's go (scheduler_go.cpp) lets an owner that hears its worker stop a held run.
// It cannot help when the owner itself is gone or cut off before the instant F: a worker
// that went with it, or is cut off with it, holds a run that nobody can fence, and the
// survivors cannot tell a dead worker from one that runs it at F.  So a held at-most-once
// run also needs the word of a majority of the replicas, and asks for it at F:
//
//   worker:  once its clock reads F, asks every other eligible replica "may fire id a
//            start?" while its owner's go travels (one GoAsk per replica per loop turn),
//            again every claim_retry, answering for itself when it is a replica; starts the
//            run only with yes from a majority of every quorum set and its owner's go;
//            drops it (recorded revoked) once the replicas that answered no leave some set
//            no majority that could say yes, or at its go_by.
//   replica: answers yes only for the attempt its vote accepted in the round it promised,
//            once its own clock reads F, and remembers it said yes (Vote::went).
//   takeover: a promise says whether its replica ever said yes for o (ClaimReply::went).
//            With a majority of promises that never did, no prepared attempt of an earlier
//            round can start — any yes-majority meets the promise majority, and a replica
//            that promised a higher round no longer says yes to an earlier round's attempt —
//            so the new owner counts them revoked without asking their workers.
//
// A restarted replica does not know what its previous process said: it counts as having
// said yes to every attempt whose F is within 2 max_clock_skew of its own start (a yes is
// given only at F or later by the replier's clock).
#include <algorithm>
#include <cassert>

#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

bool Scheduler::went(const Vote& v, int64_t fire_utc_ms) const {
  return v.went || fire_utc_ms <= started_utc_ms_ + 2 * options_.max_clock_skew_ms;
}

// Only the replicas that accepted an attempt can say yes to it, and they are a majority of
// the sets its proposer claimed under.  Our promise majority meets every yes-majority only
// when those are the sets we promise under: across a replica change the new sets need not
// meet the old ones at all (tests/sim/regress_reconfig_prepared_seed_96.toml: an owner
// re-prepared under the new sets, whose promises knew nothing of the run the old sets had
// said yes to, and ran it a second time).  So fencing by promises needs the volume's sets
// held since before the attempt was issued (by its owner's clock, within the skew bound).
bool Scheduler::sets_held_since(const std::string& volume, int64_t issued_utc_ms) const {
  auto it = sets_since_.find(volume);
  return it != sets_since_.end() && it->second.second + 2 * options_.max_clock_skew_ms < issued_utc_ms;
}

// --- the replica's side -----------------------------------------------------------------------

GoVerdict Scheduler::go_verdict(const GoAsk::Item& item, Clock now) {
  // A node that no longer replicates the volume speaks for it no more (a replica change
  // completes only after the old replicas handed over: they know).
  if (!is_replica(item.volume)) return GoVerdict::kNo;
  const std::optional<OccKey> key = known_occ_key(item.volume, item.occ);
  auto it = key ? votes_.find(*key) : votes_.end();
  if (it == votes_.end()) return GoVerdict::kNo;
  Vote& v = it->second;
  const bool backs = v.has_accepted && !v.ended && v.accepted_round == v.promised_round &&
                     v.accepted.fire_id == item.fire_id;
  if (!backs) return GoVerdict::kNo;
  if (now.utc_ms < item.run_at_utc_ms) return GoVerdict::kNotYet;
  v.went = true;  // before the answer leaves: a later prepare learns it
  return GoVerdict::kYes;
}

void Scheduler::on_go_ask(const std::string& from, const GoAsk& ask, Clock now) {
  GoAnswer answer;
  answer.items.reserve(ask.items.size());
  for (const GoAsk::Item& item : ask.items) {
    const GoVerdict verdict = go_verdict(item, now);
    if (verdict == GoVerdict::kYes) ++counters_.go_yes_given;
    answer.items.push_back({item.fire_id, verdict});
  }
  host_.send(from, std::move(answer), false);
}

// --- the worker's side ------------------------------------------------------------------------

Scheduler::Borrowed<Scheduler::QuorumSets> Scheduler::held_sets(const std::string& volume, const Entry* e) const {
  if (e != nullptr) return quorum_sets(volume, *e);
  // The definition had not reached this node when it accepted: the volume's sets.
  auto it = volume_quorum_sets_.find(volume);
  return Borrowed<QuorumSets>(it == volume_quorum_sets_.end() ? nullptr : &it->second);
}

// Whether a majority of every quorum set said yes to h's run.  When not, asks those that
// did not — at once the first time, then every claim_retry (go_asks_, sent by
// send_go_asks) — and returns when to look again; an answer looks sooner (on_go_answer).
bool Scheduler::replicas_went(const Held& h, const Running& r, Clock now, int64_t& look_again_utc_ms) {
  const auto sets = held_sets(r.volume, h.entry.get());
  Asking& asking = asking_[r.fire_id];
  asking.id = h.invocation.id;
  if (majority_of_each(asking.yes, *sets)) {
    asking_.erase(r.fire_id);
    return true;
  }
  if (now.utc_ms >= asking.next_ask_utc_ms) {
    GoAsk::Item item{r.volume, r.occ, r.fire_id, h.fire_utc_ms};
    // This node, when it is one of the replicas, answers at once: its vote is here.
    if (asking.next_ask_utc_ms == 0) {
      const GoVerdict mine = go_verdict(item, now);
      if (mine == GoVerdict::kNo) asking.no.insert(self_.node);
      if (mine == GoVerdict::kYes) {
        ++counters_.go_yes_given;
        asking.yes.insert(self_.node);
        if (majority_of_each(asking.yes, *sets)) {
          asking_.erase(r.fire_id);
          return true;
        }
      }
    }
    for (const auto& n : go_ask_targets(asking, *sets)) go_asks_[n].items.push_back(item);
    ++counters_.go_asks_sent;
    asking.next_ask_utc_ms = now.utc_ms + options_.claim_retry_ms;
  }
  // Looked at again when it is time to ask again, or to give up (go_by).
  look_again_utc_ms = std::min(asking.next_ask_utc_ms, h.go_by_utc_ms);
  asking.key_utc_ms = look_again_utc_ms;
  return false;
}

// Whom to ask: every replica of the sets that did not say yes, this node aside (it answers
// for itself).  (Asking just enough for a majority first would often pick one that holds
// no vote of the attempt - claims go to a majority only - and wait a claim_retry more.)
std::set<std::string> Scheduler::go_ask_targets(const Asking& asking, const QuorumSets& sets) const {
  std::set<std::string> ask;
  for (const auto& set : sets) {
    for (const auto& n : set) {
      if (n != self_.node && asking.yes.count(n) == 0) ask.insert(n);
    }
  }
  return ask;
}

// start_held's step for an at-most-once held run: nullopt once a majority said yes; else
// when to look at it again, or kNever when it was given up (past go_by without that
// majority, recorded revoked).
std::optional<int64_t> Scheduler::await_replicas(Held& h, const std::map<uint64_t, Running>::iterator& run,
                                                 Clock now) {
  if (!h.asks || h.replicas_went) return std::nullopt;
  int64_t look_again = kNever;
  h.replicas_went = replicas_went(h, run->second, now, look_again);
  if (h.replicas_went) return std::nullopt;
  // A replica that answers kNo holds no vote of the attempt in the round it promised: it
  // never accepted it (claims go to a majority only, and a replica added by a replica
  // change holds no vote of what was decided before it), or it promised a higher round
  // since.  Nothing gives it that vote later - an owner proposes a new attempt instead - so
  // once those left cannot make a majority of some set, the run can never start: dropped
  // at once rather than at go_by, its owner runs o again under the sets in force
  // (tests/sim/config_change_held_runs.toml: held across a replica change, such runs
  // waited owner_silence).
  if (auto it = asking_.find(run->second.fire_id);
      it != asking_.end() && no_majority_left(it->second.no, *held_sets(run->second.volume, h.entry.get()))) {
    ++counters_.prepared_no_replicas_go;
    mark(Mark::kHeldGoImpossible);
    drop_held_run(run, "no majority of the replicas holds a vote of it: it can never start", now);
    return kNever;
  }
  if (now.utc_ms >= h.go_by_utc_ms) {
    ++counters_.prepared_no_replicas_go;
    mark(Mark::kHeldWithoutReplicasGo);
    drop_held_run(run, "no majority of the replicas said it may start by its go_by", now);  // asking_ too
    return kNever;
  }
  return look_again;
}

void Scheduler::send_go_asks() {
  for (auto& [node, ask] : go_asks_) host_.send(node, std::move(ask), false);
  go_asks_.clear();
}

void Scheduler::on_go_answer(const std::string& from, const GoAnswer& answer, Clock now) {
  bool look = false;
  for (const GoAnswer::Item& item : answer.items) {
    if (item.verdict == GoVerdict::kNotYet) continue;
    auto it = asking_.find(item.fire_id);
    if (it == asking_.end()) continue;
    Asking& asking = it->second;
    if (!(item.verdict == GoVerdict::kYes ? asking.yes : asking.no).insert(from).second) continue;
    // Looked at again now (start_held counts the answers): moved to the front of held_.
    auto held = held_.extract({asking.key_utc_ms, asking.id});
    if (held.empty()) {
      asking_.erase(it);  // started, dropped or revoked meanwhile
      continue;
    }
    held.key().first = now.utc_ms;
    asking.key_utc_ms = now.utc_ms;
    held_.insert(std::move(held));
    look = true;
  }
  if (look) start_held(now);
}

}  // namespace caesium::schedule
