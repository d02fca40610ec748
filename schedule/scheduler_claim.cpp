// Scheduler: round 0, the ordinary claim — "grant o to me and accept my first attempt
// A1 -> W".  First-come on every replica; with a majority the claimant owns o and
// dispatches A1 at once (docs/firing.md, Claiming).
//
// A claim step, on every reply and every deadline, in this order:
//   met an older value of ours   -> a higher round (it may have run)
//   another process's owner record is known -> stop; the ordinary decision defers to it
//   a majority granted           -> Owned
//   the holder is gone and the rest cannot make a majority -> a higher round
//   no longer deciding, and the rest cannot make a majority -> hand the grants back
//   the misfire window closed    -> missed
//   the refusals make a majority impossible -> a split vote: release, claim again later
//   at-most-once, a live holder and no progress by claim_give_up -> a higher round
//   at-least-once and no quorum answers by claim_give_up -> fire degraded
//   otherwise: widen a thrifty claim, or ask again those that did not answer
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "schedule/marks.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {

void Scheduler::claim_step(Occ& o, Clock now) {
  const Entry& e = *o.entry;
  if (o.as<firing::Claiming>().ran) {
    release_grants(o);
    to_finished(o, Outcome::kDone, "", now);
    return;
  }
  if (o.as<firing::Claiming>().superseded) {
    // The entry was edited or deleted: this claim decides under a definition that no
    // longer stands.  It stops, and o is decided again once the new record is here (the
    // replica that refused is asked for it: SchedulerHost::behind) — never degraded under
    // the old one.
    mark(Mark::kClaimSuperseded);
    release_grants(o);
    to_tracking_from_claiming(o, now);
    o.entry = nullptr;
    set_deadline(o, Deadline::kBackoff, now.mono_ms + split_vote_backoff_ms(o) + options_.claim_retry_ms);
    return;
  }
  if (o.as<firing::Claiming>().met_older_value) {
    // An attempt of ours that some replicas accepted in round 0 may have run, and those
    // replicas' votes do not name this claim's attempt: dispatching it would leave a run
    // that no vote records, so a later takeover could not find it and would run o again.
    // A higher round learns every accepted attempt and resolves them first.  Grants are
    // kept: they may be votes for an attempt that ran.
    mark(Mark::kClaimMetOlderValue);
    to_tracking_from_claiming(o, now);
    take_over_or_wait(o, e, now);
    return;
  }
  if (claim_resolved_by_owner(o, e, now)) return;
  if (claim_resolved_by_holder(o, e, now)) return;
  if (overlap_stops(o, e, now)) return;
  if (o.overlap_refused && now.utc_ms - o.fire_utc_ms > options_.misfire_threshold_ms) {
    // Refused for overlap past the misfire threshold: the run that blocked it either still
    // goes on or ended so long ago that its news should have arrived.  Run now, o would
    // start minutes late, queued behind it with the occurrences due after it
    // (tests/sim/regress_overlap_seed_1.toml): one blocking run, one outcome for what fell
    // due during it.
    mark(Mark::kOverlapSkipped);
    release_grants(o);
    to_finished(o, Outcome::kSkippedOverlap, "replicas refused it for overlap beyond the misfire threshold", now);
    return;
  }
  if (now.utc_ms - due_utc_ms(o) > e.misfire_window_ms) {
    release_grants(o);
    if (o.overlap_refused) {
      to_finished(o, Outcome::kSkippedOverlap, "replicas refused it for overlap until its misfire window closed", now);
    } else {
      to_finished(o, Outcome::kMissed, "no quorum granted the claim within the misfire window", now);
    }
    return;
  }
  if (claim_resolved_by_split(o, e, now)) return;
  const bool holder_other = o.holder && !(*o.holder == self_);
  if (o.at_most_once && holder_other &&
      now.mono_ms >= o.as<firing::Claiming>().ballot.started_mono_ms + options_.claim_give_up_ms) {
    // A live holder that shows no progress: some replicas granted it o, yet no owner
    // record of it has come in claim_give_up, and the replicas we wait for do not answer.
    // It may be a master that cannot win (its messages to some replicas are lost while
    // it looks alive through relays): waiting for it leaves a connected majority idle
    // until the window closes.  A higher round needs only that majority, and resolves
    // whatever the holder may have dispatched first.
    mark(Mark::kClaimHolderStalledTakeover);
    to_tracking_from_claiming(o, now);
    take_over_or_wait(o, e, now);
    return;
  }
  claim_retry(o, e, now);
}

