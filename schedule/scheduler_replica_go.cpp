// Scheduler: the replicas' go (docs/firing.md, Preparing ahead, "The replicas' go").
//
// The owner's go (scheduler_go.cpp) lets an owner that hears its worker stop a held run.
// It cannot help when the owner itself is gone or cut off before the instant F: a worker
// that went with it, or is cut off with it, holds a run that nobody can fence, and the
// survivors cannot tell a dead worker from one that runs it at F.  So a held at-most-once
// run also needs the word of a majority of the replicas, and asks for it at F:
//
//   worker:  on accepting the run, asks every other eligible replica "may fire id a
//            start at F?" (one GoAsk per replica per loop turn); from F, again every
//            claim_retry those that did not say yes, answering for itself when it is a
//            replica; starts the run only with yes from a majority of every quorum set and
//            its owner's go.
//   replica: keeps an ask that came early and answers it when its own clock reads F (one
//            hop at F) — if it heard from the worker within go_heard_ms, else at the
//            worker's next ask (an empty one at F); answers yes only for the attempt its
//            vote accepted in the round it promised, and remembers it said yes (Vote::went).
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
  // Its word: the asks of it that waited past their instant for it are answered now.
  answer_unheard_go_asks(from, now);
  GoAnswer answer;
  // An ask ahead of its instant waits here for it (a worker asks on acceptance): the
  // answer then costs the run one hop at F, not a round trip.  Only within the window a
  // worker asks in (prepare_ahead, and the clocks' skew), and within a bound in number.
  const int64_t ahead_bound = options_.prepare_ahead_ms + 2 * options_.max_clock_skew_ms;
  uint64_t boot = 0;
  for (const GoAsk::Item& item : ask.items) {
    const int64_t ahead = item.run_at_utc_ms - now.utc_ms;
    if (ahead > 0 && ahead <= ahead_bound && go_asks_in_.size() < kMaxQueuedGoAsks && is_replica(item.volume)) {
      if (boot == 0) boot = host_.peer(from).boot;
      go_asks_in_.emplace(item.run_at_utc_ms, QueuedAsk{from, boot, item});
      continue;
    }
    const GoVerdict verdict = go_verdict(item, now);
    if (verdict == GoVerdict::kYes) ++counters_.go_yes_given;
    answer.items.push_back({item.fire_id, verdict});
  }
  if (!answer.items.empty()) host_.send(from, std::move(answer), false);
}

// Each turn: the queued asks whose instant this clock reached get their verdict now, one
// answer per asking worker — if this node heard from that worker's process within
// go_heard_ms.  A worker that died before F must not be answered yes (a yes is
// remembered, and a takeover then cannot count the run revoked): unheard, its asks wait
// for its next ask, which a live worker sends at F.
void Scheduler::answer_queued_go_asks(Clock now) {
  std::map<std::string, GoAnswer> answers;
  std::map<std::string, PeerView> views;  // one look per worker per turn
  while (!go_asks_in_.empty() && go_asks_in_.begin()->first <= now.utc_ms) {
    auto q = go_asks_in_.extract(go_asks_in_.begin());
    QueuedAsk& ask = q.mapped();
    auto view = views.find(ask.from);
    if (view == views.end()) view = views.emplace(ask.from, host_.peer(ask.from)).first;
    const PeerView& p = view->second;
    if (p.boot != ask.from_boot || p.silent_ms > options_.go_heard_ms) {
      go_asks_unheard_[ask.from].emplace(q.key(), std::move(ask));
      ++go_asks_unheard_count_;
      continue;
    }
    const GoVerdict verdict = go_verdict(ask.item, now);
    if (verdict == GoVerdict::kYes) ++counters_.go_yes_given;
    answers[ask.from].items.push_back({ask.item.fire_id, verdict});
  }
  for (auto& [worker, answer] : answers) host_.send(worker, std::move(answer), false);
  if (go_asks_unheard_count_ == 0) return;
  // Past go_by (on any clock within the skew) its worker gave the run up: forgotten.
  const int64_t gone_before = now.utc_ms - options_.owner_silence_ms - 2 * options_.max_clock_skew_ms;
  for (auto it = go_asks_unheard_.begin(); it != go_asks_unheard_.end();) {
    auto& asks = it->second;
    while (!asks.empty() && asks.begin()->first < gone_before) {
      asks.erase(asks.begin());
      --go_asks_unheard_count_;
    }
    it = asks.empty() ? go_asks_unheard_.erase(it) : std::next(it);
  }
}

void Scheduler::answer_unheard_go_asks(const std::string& worker, Clock now) {
  auto it = go_asks_unheard_.find(worker);
  if (it == go_asks_unheard_.end()) return;
  const uint64_t boot = host_.peer(worker).boot;
  GoAnswer answer;
  for (auto& [run_at, ask] : it->second) {
    if (ask.from_boot != boot) continue;  // asked by a previous process: its runs are gone
    const GoVerdict verdict = go_verdict(ask.item, now);
    if (verdict == GoVerdict::kYes) ++counters_.go_yes_given;
    answer.items.push_back({ask.item.fire_id, verdict});
  }
  go_asks_unheard_count_ -= it->second.size();
  go_asks_unheard_.erase(it);
  if (!answer.items.empty()) host_.send(worker, std::move(answer), false);
}

