// The state the scheduler keeps per occurrence o, as one type per phase (docs/firing.md,
// "The state machine").  Private to schedule/scheduler*.cpp.
//
//   Tracking ──decide──▶ Claiming ──majority──▶ Owned ──worker done──▶ Finished
//      │  ▲                  │  ▲                 │
//      │  └──release/split───┘  │                 └──superseded──▶ Tracking
//      ├──no quorum (AMO)──▶ Withheld             │
//      └──owner gone (AMO)──▶ Preparing ──promises──▶ Owned
//
// Each phase holds only the fields that mean something in it; what o's replica knows
// whatever its phase (the records of the volume store, the holder of a grant, the rounds
// seen) lives beside the phase in Occ.  The phase changes only in
// scheduler_transitions.cpp, whose functions assert the phase they leave.
//
// Invariants (checked after every input in simulation and debug builds, Scheduler::check_occ):
//   O1  Owned holds `entry`; so do Claiming and Preparing.
//   O2  An at-most-once attempt is never abandoned, and an attempt this process created
//       follows only attempts that can no longer run: refused, revoked, or finished in a
//       definite failure (a retry, docs/firing.md Retries) — never one that may run.
//   O3  Owned with path kQuorum won round 0; an at-most-once takeover won round >= 1.
//   O4  A deadline is armed in the future, never in the past (a step woken by one that
//       armed it again would be woken again at once, for ever), and the earliest armed is
//       on the mono wheel.
//   O5  An attempt counted against its worker's load (outstanding_) is in flight.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/time.h"
#include "schedule/entry.h"
#include "schedule/fire_messages.h"
#include "schedule/occurrence.h"
#include "wheel/timing_wheel.h"