// A majority granted the claim (Owned), or another process owns o (or decided it): its
// record says so.  A claim can span a change of the volume's replica sets — grants
// gathered under the joint sets become a majority of the new sets alone once the final
// step lands, while a process of the previous sets owns o with a majority of those; the
// fill rule brings that owner's record to every remaining replica before the final step.
// And a master that cannot win its claim (a gray failure) learns so from the owner record
// of the backup that took o over.  Either way this claim stops, and o goes to the
// ordinary decision (which defers to a live owner).
bool Scheduler::claim_resolved_by_owner(Occ& o, const Entry& e, Clock now) {
  const bool other_owner = std::any_of(o.owner_records.begin(), o.owner_records.end(),
                                       [&](const auto& r) { return !(r.second.owner == self_); });
  const bool majority = has_majority(o.as<firing::Claiming>().ballot.granted, o.volume, e);
  if (other_owner || (majority && !is_replica(o.volume))) {
    mark(Mark::kClaimOtherOwnerRecord);
    release_grants(o);
    to_tracking_from_claiming(o, now);
    o.holder.reset();
    touch(o);
    return true;
  }
  if (!majority) return false;
  to_owned_from_claiming(o, e, FirePath::kQuorum, now);
  return true;
}

// Replicas hold o for another process and, with those we cannot reach, leave this claim
// short of a majority.  If that process is gone (at-most-once), waiting for them could
// outlast the misfire window: a higher round resolves whatever it dispatched.  If we no
// longer decide o, we hand our grants back so that the master can win them — otherwise
// two claimants that each hold a vote of three wait for the third while it is cut off.
bool Scheduler::claim_resolved_by_holder(Occ& o, const Entry& e, Clock now) {
  if (!o.holder || *o.holder == self_) return false;
  const firing::Ballot& b = o.as<firing::Claiming>().ballot;
  if (!majority_impossible(o, b, e, /*unreachable_lost=*/true)) return false;
  if (o.at_most_once && owner_gone(*o.holder)) {
    mark(Mark::kClaimHolderGoneTakeover);
    to_tracking_from_claiming(o, now);
    take_over_or_wait(o, e, now);
    return true;
  }
  const bool still_deciding = active_ && (masters_.count(o.volume) > 0 || o.backup);
  if (still_deciding) return false;
  mark(Mark::kClaimNotMasterHandsBack);
  release_grants(o);
  to_tracking_from_claiming(o, now);
  touch(o);
  return true;
}

// The refusals make a majority impossible.  If we hold half of some quorum set, no other
// claimant can hold a majority of it, so the holder the refusals name cannot own o either
// (a split vote between two masters of a moment): both release and claim again after a
// backoff, rather than waiting claim_give_up for each other.
bool Scheduler::claim_resolved_by_split(Occ& o, const Entry& e, Clock now) {
  firing::Claiming& c = o.as<firing::Claiming>();
  if (!majority_impossible(o, c.ballot, e)) return false;
  const bool holder_cannot_win = holds_half(o, c.ballot, e);
  const bool holder_other = o.holder && !(*o.holder == self_);
  release_grants(o);
  to_tracking_from_claiming(o, now);
  if (holder_other && !holder_cannot_win) {
    touch(o);  // defer to the holder, or take over if it vanished
    return true;
  }
  o.holder.reset();  // our own grant, just released (or a holder that cannot win)
  if (holder_other) {
    // The other claimant releases its half too: both claim again after the backoff — at
    // either semantics, since firing degraded here would run o on both sides of a vote
    // that is merely split.
    mark(Mark::kClaimSplitVote);
    set_deadline(o, Deadline::kBackoff, now.mono_ms + split_vote_backoff_ms(o));
    return true;
  }
  // No holder: abstentions (replicas that lost their disk cannot vote on o) or a split.
  // At-least-once does not wait: it fires in this component, flagged.
  if (!o.at_most_once) {
    to_owned_from_idle(o, e, FirePath::kDegraded, now);
    return true;
  }
  set_deadline(o, Deadline::kBackoff, now.mono_ms + split_vote_backoff_ms(o));
  return true;
}

