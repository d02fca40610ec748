// Messages of the firing protocol (docs/design.md §6), as plain values.
//
// Contract between schedule/ (the firing state machines that produce and consume them)
// and node/wire (which encodes them with the one Cap'n Proto schema).  All travel on
// the stream channel inside a frame that names its authenticated sender.
//
// An occurrence is identified within its volume by (entry key, scheduled UTC instant);
// the scheduled instant is nominal (before jitter).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/hlc.h"

namespace caesium::schedule {

struct OccurrenceId {
  std::string entry_key;         // "<entity>/caesium/schedule/<name>"
  int64_t scheduled_utc_ms = 0;  // nominal due instant

  auto operator<=>(const OccurrenceId&) const = default;
  bool operator==(const OccurrenceId&) const = default;
};

// A process incarnation: a node id plus a random boot id chosen at every start, so a
// restarted node is never mistaken for its previous life (which may have claimed or
// accepted things it no longer remembers).
struct ProcessId {
  std::string node;
  uint64_t boot = 0;
  bool operator==(const ProcessId&) const = default;
};

// One attempt at running an occurrence: a fire id, the worker it goes to, and when
// its owner first issued it.
struct AttemptInfo {
  uint32_t attempt = 0;
  std::string fire_id;
  std::string worker;
  int64_t issued_utc_ms = 0;
  // The run this attempt carries out (Dispatch::run): fixed when the attempt is proposed,
  // so whoever learns the attempt from a vote or an owner record knows that run - 1 runs
  // failed before it, even without their worker records (docs/firing.md, Retries).
  uint32_t run = 1;
  bool operator==(const AttemptInfo&) const = default;
};

// The votes on an occurrence are Paxos-like.  A round is first-come on every replica:
// round 0 is the ordinary claim, which carries the first attempt (prepare and accept
// in one step); a new master that must take over an at-most-once occurrence whose
// owner vanished prepares a higher round, learns the latest accepted attempt from a
// majority, and proposes a new attempt only after that one's worker revoked it.
enum class ClaimKind : uint8_t {
  kClaim = 0,    // round 0: grant o to the claimant and accept `attempt`
  kPrepare = 1,  // round >= 1: promise the round; answer with the latest accepted attempt
  kAccept = 2,   // accept `attempt` in the claimant's round
  // At-least-once: "is this definition still current?" before an attempt no vote backs (a
  // takeover, a redispatch).  The replica compares the entry version only: no vote, nothing
  // written; answers kGranted or kSuperseded (docs/firing.md, Deletes and edits).
  kCheck = 3,
};

// CLAIM(o, claimant, W): ask a replica to grant o to the claimant.
struct Claim {
  std::string volume;
  OccurrenceId occ;
  ProcessId claimant;
  std::string worker;        // the worker the claimant intends to use (informative)
  int64_t fire_utc_ms = 0;   // scheduled + jitter: a replica grants only once this is due by its clock
  ClaimKind kind = ClaimKind::kClaim;
  uint64_t round = 0;
  AttemptInfo attempt;       // kClaim, kAccept
  // The claimant's cluster config epoch and a hash of the volume's replica sets in it
  // (Topology::Volume::sets_hash).  A replica whose config is newer and names other sets
  // for the volume answers kStale: a claimant that missed a replica change must not
  // gather a majority of sets the cluster has left (docs/firing.md, Replica changes).
  // 0 and 0 from a sender that predates the fields: never refused as stale.
  uint64_t config_epoch = 0;
  uint64_t sets_hash = 0;
  // The version of the entry's record the claimant decides under (kClaim, kAccept).  A
  // replica holding a newer one (an edit, a delete) answers kSuperseded: once a change of
  // the entry is held by a majority, no claim of the old definition can win one
  // (docs/firing.md, Deletes and edits).  Zero: not known, never refused so.
  Version entry_version;
  // The claimant's lease on this round's answers: its mono clock when it (re)started
  // asking; replies echo it, and a claimant counts only answers to its current lease,
  // which it dispatches within SchedulerOptions::claim_lease_ms of.
  uint64_t lease = 0;
  // The entry is at-most-once with overlap = forbid (kClaim, kAccept): a replica refuses
  // (kOverlap) while it holds an accepted vote of another occurrence of the entry that it
  // does not know ended (docs/firing.md, Overlap).
  bool forbid_overlap = false;
  bool operator==(const Claim&) const = default;
};

enum class ClaimOutcome : uint8_t {
  kGranted = 0,     // durably recorded: o belongs to the claimant as far as this replica knows
  kHeld = 1,        // already granted to `holder`
  kNotDue = 2,      // not due by this replica's clock yet; retry after `retry_after_ms`
  kAbstain = 3,     // this replica cannot vote on o (amnesia horizon, not a replica, unknown entry)
  kStale = 4,       // the claim names replica sets of an older config epoch; retry after `retry_after_ms`
  kSuperseded = 5,  // this replica holds a newer version of the entry (edited or deleted)
  // overlap = forbid, at-most-once: this replica holds an accepted vote of another
  // occurrence of the entry that it does not know ended; retry after `retry_after_ms`.
  kOverlap = 6,
  // This replica holds the record that o's runs are over (a worker ran it, and no retry
  // follows): the claim stops, and the claimant reconciles with the replica.
  kRan = 7,
};

struct ClaimReply {
  std::string volume;
  OccurrenceId occ;
  ClaimOutcome outcome = ClaimOutcome::kGranted;
  ProcessId holder;          // for kGranted: the claimant; for kHeld: the current holder
  int64_t retry_after_ms = 0;
  bool holder_alive = false;  // kHeld: the replier sees the holder alive (non-transitive links)
  ClaimKind kind = ClaimKind::kClaim;  // echoes the request
  uint64_t round = 0;                  // echoes the request
  uint64_t promised_round = 0;         // the round this replica promised (kHeld: to `holder`)
  // The latest attempt this replica accepted, if any (answers kPrepare; informs kHeld).
  bool has_accepted = false;
  uint64_t accepted_round = 0;
  ProcessId accepted_by;
  AttemptInfo accepted;
  uint64_t lease = 0;  // echoes the claim's
  // kPrepare, kGranted: this replica answered a go ask yes for an attempt of o (or, restarted
  // since, cannot tell that its previous process did not).  A majority of promises
  // without it means that no prepared attempt of an earlier round can ever start
  // (docs/firing.md, Preparing ahead, "The replicas' go").
  bool went = false;
  bool operator==(const ClaimReply&) const = default;
};

// Sent by a claimant that failed to reach a majority (split vote) to the replicas that
// granted it, so they may grant again.  Never sent for an occurrence it owns.
struct Release {
  std::string volume;
  OccurrenceId occ;
  ProcessId claimant;
  bool operator==(const Release&) const = default;
};

// DISPATCH(o, fire_id, attempt) from the owner to the chosen worker.
struct Dispatch {
  std::string volume;
  OccurrenceId occ;
  ProcessId owner;
  std::string fire_id;        // unique per attempt
  uint32_t attempt = 1;
  bool at_most_once = false;
  bool possible_duplicate = false;
  int64_t accept_by_utc_ms = 0;  // a worker must not accept after this instant (its clock)
  std::string handler;
  std::string payload;
  uint64_t sequence = 0;      // 1-based occurrence number (Chronos X-Sequence-Number)
  int64_t issued_utc_ms = 0;  // first send of this fire id (owner's clock); retransmits keep it
  // A prepared attempt (SchedulerOptions::prepare_ahead_ms): the worker starts it at this
  // instant by its clock, once a majority of the eligible replicas' clocks passed it too.
  // 0: at once on acceptance.
  int64_t run_at_utc_ms = 0;
  int64_t timeout_ms = 0;  // the entry's timeout (0: the handler's own)
  // Which run of the occurrence this attempt is: 1, or n + 1 after n runs that failed
  // definitely (a retry; docs/firing.md, Retries).  Redispatches of one run keep it.
  uint32_t run = 1;
  // The most runs the occurrence may have under the definition dispatched with (retry
  // attempts; 1 without retries), so that a worker that does not hold the definition
  // still knows whether a failure of this run is the occurrence's last.  0: not said.
  uint32_t runs = 0;
  // The version of the entry's record the attempt was decided under.  A worker holding a
  // newer one that governs the occurrence (a delete, a pause, an edit written before its
  // instant) refuses the attempt, and drops it if held (prepared) when its instant comes
  // (docs/firing.md, Preparing ahead).  Zero: not said, never refused so.
  Version entry_version;
  // The worker's boot the owner addressed when it first issued this fire id (its view of
  // the worker then; 0: not known).  A worker whose own boot it is knows that no previous
  // process of it received the dispatch, so its amnesia horizon does not apply to it.
  uint64_t worker_boot = 0;
  // The entry's on_failure handler under the definition dispatched with ("" for none), for
  // the same reason as `runs`: the worker notices a failed last run (node/core/notify.cpp).
  std::string on_failure;
  bool operator==(const Dispatch&) const = default;
};

enum class DispatchOutcome : uint8_t {
  kAccepted = 0,   // durably recorded; the handler runs
  kRefused = 1,    // will never run this attempt (durably recorded for at-most-once)
  kBusy = 2,       // refused: a running cap of the worker is reached (a kRefused that says why)
};

struct DispatchReply {
  std::string volume;
  OccurrenceId occ;
  std::string fire_id;
  DispatchOutcome outcome = DispatchOutcome::kAccepted;
  std::string reason;
  // kAccepted: the boot id of the process that accepted the attempt, so that the owner
  // can tell that process from a later one on the same node even before the worker
  // record reaches it (its push may be held back, and is lost if the worker's disk is).
  // 0 from a sender that predates the field: the owner then knows the node only.
  uint64_t worker_boot = 0;
  bool operator==(const DispatchReply&) const = default;
};

// REVOKE: before redispatching an at-most-once occurrence whose worker did not accept
// in time, the owner asks the worker to promise it never will.
struct Revoke {
  std::string volume;
  OccurrenceId occ;
  std::string fire_id;
  int64_t issued_utc_ms = 0;  // when the revoked dispatch was first issued (owner's clock)
  // Prepared: the revoked dispatch's run_at.  A worker that lost its disk since can still
  // promise never to run it while its instant is beyond anything its previous process
  // can have reached (docs/firing.md, Preparing ahead).  0: not prepared (or not said).
  int64_t run_at_utc_ms = 0;
  uint64_t worker_boot = 0;  // Dispatch::worker_boot of the revoked dispatch
  bool operator==(const Revoke&) const = default;
};

enum class RevokeOutcome : uint8_t {
  kRevoked = 0,    // never accepted; durably promised never to
  kAccepted = 1,   // accepted (running)
  kCompleted = 2,  // ran to completion
  kUnknown = 3,    // cannot tell (this worker lost its disk since the dispatch)
};

struct RevokeReply {
  std::string volume;
  OccurrenceId occ;
  std::string fire_id;
  RevokeOutcome outcome = RevokeOutcome::kUnknown;
  uint64_t worker_boot = 0;  // kAccepted / kCompleted: as in DispatchReply
  bool operator==(const RevokeReply&) const = default;
};

// GO: an owner's word that its prepared attempts at a worker may start (docs/firing.md,
// Preparing ahead, "The owner's go").  Sent once per worker per tick while some of its
// attempts there reach their instant, not once per attempt.  A worker starts a held
// attempt only once the process that dispatched it sent a go with up_to_utc_ms at or past
// the attempt's run_at that does not list it as fenced (its own clock checks still
// apply); one that no such go reaches within owner_silence of run_at is dropped, recorded
// revoked.  An owner fences an attempt only while no go it sent that worker reached the
// attempt's instant, and lists it in every later go: a fenced attempt never starts, so its
// owner may run the occurrence elsewhere even when the worker is gone or cut off.
struct Go {
  ProcessId owner;                  // the sender's process: only its own attempts are meant
  int64_t up_to_utc_ms = 0;         // the owner's clock when it sent this go
  std::vector<std::string> fenced;  // fire ids that never start
  bool operator==(const Go&) const = default;
};

// GO ASK: a worker whose prepared at-most-once run reached its instant asks the replicas
// whether it may start (docs/firing.md, Preparing ahead, "The replicas' go").  One message
// per replica per loop turn, for every run the worker asks about.  A replica answers yes
// only for the attempt its vote accepted in the round it promised, once its own clock
// reads the instant; it remembers the yes, and a later prepare of a higher round learns it
// (ClaimReply::went).  The run starts only with yes from a majority of every quorum set.
struct GoAsk {
  struct Item {
    std::string volume;
    OccurrenceId occ;
    std::string fire_id;
    int64_t run_at_utc_ms = 0;
    bool operator==(const Item&) const = default;
  };
  std::vector<Item> items;
  bool operator==(const GoAsk&) const = default;
};

enum class GoVerdict : uint8_t {
  kYes = 0,     // this replica backs the attempt and its clock passed run_at: recorded
  kNotYet = 1,  // it backs the attempt, its clock has not reached run_at: ask again
  kNo = 2,      // it does not back the attempt (no vote of it, or a higher round promised)
};

struct GoAnswer {
  struct Item {
    std::string fire_id;
    GoVerdict verdict = GoVerdict::kNo;
    bool operator==(const Item&) const = default;
  };
  std::vector<Item> items;
  bool operator==(const GoAnswer&) const = default;
};

}  // namespace caesium::schedule