// --- the worker's side ------------------------------------------------------------------------

Scheduler::Borrowed<Scheduler::QuorumSets> Scheduler::held_sets(const std::string& volume, const Entry* e) const {
  if (e != nullptr) return quorum_sets(volume, *e);
  // The definition had not reached this node when it accepted: the volume's sets.
  auto it = volume_quorum_sets_.find(volume);
  return Borrowed<QuorumSets>(it == volume_quorum_sets_.end() ? nullptr : &it->second);
}

// On acceptance of a held at-most-once run: asks the other replicas now, to answer at F
// (they queue the ask: on_go_ask).  Asked again from F + claim_retry if the answers did
// not come (an ask lost with its connection, a replica restarted meanwhile).
void Scheduler::ask_replicas_ahead(const Held& h, const Running& r, Clock now) {
  (void)now;
  const auto sets = held_sets(r.volume, h.entry.get());
  Asking& asking = asking_[r.fire_id];
  asking.id = h.invocation.id;
  asking.key_utc_ms = h.fire_utc_ms;
  asking.fire_utc_ms = h.fire_utc_ms;
  const GoAsk::Item item{r.volume, r.occ, r.fire_id, h.fire_utc_ms};
  for (const auto& n : go_ask_targets(asking, *sets)) go_asks_[n].items.push_back(item);
  ++counters_.go_asks_sent;
  asking.next_ask_utc_ms = h.fire_utc_ms + options_.claim_retry_ms;
}

// Whether a majority of every quorum set said yes to h's run.  When not, asks those that
// did not — every claim_retry (go_asks_, sent by send_go_asks) — and returns when to look
// again; an answer looks sooner (on_go_answer).
bool Scheduler::replicas_went(const Held& h, const Running& r, Clock now, int64_t& look_again_utc_ms) {
  const auto sets = held_sets(r.volume, h.entry.get());
  Asking& asking = asking_[r.fire_id];
  asking.id = h.invocation.id;
  asking.fire_utc_ms = h.fire_utc_ms;
  const bool ask_now = now.utc_ms >= asking.next_ask_utc_ms;
  const GoAsk::Item item{r.volume, r.occ, r.fire_id, h.fire_utc_ms};
  // This node, when it is one of the replicas, answers for itself: its vote is here.
  if ((ask_now || !asking.self_checked) && asking.yes.count(self_.node) == 0) {
    asking.self_checked = true;
    if (go_verdict(item, now) == GoVerdict::kYes) {
      ++counters_.go_yes_given;
      asking.yes.insert(self_.node);
    }
  }
  if (majority_of_each(asking.yes, *sets)) {
    asking_.erase(r.fire_id);
    return true;
  }
  if (!ask_now && !asking.nudged) {
    // Asked ahead: a word at F (an empty ask, one per replica per turn) lets a replica
    // that has not heard from this node lately answer (answer_queued_go_asks).
    asking.nudged = true;
    for (const auto& n : go_ask_targets(asking, *sets)) go_asks_[n];
  }
  if (ask_now) {
    for (const auto& n : go_ask_targets(asking, *sets)) go_asks_[n].items.push_back(item);
    ++counters_.go_asks_sent;
    asking.next_ask_utc_ms = now.utc_ms + options_.claim_retry_ms;
  }
  look_again_utc_ms = asking.next_ask_utc_ms;
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
  if (now.utc_ms >= h.go_by_utc_ms) {
    asking_.erase(run->second.fire_id);
    ++counters_.prepared_no_replicas_go;
    mark(Mark::kHeldWithoutReplicasGo);
    drop_held_run(run, "no majority of the replicas said it may start by its go_by", now);
    return kNever;
  }
  const int64_t wait = std::min(look_again, h.go_by_utc_ms);
  asking_[run->second.fire_id].key_utc_ms = wait;
  return wait;
}

void Scheduler::send_go_asks() {
  for (auto& [node, ask] : go_asks_) host_.send(node, std::move(ask), false);
  go_asks_.clear();
}

void Scheduler::on_go_answer(const std::string& from, const GoAnswer& answer, Clock now) {
  bool look = false;
  for (const GoAnswer::Item& item : answer.items) {
    if (item.verdict != GoVerdict::kYes) continue;
    auto it = asking_.find(item.fire_id);
    if (it == asking_.end()) continue;
    Asking& asking = it->second;
    if (!asking.yes.insert(from).second) continue;
    // Before its instant here (the replier's clock is ahead): counted, looked at at F.
    if (now.utc_ms < asking.fire_utc_ms) continue;
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
