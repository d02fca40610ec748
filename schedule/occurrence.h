// Occurrence state as it lives in the volume store and on each node's disk.
//
// Replicated (volume store, one writer per key, so last-writer-wins never loses a fact
// that someone else wrote):
//   ~occ/<entity>/<name>/<T>/m/<node>      OwnerRecord: `node` owns o (quorum, degraded
//                                          or takeover) and the attempts it dispatched,
//                                          or the outcome it decided (missed, lost)
//   ~occ/<entity>/<name>/<T>/w/<fire_id>   WorkerRecord: the worker of one attempt:
//                                          accepted, completed, failed, refused, revoked
// where <T> is the scheduled instant as 16 hex digits (so keys sort by time).  Entity
// and name never contain '/', so the key parses back unambiguously.
//
// Node-local (not replicated; a vote must never be overwritten by someone else's):
//   g/<volume>/<entity>/<name>/<T>          Grant: which process this node granted o to
//
// Occurrence records are kept for the occurrence retention (which exceeds every
// misfire window) and then dropped locally by every replica, without tombstones: the
// key's <T> tells each replica when, and the store's merge filter refuses expired
// records, so anti-entropy cannot resurrect them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "schedule/entry.h"
#include "schedule/fire_messages.h"

namespace caesium::schedule {

inline constexpr std::string_view kOccPrefix = "~occ/";

// "~occ/<entity>/<name>/<T16hex>/"
std::string occ_prefix(const OccurrenceId& occ);
std::string owner_record_key(const OccurrenceId& occ, std::string_view node);
std::string worker_record_key(const OccurrenceId& occ, std::string_view fire_id);
std::string grant_key(std::string_view volume, const OccurrenceId& occ);
inline constexpr std::string_view kGrantPrefix = "g/";
struct ParsedGrantKey {
  std::string volume;
  OccurrenceId occ;
};
std::optional<ParsedGrantKey> parse_grant_key(std::string_view key);

struct ParsedOccKey {
  OccurrenceId occ;
  enum class Kind : uint8_t { kOwner, kWorker, kReplace } kind = Kind::kOwner;
  std::string suffix;  // owner node id, fire id, or the node asking for the replacement
};
std::optional<ParsedOccKey> parse_occ_key(std::string_view key);
// The same into `out`, reusing its strings' storage; false (out unspecified) if malformed.
bool parse_occ_key(std::string_view key, ParsedOccKey& out);
// The same parse without copying: views into `key`.
struct OccKeyView {
  std::string_view entity, name;
  int64_t scheduled_utc_ms = 0;
  ParsedOccKey::Kind kind = ParsedOccKey::Kind::kOwner;
  std::string_view suffix;
};
std::optional<OccKeyView> split_occ_key(std::string_view key);
bool is_occ_key(std::string_view key);

enum class FirePath : uint8_t {
  kQuorum = 0,    // a majority of the eligible set granted the claim
  kDegraded = 1,  // at-least-once without quorum: possible duplicate
  kTakeover = 2,  // at-least-once, the previous owner vanished: possible duplicate
};
const char* to_string(FirePath p);

enum class OwnerOutcome : uint8_t {
  kOpen = 0,     // dispatching / waiting for the worker
  kMissed = 1,   // never fired: misfire window passed (withheld, cluster down, policy)
  kLost = 2,     // at-most-once occurrence that may or may not have run, never re-run
  kSkipped = 3,  // not fired by the entry's misfire policy
  kSkippedOverlap = 4,  // not fired: due while a run of the entry was running (overlap = forbid)
};
const char* to_string(OwnerOutcome o);

struct OwnerRecord {
  ProcessId owner;
  FirePath path = FirePath::kQuorum;
  OwnerOutcome outcome = OwnerOutcome::kOpen;
  std::string reason;  // for missed/lost/skipped: why, in words
  int64_t decided_utc_ms = 0;
  std::vector<AttemptInfo> attempts;
  bool operator==(const OwnerRecord&) const = default;
};

enum class WorkerState : uint8_t {
  kAccepted = 0,
  kCompleted = 1,  // the handler reported success
  kFailed = 2,     // the handler ran and reported failure
  kRefused = 3,    // never ran, never will (durable)
  kRevoked = 4,    // never ran, never will: promised to the owner (durable)
  kTimedOut = 5,   // the handler ran and was stopped at the entry's timeout (a failure)
  kReplaced = 6,   // stopped (or never started) for a later occurrence: overlap = replace
};
const char* to_string(WorkerState s);
inline bool ran(WorkerState s) {
  return s == WorkerState::kAccepted || s == WorkerState::kCompleted || s == WorkerState::kFailed ||
         s == WorkerState::kTimedOut || s == WorkerState::kReplaced;
}
// The attempt's run is over (a replaced attempt may have been stopped before it started:
// it is over all the same, and not a failure: no retry follows it).
inline bool finished(WorkerState s) {
  return s == WorkerState::kCompleted || s == WorkerState::kFailed || s == WorkerState::kTimedOut ||
         s == WorkerState::kReplaced;
}
// Ran and ended in failure (a timeout is one).
inline bool failed(WorkerState s) { return s == WorkerState::kFailed || s == WorkerState::kTimedOut; }

struct WorkerRecord {
  ProcessId worker;
  uint32_t attempt = 0;
  WorkerState state = WorkerState::kAccepted;
  int64_t accepted_utc_ms = 0;
  int64_t finished_utc_ms = 0;
  bool possible_duplicate = false;
  std::string detail;
  // A prepared attempt (prepare_ahead): the instant it was held for, by the worker's
  // clock; 0 for one that started on acceptance.  Encoded only when set.
  int64_t run_at_utc_ms = 0;
  // Which run of the occurrence the attempt is (Dispatch::run); 1 is not encoded.
  uint32_t run = 1;
  bool operator==(const WorkerRecord&) const = default;
};

// overlap = replace: a node deciding occurrence `by` of the entry asks that occurrence
// `occ` (an earlier one) stop — every attempt of it, running or not yet started.  Kept
// under occ's prefix, one key per asking node (replace_record_key); workers stop what
// they run of occ, refuse what they would start, and the owner of occ ends it.
struct ReplaceRecord {
  ProcessId by;
  int64_t by_scheduled_utc_ms = 0;  // the later occurrence that replaces occ
  int64_t requested_utc_ms = 0;
  bool operator==(const ReplaceRecord&) const = default;
};
std::string replace_record_key(const OccurrenceId& occ, std::string_view node);

std::string encode(const OwnerRecord& r);
std::string encode(const WorkerRecord& r);
std::string encode(const ReplaceRecord& r);
Result<ReplaceRecord> decode_replace_record(std::string_view bytes);
// A replica's vote on one occurrence (node-local, durable): the round it promised and
// the latest attempt it accepted.
struct Vote {
  uint64_t promised_round = 0;
  ProcessId promised_by;
  bool has_accepted = false;
  uint64_t accepted_round = 0;
  ProcessId accepted_by;
  AttemptInfo accepted;
  // Local knowledge, not part of the vote: the accepted attempt can no longer run (its
  // proposer abandoned it unsent, or o's runs are over).  Read by the overlap rule only
  // (scheduler_overlap.cpp); a newly accepted attempt clears it.
  bool ended = false;
  // Local knowledge of this process, never encoded: it answered a go ask for an attempt of
  // o yes (scheduler_replica_go.cpp).  A previous process's yes is bounded by time instead.
  bool went = false;
  bool operator==(const Vote&) const = default;
};
std::string encode(const Vote& vote);
Result<OwnerRecord> decode_owner_record(std::string_view bytes);
Result<WorkerRecord> decode_worker_record(std::string_view bytes);
Result<Vote> decode_vote(std::string_view bytes);

// A stable, unique fire id for attempt `attempt` of `occ` by `owner`: 16 hex digits.
std::string make_fire_id(std::string_view volume, const OccurrenceId& occ, const ProcessId& owner,
                         uint32_t attempt);

}  // namespace caesium::schedule