namespace caesium::schedule::firing {

// --- attempts (Owned) -----------------------------------------------------------------------

enum class AttemptState : uint8_t {
  kProposing,  // waiting for a majority to accept it in our round (a check, at-least-once)
  kSent,       // dispatched; no answer yet
  kAccepted,   // the worker accepted it (its reply, its record, or a revoke answer)
  kFinished,   // the worker ran it to completion (ok or not)
  kRefused,    // the worker refused it: never runs
  kRevoking,   // at-most-once: asked the worker to promise it never runs
  kRevoked,    // the worker promised it never runs (durably)
  kAbandoned,  // at-least-once: given up on (it may still run); o was redispatched
};
const char* to_string(AttemptState s);
// The attempt can no longer run: it is safe to run o elsewhere (at-most-once).
inline bool never_runs(AttemptState s) { return s == AttemptState::kRefused || s == AttemptState::kRevoked; }

struct Attempt {
  AttemptInfo info;
  AttemptState state = AttemptState::kSent;
  std::set<std::string> accepted_by;  // kProposing: replicas that accepted (or checked) it
  int64_t sent_mono_ms = 0;           // first dispatch
  int64_t resent_mono_ms = 0;         // latest (re)transmission of the dispatch, accept or revoke
  int64_t accept_by_utc_ms = 0;
  int64_t accepted_mono_ms = 0;
  uint64_t worker_boot = 0;  // the process that accepted it, from its reply (0: not known yet)
  uint64_t addressed_boot = 0;  // the worker's boot in our view when first issued (Dispatch::worker_boot)
  // Dispatched prepared (run_at = F): a worker that restarts before F can tell that it
  // never started it, so a vanished worker is asked (a revoke) before o counts as lost.
  bool prepared = false;
  bool revoke_tried = false;
  // Learned from the promises of a takeover round, not created here; `doubt`: another
  // value of a collided round, resolved before any new attempt.
  bool adopted = false;
  bool doubt = false;
  bool counted = false;  // counted in Scheduler::outstanding_ (until it finishes or is given up)
  // kFinished: its worker's record says the run failed (the handler reported failure or
  // was stopped at its timeout) — a definite failure, which a retry may follow.
  bool failed = false;
  // kProposing: the lease on the acceptances (as Ballot's); `check`: at-least-once, the
  // replicas are asked only whether the definition still stands (ClaimKind::kCheck), and
  // when no majority answers by claim_give_up the attempt goes out anyway, as degraded
  // work does; checking_since_mono_ms: when the first check left.
  uint64_t lease = 0;
  int64_t lease_started_mono_ms = 0;
  bool check = false;
  int64_t checking_since_mono_ms = 0;
};

// An attempt a new one may follow (O2): it can no longer run — refused, revoked, or run to
// a definite failure (then the new one is a retry).
inline bool may_be_followed(const Attempt& a) {
  return never_runs(a.state) || (a.state == AttemptState::kFinished && a.failed);
}

// --- the votes a claim or a prepare gathers ----------------------------------------------------

struct Ballot {
  std::set<std::string> granted, refused, answered;
  // Replicas known to hold a round-0 grant of ours, under this lease or an earlier one.
  // A renewed lease stops counting the older grants toward a majority, but the replicas
  // still hold them (with our first attempt accepted): a claim that stops hands every one
  // back (Scheduler::release_grants), or it would block an overlap = forbid entry there
  // until the vote expires.
  std::set<std::string> holding;
  // Replicas that answered "not due yet" or "stale": asked again at this instant (mono ms).
  std::map<std::string, int64_t> not_due_until_mono;
  int64_t started_mono_ms = 0;
  int64_t refused_since_mono_ms = 0;  // the first refusal of those in `refused` (0: none)
  // The lease on the grants (Claim::lease): they count for a dispatch only within
  // claim_lease_ms of lease_started_mono_ms; an older lease is renewed (asked again).
  uint64_t lease = 0;
  int64_t lease_started_mono_ms = 0;
  void renew(int64_t now_mono_ms) {
    lease = static_cast<uint64_t>(now_mono_ms) + 1;
    lease_started_mono_ms = now_mono_ms;
    for (const auto& n : granted) answered.erase(n);
    granted.clear();
  }
  void clear(int64_t now_mono_ms) {
    granted.clear();
    holding.clear();
    refused.clear();
    answered.clear();
    not_due_until_mono.clear();
    started_mono_ms = now_mono_ms;
    refused_since_mono_ms = 0;
    renew(now_mono_ms);
  }
  void refuse(const std::string& node, int64_t now_mono_ms) {
    if (refused.empty()) refused_since_mono_ms = now_mono_ms;
    refused.insert(node);
  }
};

// --- the phases -------------------------------------------------------------------------------

// Known here, not decided here (yet): someone else's, undecided, or waiting to decide again.
struct Tracking {};

// At-most-once, no quorum of the eligible replicas reachable in our view: not fired yet.
struct Withheld {};

// One round-0 claim in flight, counted in its scheduler's total while it lives: held by
// Claiming, so whatever ends the phase — a transition, the occurrence forgotten — ends the
// count too (Scheduler::ClaimFlow::in_flight; docs/firing.md, Flow control).
class InFlight {
 public:
  InFlight() = default;
  explicit InFlight(size_t* count) : count_(count) { ++*count_; }
  InFlight(InFlight&& other) noexcept : count_(std::exchange(other.count_, nullptr)) {}
  InFlight& operator=(InFlight&& other) noexcept {
    if (this != &other) {
      release();
      count_ = std::exchange(other.count_, nullptr);
    }
    return *this;
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() { release(); }

 private:
  void release() {
    if (count_ != nullptr) --*count_;
    count_ = nullptr;
  }
  size_t* count_ = nullptr;
};

// Round 0: "grant o to me and accept my first attempt".
struct Claiming {
  InFlight in_flight;
  Ballot ballot;
  AttemptInfo attempt;  // accepted together with the claim; dispatched as is once we own o
  // The round-0 claim went to just enough replicas for a majority; a refusal, a "not
  // due" or a retry widens it to every replica.
  bool thrifty = true;
  // At-most-once: a replica granted this claim while holding another attempt of ours
  // accepted in round 0, which may have been dispatched: o goes to a higher round.
  bool met_older_value = false;
  // A replica holds a newer version of the entry: this claim decides under a definition
  // that no longer stands, and stops.
  bool superseded = false;
  // A replica holds the record that o's runs are over (kRan): o is done.
  bool ran = false;
};

// A takeover of at-most-once work: preparing round `round`, learning accepted values.
struct Preparing {
  Ballot ballot;
  uint64_t round = 0;
  bool ran = false;  // a replica holds the record that o's runs are over (kRan): o is done
  std::vector<std::pair<uint64_t, AttemptInfo>> values;  // every distinct accepted attempt named
  bool best_set = false;  // the latest accepted attempt named (by round, then attempt)
  uint64_t best_round = 0;
  AttemptInfo best;
  // Promisers that never said yes to a go ask of o (ClaimReply::went false): with a
  // majority of them, no prepared attempt of an earlier round can ever start.
  std::set<std::string> never_went;
  // How long o had been deferred to a stalled owner record when this round began
  // (Occ::owner_deferred_since_mono_ms): a round that meets a rival's and backs off keeps
  // it, so the next round waits out the backoff alone, not another owner_stall.
  int64_t owner_deferred_since_mono_ms = 0;
};

// This process owns o: it drives attempts until one runs.
struct Owned {
  FirePath path = FirePath::kQuorum;
  bool possible_duplicate = false;
  uint64_t round = 0;        // the round this ownership was won in (0: a round-0 claim or no vote)
  AttemptInfo claimed;       // round 0: the attempt a majority accepted with the claim
  std::set<std::string> silent;  // claim targets that never answered: not chosen as workers
  int64_t takeover_wait_until_utc_ms = 0;  // at-least-once takeover: a running attempt's complete_time
  bool recorded = false;  // this ownership's owner record was written
  uint32_t retry_announced = 0;  // failed runs for which a retry was announced (kRetryScheduled)
  // The entry changed in a way that governs o while it had prepared attempts (a delete, a
  // pause, an edit written before its instant): they are revoked, and any new attempt
  // follows a fresh look at the definition (Scheduler::supersede_owned).  Also set when a
  // replica refused an attempt as superseded: the new attempt waits for the newer record
  // (Scheduler::superseded_before_attempt).
  bool superseded = false;
  std::vector<Attempt> attempts;
};

enum class Outcome : uint8_t { kDone, kMissed, kLost, kSkipped, kSkippedOverlap };
const char* to_string(Outcome o);

struct Finished {
  Outcome outcome = Outcome::kDone;
  int64_t since_mono_ms = 0;
};

using Phase = std::variant<Tracking, Withheld, Claiming, Preparing, Owned, Finished>;
const char* phase_name(const Phase& p);

// --- deadlines: one per reason (quinn's timer table) -----------------------------------------

enum class Deadline : uint8_t {
  kResend,         // claim/prepare/accept/dispatch/revoke: send again to those that did not answer
  kNotDue,         // claim/prepare: the earliest replica that said "not due yet" is asked again
  kGiveUp,         // claim (at-least-once): stop waiting for a quorum that does not answer
  kWindow,         // the misfire window closes
  kHolderRecheck,  // deferring to a grant holder: look again after claim_give_up
  kOwnerSilence,   // a suspect owner counts as gone once silent this long
  kOwnerStall,     // at-most-once: stop deferring to an owner record that makes no progress
  kBackoff,        // after a split vote or a collided prepare: claim again
  kQuorumRetry,    // a takeover waits for a quorum to become reachable
  kAccept,         // the current attempt's accept deadline
  kComplete,       // at-least-once: the accepted attempt's complete_time
  kTakeoverWait,   // at-least-once takeover: wait for a running attempt's complete_time first
  kNoWorker,       // no eligible worker was reachable: choose again
  kBackup,         // not the master: decide anyway if the master made no progress by then
  kRetry,          // a run failed definitely: the next one is due after the back-off
  kInstant,        // preparing ahead: overlap is judged at F, an earlier run of the entry in flight
  kCount
};
const char* to_string(Deadline d);

struct Deadlines {
  std::array<int64_t, static_cast<size_t>(Deadline::kCount)> at;
  Deadlines() { at.fill(kNever); }
  int64_t& operator[](Deadline d) { return at[static_cast<size_t>(d)]; }
  int64_t operator[](Deadline d) const { return at[static_cast<size_t>(d)]; }
  int64_t earliest() const {
    int64_t best = kNever;
    for (int64_t t : at) best = t < best ? t : best;
    return best;
  }
  void clear() { at.fill(kNever); }
};

// --- one occurrence ------------------------------------------------------------------------------

struct Occ {
  uint64_t serial = 0;  // mono-wheel payload and worklist id
  std::string volume;
  OccurrenceId id;
  int64_t fire_utc_ms = 0;
  bool due = false;  // this replica's clock reached F (or it was enumerated as past)
  bool at_most_once = false;
  Phase phase;
  std::shared_ptr<const Entry> entry;  // captured when this node started deciding
  Version entry_version;               // of the entry's record `entry` was read from