void Scheduler::claim_retry(Occ& o, const Entry& e, Clock now) {
  firing::Claiming& c = o.as<firing::Claiming>();
  if (!o.at_most_once && now.mono_ms >= give_up_at_mono(o)) {
    // At-least-once cannot wait for a quorum that does not answer (one-way links, a
    // replica that is "reachable" only in our view): fire in this component — on a worker
    // that answered, since a dispatch to a silent one would be lost the same way.
    mark(Mark::kClaimDegradedGiveUp);
    release_grants(o);
    to_owned_from_claiming(o, e, FirePath::kDegraded, now);
    return;
  }
  if (c.thrifty && (!c.ballot.refused.empty() || !c.ballot.not_due_until_mono.empty())) {
    // A replica the thrifty claim asked did not grant: ask the others now.
    c.thrifty = false;
    ++counters_.claims_widened;
    mark(Mark::kClaimWidened);
    send_claims(o, e, now, true);
    return;
  }
  if (o.fired == 0) return;  // a reply, not a deadline: nothing to send yet
  if (now.mono_ms >= c.ballot.lease_started_mono_ms + options_.claim_lease_ms) {
    // The grants gathered so far are too old to dispatch on (the replicas' acknowledgements
    // of a delete wait only claim_lease_ms for them): ask for them again under a new lease.
    mark(Mark::kClaimLeaseRenewed);
    c.ballot.renew(now.mono_ms);
  }
  // A retry asks every reachable replica that has not answered, and after claim_give_up
  // those that refused too: the holder they named may have released its grants since (it
  // resolved a split vote so), and a claim that waits only for replicas it has not heard
  // from can wait for ever on one its messages do not reach.
  if (!c.ballot.refused.empty() && now.mono_ms >= c.ballot.refused_since_mono_ms + options_.claim_give_up_ms) {
    mark(Mark::kClaimRefusedAskedAgain);
    for (const auto& n : c.ballot.refused) c.ballot.answered.erase(n);
    c.ballot.refused.clear();
    c.ballot.refused_since_mono_ms = 0;
  }
  if (c.thrifty) ++counters_.claims_widened;
  c.thrifty = false;
  send_claims(o, e, now, false);
}

// At-least-once: replicas that answered "not due yet" are alive and will vote then, so
// the give-up clock runs from the latest instant one of them named, not from the claim.
int64_t Scheduler::give_up_at_mono(const Occ& o) const {
  const firing::Ballot& b = o.as<firing::Claiming>().ballot;
  int64_t from = b.started_mono_ms;
  for (const auto& [node, until] : b.not_due_until_mono) from = std::max(from, until);
  return from + options_.claim_give_up_ms;
}

// After a split vote.  In o's first claim round, claim_retry_ms: a split is mostly two
// masters of a moment (a brief suspicion), and by then one of them no longer is.  In later
// rounds, a backoff spread by node and by round, so two claimants that both stay masters
// fall apart rather than colliding in step.
int64_t Scheduler::split_vote_backoff_ms(const Occ& o) const {
  if (o.claim_rounds <= 1) return options_.claim_retry_ms;
  const uint64_t spread = hash64(self_.node, o.claim_rounds) % 4;
  return options_.claim_retry_ms * (1 + static_cast<int64_t>(spread));
}

// A process that owned o and was superseded may claim o again and find it held elsewhere
// or late past its window.  The replicas' holds for this process may be the votes for an
// attempt of ours that ran: releasing them could let a second claimant win a majority and
// run an at-most-once occurrence twice, so they stay.
void Scheduler::release_grants(Occ& o) {
  auto* c = std::get_if<firing::Claiming>(&o.phase);
  if (c == nullptr || o.ever_owned) return;
  std::set<std::string> to = c->ballot.holding;
  if (std::any_of(to.begin(), to.end(), [c](const std::string& n) { return c->ballot.granted.count(n) == 0; })) {
    mark(Mark::kOldLeaseGrantReleased);
  }
  to.insert(c->ballot.granted.begin(), c->ballot.granted.end());
  for (const auto& n : to) host_.send(n, Release{o.volume, o.id, self_}, false);
  c->ballot.granted.clear();
  c->ballot.holding.clear();
}

// --- sending --------------------------------------------------------------------------------

