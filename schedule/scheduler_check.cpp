// Scheduler: invariants.  check_occ runs after every step of every occurrence an input
// touched, and check_vote after every vote, when SchedulerOptions::check_invariants is on
// (the simulator, debug builds); check_invariants walks everything (the simulator calls
// it once per simulated second of each node).  Failures abort (base/check.h): they are bugs here,
// never bad input.
#include <algorithm>
#include <cassert>

#include "base/check.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

void Scheduler::check_vote(const Vote& v) const {
  if (options_.test_grant_every_claim) return;  // the test switch breaks the vote on purpose
  // A replica's promised round is at least its accepted round, and a value accepted in
  // the round it promised came from the process it promised it to: one value per round.
  if (!v.has_accepted) return;
  CAESIUM_ASSERT(v.promised_round >= v.accepted_round);
  CAESIUM_ASSERT(v.accepted_round != v.promised_round || v.accepted_by == v.promised_by);
}

void Scheduler::check_occ(const Occ& o) const {
  // O1: a phase that decides holds the definition it decides under.
  if (o.is<firing::Claiming>() || o.is<firing::Preparing>() || o.is<firing::Owned>()) {
    CAESIUM_ASSERT(o.entry != nullptr);
  }
  // O4 is checked where deadlines are armed (Scheduler::set_deadline); here, that the
  // earliest one is on the wheel.
  CAESIUM_ASSERT(!o.timer_armed || o.timer_mono_ms == o.deadlines.earliest());
  if (const auto* c = std::get_if<firing::Claiming>(&o.phase)) {
    CAESIUM_ASSERT(o.my_round == 0);
    CAESIUM_ASSERT(!c->attempt.fire_id.empty());
  }
  if (const auto* p = std::get_if<firing::Preparing>(&o.phase)) {
    CAESIUM_ASSERT(o.at_most_once);
    CAESIUM_ASSERT(p->round >= 1 && p->round == o.my_round);
  }
  const auto* own = std::get_if<firing::Owned>(&o.phase);
  if (own == nullptr) return;
  CAESIUM_ASSERT(o.ever_owned);
  // O3: an ownership of at-most-once work was won in a round: round 0 by a claim, a
  // higher round by a takeover.  At-least-once ownership without a vote is flagged.
  if (o.at_most_once) {
    CAESIUM_ASSERT(own->path != FirePath::kDegraded);
    CAESIUM_ASSERT((own->path == FirePath::kQuorum) == (own->round == 0));
    CAESIUM_ASSERT(!own->possible_duplicate);
  } else {
    CAESIUM_ASSERT(own->round == 0);
    CAESIUM_ASSERT(own->path == FirePath::kQuorum || own->possible_duplicate);
  }
  // O2: at-most-once attempts are never abandoned, and one this process created follows
  // only attempts that can no longer run.
  bool created_seen = false;
  for (size_t i = own->attempts.size(); i-- > 0;) {
    const Attempt& a = own->attempts[i];
    // O5: counted against its worker's load only while in flight.
    CAESIUM_ASSERT(!a.counted || a.state == AttemptState::kProposing || a.state == AttemptState::kSent ||
                   a.state == AttemptState::kAccepted || a.state == AttemptState::kRevoking);
    if (!o.at_most_once) continue;
    CAESIUM_ASSERT(a.state != AttemptState::kAbandoned);
    if (created_seen) CAESIUM_ASSERT(firing::may_be_followed(a));
    created_seen = created_seen || !a.adopted;
  }
}

void Scheduler::check_invariants() const {
  CAESIUM_ASSERT(entry_index_.size() + free_entry_slots_.size() == entries_.size());
  CAESIUM_ASSERT(interned_ids_.size() + free_interned_.size() == interned_.size());
  CAESIUM_ASSERT(worklist_.empty());
  {  // every id's refs counts the keys of occs_ and votes_ naming it; free ids have none
    std::vector<uint32_t> refs(interned_.size(), 0);
    for (const auto& [k, o] : occs_) ++refs[k.entry];
    for (const auto& [k, v] : votes_) ++refs[k.entry];
    for (uint32_t id = 0; id < interned_.size(); ++id) CAESIUM_ASSERT(refs[id] == interned_[id].refs);
    for (uint32_t id : free_interned_) CAESIUM_ASSERT(interned_[id].refs == 0 && interned_[id].entry_key.empty());
  }
  size_t live_key_bytes = 0;
  for (const EntryRec& e : entries_) live_key_bytes += e.live ? e.key_size : 0;
  CAESIUM_ASSERT(live_key_bytes + key_garbage_ == key_arena_.size());
  // An armed entry's timer is pending, or it fired and the entry waits in due_backlog_
  // (a burst is handled max_due_per_tick entries per tick; the flag clears in entry_due).
  const std::set<uint32_t> queued(due_backlog_.begin(), due_backlog_.end());
  entry_index_.for_each([&](uint32_t slot) {
    CAESIUM_ASSERT(slot < entries_.size());
    const EntryRec& e = entries_[slot];
    CAESIUM_ASSERT(e.live);
    CAESIUM_ASSERT(e.volume < volume_names_.size());
    CAESIUM_ASSERT(e.key_offset + size_t{e.key_size} <= key_arena_.size());
    CAESIUM_ASSERT(find_slot(e.volume, key_of(e)) == std::optional<uint32_t>(slot));
    CAESIUM_ASSERT(!e.armed || utc_wheel_.pending(e.handle) || queued.count(slot) > 0);
  });
  CAESIUM_ASSERT(occ_by_serial_.size() == occs_.size());
  // outstanding_ counts exactly the attempts marked counted.
  std::map<std::string, uint32_t> counted;
  for (const auto& [k, o] : occs_) {
    const auto by_serial = occ_by_serial_.find(o.serial);
    CAESIUM_ASSERT(by_serial != occ_by_serial_.end() && by_serial->second == &o);
    if (const auto* own = std::get_if<firing::Owned>(&o.phase)) {
      for (const auto& a : own->attempts) counted[a.info.worker] += a.counted ? 1 : 0;
    }
  }
  for (auto it = counted.begin(); it != counted.end();) it = it->second == 0 ? counted.erase(it) : std::next(it);
  CAESIUM_ASSERT(counted == outstanding_);
  for (const auto& [k, o] : occs_) {
    CAESIUM_ASSERT(k.entry < interned_.size());
    CAESIUM_ASSERT(o.volume == interned_[k.entry].volume);
    CAESIUM_ASSERT(o.id.entry_key == interned_[k.entry].entry_key);
    CAESIUM_ASSERT(o.id.scheduled_utc_ms == k.scheduled_utc_ms);
    CAESIUM_ASSERT(!o.timer_armed || mono_wheel_.pending(o.timer));
    check_occ(o);
  }
  CAESIUM_ASSERT(vote_keys_by_entry_.size() == votes_.size());
  for (const auto& [k, v] : votes_) {
    CAESIUM_ASSERT(vote_keys_by_entry_.count(k) == 1);
    check_vote(v);
  }
  CAESIUM_ASSERT(mono_wheel_.size() <= occs_.size());
}

}  // namespace caesium::schedule