  // What this replica knows of o, whatever its phase.
  std::map<std::string, OwnerRecord> owner_records;    // by owner node
  std::map<std::string, WorkerRecord> worker_records;  // by fire id
  std::optional<ProcessId> holder;  // who holds a grant (from replies or this node's own vote)
  bool holder_vouched = false;      // a replica that can see the holder says it is alive
  uint64_t known_round = 0;         // the highest round other processes are known to hold
  uint64_t my_round = 0;            // the round this process last proposed in
  uint32_t max_attempt = 0;         // the highest attempt number seen or created
  uint32_t claim_rounds = 0;        // round-0 claims this process started
  bool ever_owned = false;          // this process owned o at some point: its grants are never released
  bool overlap_refused = false;     // overlap = forbid: a replica refused a claim of o (kOverlap)
  uint32_t overlap_refusals = 0;    // such refusals, up to 5: the claim's back-off doubles with each
  // overlap = replace: the latest later occurrence of the entry that asked o to stop (a
  // replace record, ReplaceRecord); 0: none.  Workers stop o's runs, owners end o.
  int64_t replaced_by_utc_ms = 0;
  bool backup = false;              // deciding as a backup: the master made no progress (kBackup)
  // Replica side: when this node last granted a claim or accepted an attempt for o that may
  // lead to a dispatch (Scheduler::ack_hold_until_mono); 0: never.
  int64_t granted_mono_ms = 0;
  // Deferral clocks: deferring to a grant holder since, to another's open owner record since
  // (0 = not deferring).  The owner one runs until a takeover round starts.
  int64_t holder_deferred_since_mono_ms = 0;
  int64_t owner_deferred_since_mono_ms = 0;
  std::string deferred_reason;  // the last kDeferred detail emitted (emitted on change only)