// The replicas a thrifty round-0 claim asks: this node (when eligible) and just enough
// peers for a majority, chosen among those heard from directly and not suspect, starting
// at a place given by the occurrence so that the votes spread over the peers.  Empty
// when a thrifty claim is not possible (a replica change in flight, too few such peers):
// then every target is asked.
std::vector<std::string> Scheduler::thrifty_claim_targets(const Occ& o, const Entry& e) const {
  const auto borrowed = quorum_sets(o.volume, e);
  const QuorumSets& sets = *borrowed;
  if (sets.size() != 1 || sets[0].empty()) return {};
  const std::vector<std::string>& set = sets[0];
  const bool self_eligible = std::binary_search(set.begin(), set.end(), self_.node);
  size_t need = set.size() / 2 + 1 - (self_eligible ? 1 : 0);
  std::vector<const std::string*> peers;
  for (const auto& n : set) {
    if (n != self_.node) peers.push_back(&n);
  }
  std::vector<std::string> out;
  if (self_eligible) out.push_back(self_.node);
  // The rotation is over the peers alone: over the whole set, the peer after this node
  // would be picked for two starts of three.
  const size_t start = hash64(o.id.entry_key) ^ static_cast<uint64_t>(o.id.scheduled_utc_ms);
  for (size_t i = 0; i < peers.size() && need > 0; ++i) {
    const std::string& n = *peers[(start + i) % peers.size()];
    const PeerView p = host_.peer(n);
    if (!p.reachable || !p.direct || p.suspect) continue;
    out.push_back(n);
    --need;
  }
  if (need > 0) return {};
  return out;
}

void Scheduler::stamp_config(Claim& c) const {
  c.config_epoch = topology_.epoch;
  auto it = topology_.volumes.find(c.volume);
  c.sets_hash = it == topology_.volumes.end() ? 0 : it->second.sets_hash;
}

// Asks the replicas that have not answered (with `all`, unreachable ones too) for the
// claim or prepare of o's phase, and arms the deadlines that bring the claim back.
void Scheduler::send_claims(Occ& o, const Entry& e, Clock now, bool all) {
  Claim c;
  c.volume = o.volume;
  c.occ = o.id;
  c.claimant = self_;
  c.fire_utc_ms = o.fire_utc_ms;
  c.entry_version = o.entry_version;
  stamp_config(c);
  firing::Ballot* b = nullptr;
  std::vector<std::string> targets;
  if (auto* p = std::get_if<firing::Preparing>(&o.phase)) {
    c.kind = ClaimKind::kPrepare;
    c.round = p->round;
    b = &p->ballot;
  } else {
    firing::Claiming& cl = o.as<firing::Claiming>();
    c.kind = ClaimKind::kClaim;
    c.worker = cl.attempt.worker;
    c.attempt = cl.attempt;
    c.forbid_overlap = forbids_overlap(e);
    b = &cl.ballot;
    if (cl.thrifty) targets = thrifty_claim_targets(o, e);
    cl.thrifty = !targets.empty();
  }
  c.lease = b->lease;
  if (targets.empty()) {
    const std::set<std::string> everyone = claim_targets(o, e);
    targets.assign(everyone.begin(), everyone.end());
  }
  int64_t not_due = kNever;
  for (const auto& n : targets) {
    if (b->answered.count(n)) continue;
    auto nd = b->not_due_until_mono.find(n);
    if (nd != b->not_due_until_mono.end() && nd->second > now.mono_ms) {
      not_due = std::min(not_due, nd->second);
      continue;
    }
    if (!all && n != self_.node && !host_.peer(n).reachable) continue;
    host_.send(n, c, false);
  }
  set_deadline(o, Deadline::kResend, now.mono_ms + options_.claim_retry_ms);
  set_deadline(o, Deadline::kNotDue, not_due);
  if (o.is<firing::Claiming>() && !o.at_most_once) set_deadline(o, Deadline::kGiveUp, give_up_at_mono(o));
  set_deadline(o, Deadline::kWindow, utc_to_mono(due_utc_ms(o) + e.misfire_window_ms) + 1);
}

// --- replies --------------------------------------------------------------------------------