  FirePath path = FirePath::kQuorum;  // how this process owned o (last), for events

  Deadlines deadlines;
  uint32_t fired = 0;     // deadlines that expired and woke this step (bit per Deadline)
  wheel::Handle timer{};  // the mono wheel's timer, at deadlines.earliest()
  bool timer_armed = false;
  int64_t timer_mono_ms = kNever;
  bool queued = false;  // in the worklist
  // Flow control (Scheduler::claim_admitted): decided while the claims in flight were at
  // their bound, o waits in its volume's Scheduler::ClaimFlow; let through, it may claim in the
  // step that follows without waiting again.
  bool waits_for_claim = false;
  bool claim_let_through = false;

  template <class P>
  bool is() const {
    return std::holds_alternative<P>(phase);
  }
  template <class P>
  P& as() {
    return std::get<P>(phase);
  }
  template <class P>
  const P& as() const {
    return std::get<P>(phase);
  }
  bool finished() const { return is<Finished>(); }
  bool woke_for(Deadline d) const { return (fired >> static_cast<unsigned>(d)) & 1u; }
  // Tracking or Withheld: nothing of ours in flight, a decision may start here.
  bool idle() const { return is<Tracking>() || is<Withheld>(); }
  // Some worker record says its attempt ran (accepted or ended), not only that it never
  // runs (refused, or revoked: a held run dropped without its owner's go).
  bool worker_ran() const {
    for (const auto& [fire_id, w] : worker_records) {
      if (ran(w.state)) return true;
    }
    return false;
  }
};

}  // namespace caesium::schedule::firing