void Scheduler::on_claim_reply(const std::string& from, const ClaimReply& r, Clock now) {
  Occ* o = find_occ(r.volume, r.occ);
  if (o != nullptr && r.kind == ClaimKind::kPrepare) {
    on_prepare_reply(*o, from, r, now);
    return;
  }
  if (o != nullptr && (r.kind == ClaimKind::kAccept || r.kind == ClaimKind::kCheck)) {
    on_accept_reply(*o, from, r, now);
    return;
  }
  if (o == nullptr || !o->is<firing::Claiming>()) {
    // A late grant for a round this node abandoned may be handed back — but only when
    // this node certainly never owned o.  A grant released after its holder owned (and
    // perhaps ran) o would let a second claimant win a majority: the one way to run an
    // at-most-once occurrence twice.  A forgotten occurrence keeps its grants.
    const bool granted_to_me = (r.outcome == ClaimOutcome::kGranted || r.outcome == ClaimOutcome::kHeld) &&
                               r.holder == self_ && r.promised_round == 0;
    if (granted_to_me && o != nullptr && !o->ever_owned) {
      mark(Mark::kLateGrantReleased);
      host_.send(from, Release{r.volume, r.occ, self_}, false);
    }
    return;
  }
  on_round0_reply(*o, from, r, now);
  touch(*o);
}

void Scheduler::on_round0_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now) {
  firing::Claiming& c = o.as<firing::Claiming>();
  c.ballot.answered.insert(from);
  switch (r.outcome) {
    case ClaimOutcome::kGranted:
    case ClaimOutcome::kHeld:
      if (r.holder == self_ && r.promised_round == 0) c.ballot.holding.insert(from);
      if (r.holder == self_ && r.promised_round == 0 && r.lease != c.ballot.lease) {
        c.ballot.answered.erase(from);  // a grant of an earlier lease: asked again under this one
      } else if (r.holder == self_ && r.promised_round == 0) {
        // A replica that promised round 0 to us before answers a new claim of ours with
        // "granted" but keeps the attempt it accepted first (on_claim, keep_first): the
        // grant is not an acceptance of this claim's attempt.
        if (o.at_most_once && r.has_accepted && r.accepted.fire_id != c.attempt.fire_id) c.met_older_value = true;
        c.ballot.granted.insert(from);
      } else {
        o.holder = r.holder;
        o.holder_vouched = o.holder_vouched || r.holder_alive;
        o.known_round = std::max(o.known_round, r.promised_round);
        c.ballot.refuse(from, now.mono_ms);
        ++counters_.refused_claims;
      }
      break;
    case ClaimOutcome::kNotDue:
      // The replica's clock is behind ours: ask again when it says o is due.
      ask_again_later(c.ballot, from, r, now);
      break;
    case ClaimOutcome::kOverlap: {
      // Another run of the entry may be going on there.  Ask again: it may have ended
      // with the news on its way; claim_step skips o once this node sees that run.  The
      // run may also last for hours (or be a lost one that blocks the entry until its
      // vote expires), and every later occurrence is asking too: back off, doubling from
      // claim_retry up to 32 times it.
      // Under replace the run that blocks o is being stopped: ask again soon.
      o.overlap_refused = true;
      o.overlap_refusals = std::min<uint32_t>(o.overlap_refusals + 1, o.entry->overlap == OverlapPolicy::replace ? 1 : 5);
      c.ballot.answered.erase(from);
      c.ballot.not_due_until_mono[from] = now.mono_ms + (options_.claim_retry_ms << o.overlap_refusals);
      break;
    }
    case ClaimOutcome::kStale:
      // Our config is older than the replica's and gave the volume other replica sets:
      // nothing it granted us before counts, and we ask again once the newer config
      // (which the replica advertises in its gossip) has reached us.
      ++counters_.stale_claims_sent;
      c.ballot.granted.erase(from);
      ask_again_later(c.ballot, from, r, now);
      break;
    case ClaimOutcome::kAbstain:
      c.ballot.refuse(from, now.mono_ms);
      break;
    case ClaimOutcome::kSuperseded:
      ++counters_.superseded_claims_sent;
      c.superseded = true;
      host_.behind(o.volume, from);
      break;
    case ClaimOutcome::kRan:
      // The replica holds the record that o ran: o is done here too, and the record is
      // fetched (SchedulerHost::behind) for the history.
      ++counters_.ran_claims_sent;
      c.ran = true;
      host_.behind(o.volume, from);
      break;
  }
}

void Scheduler::ask_again_later(firing::Ballot& b, const std::string& from, const ClaimReply& r, Clock now) {
  b.answered.erase(from);
  b.not_due_until_mono[from] = now.mono_ms + std::max<int64_t>(1, r.retry_after_ms);
}

}  // namespace caesium::schedule
