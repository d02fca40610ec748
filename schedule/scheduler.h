// The scheduler: every replica's index of upcoming occurrences, and the firing
// protocol of docs/design.md §6 — master, claims, grants, workers — as one sans-IO state
// machine per node (covering all the volumes this node is a replica of).
//
// Roles, per occurrence o = (volume, entry, scheduled T), fire time F = T + jitter:
//   replica  holds the entry, tracks o once F passes by its clock, votes on claims
//            (grants the first claimant, durably, only once o is due by its clock),
//            and learns the fate of o from occurrence records in the volume store.
//   master   the replica the membership view elects for the volume; decides each due o.
//   owner    the process (node + boot id) that holds o: it won a quorum claim, or
//            fired it degraded (at-least-once without quorum), or took it over
//            (at-least-once, previous owner gone).  Only the owner dispatches.
//   worker   the replica the owner picks to run the handler; records accept/complete.
//
// Safety argument for at-most-once (the checker in sim/ tests it under faults):
//   1. An AMO occurrence is dispatched only by a process holding grants from a majority
//      of the *configured* eligible set (of both sets during a replica change).  Grants
//      are durable before they are sent and a replica grants o at most once (until the
//      claimant releases it, which it does only when it does not own o), so two
//      processes can never both own o: majorities intersect.
//   2. A wiped replica (amnesia) abstains on every occurrence due before its restart
//      horizon (restart time + 2 x max skew): those are exactly the ones it may have
//      granted in its previous life.  Later ones it cannot have granted before.
//   3. The owner redispatches an AMO occurrence only after the previous worker refused
//      or durably revoked it.  A worker accepts an attempt at most once (durable worker
//      record), never after the attempt's accept deadline, and — if wiped since — never
//      an attempt issued before its restart horizon.  A new owner never redispatches an
//      AMO occurrence: ownership of AMO work is not transferable, so in-flight AMO work
//      whose owner vanished is reported `lost`, never re-run.
// At-least-once gives up uniqueness where it must: without quorum it fires in its own
// component (`possible_duplicate`), and a master whose owner vanished takes over.
//
// Outputs go through SchedulerHost.  The host must not call back into the scheduler
// from inside a host call (store writes are applied after the scheduler returns; the
// scheduler updates its own view of what it wrote immediately, and treats the echo
// from the store observer as idempotent).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "base/slot_index.h"
#include "base/time.h"
#include "schedule/entry.h"
#include "schedule/entry_codec.h"
#include "schedule/fire_messages.h"
#include "schedule/firing_state.h"
#include "schedule/invocation.h"
#include "schedule/occurrence.h"
#include "wheel/timing_wheel.h"

namespace caesium::schedule {

using FireMessage =
    std::variant<Claim, ClaimReply, Release, Dispatch, DispatchReply, Revoke, RevokeReply, Go, GoAsk, GoAnswer>;

// What the scheduler needs to know of the cluster configuration.
struct Topology {
  struct Volume {
    std::vector<std::string> replicas;           // sorted
    std::vector<std::string> previous_replicas;  // non-empty while a replica change is in flight
    uint64_t sets_hash = 0;  // of both lists; set by Scheduler::set_topology (sets_hash())
  };
  uint64_t epoch = 0;  // the cluster config epoch this topology comes from
  std::map<std::string, Volume> volumes;
  std::map<std::string, std::vector<std::string>> node_tags;  // sorted tags per node id
};

// A hash of a volume's replica sets (both lists, in order): two configs that give the
// volume the same sets hash alike, whatever else changed between them.
uint64_t sets_hash(const Topology::Volume& v);

// The membership view of one node, as the scheduler needs it.
struct PeerView {
  bool reachable = false;  // alive or suspect (self is always reachable)
  bool suspect = false;    // suspect, or dead in the view but heard from: avoided as a worker
  bool direct = false;     // heard from directly and recently (not only through relays)
  bool known = false;      // present in the membership at all
  uint64_t boot = 0;       // its current boot id, when known
  uint32_t load = 0;       // running + queued handlers it reports
  uint32_t slots = 0;      // handler slots it advertises (0 = unknown)
  int64_t silent_ms = kNever;  // since we last received anything from it (kNever: never)
  // At least how far its clock is ahead of ours, from the sender times of its recent
  // frames (node/core/clock_watch.h): its clock reads at least our clock plus this.
  // kClockUnknown without recent frames; 0 for this node itself.
  static constexpr int64_t kClockUnknown = INT64_MIN;
  int64_t clock_ahead_ms = kClockUnknown;
};

struct SchedulerOptions {
  int64_t claim_retry_ms = 300;           // resend claims to replicas that did not answer
  int64_t claim_give_up_ms = 3'000;       // at-least-once: fire degraded if no quorum by then
  // A suspect owner (or claimant) this node has not heard anything from for this long
  // counts as gone: the master takes its open work over (at-least-once flagged, at-most-
  // once through a higher round) instead of waiting for the suspicion to expire, which
  // Lifeguard stretches to 6x its minimum when few peers can confirm it (~24 s with three
  // replicas).  A member that is only falsely suspected is still heard from.
  int64_t owner_silence_ms = 5'000;
  int64_t misfire_threshold_ms = 30'000;  // later than this, an occurrence is a misfire
  int64_t occurrence_retention_ms = 24 * kMsPerHour;
  int64_t revoke_retry_ms = 1'000;
  int64_t max_clock_skew_ms = 1'000;
  int64_t max_backlog_per_entry = 10'000;  // catch-up enumeration bound per entry
  // Due entries handled per tick; the rest wait for the next tick (at once), so a burst
  // of due occurrences cannot stall the event loop long enough for peers to suspect us.
  int64_t max_due_per_tick = 512;
  int64_t terminal_linger_ms = 60'000;     // keep finished occurrences in memory this long
  // Expired votes dropped per turn of the loop (a burst's votes expire together).
  size_t purge_step = 4096;
  // Preparing ahead (docs/firing.md, Preparing ahead): the master claims, owns and
  // dispatches an occurrence this long before its fire time F, replicas grant it from
  // F - prepare_ahead on their clocks, and the worker holds the accepted attempt until
  // its own clock reads F and, unless the attempt is a possible duplicate, the clocks of
  // a majority of the eligible replicas (itself included) are known to have passed F.
  // 0: off (claims at F, runs on acceptance).  Every replica of a cluster should use the
  // same value; a mix is safe, only slower.  5 s by default: a burst of 100,000 is
  // prepared within it on 2 cores, and it is short enough that what it costs — a wiped
  // replica abstains that much longer, occurrences are decided that long before they are
  // due — stays small (docs/firing.md, "Why preparing is on by default").
  int64_t prepare_ahead_ms = 5'000;
  // A replica that is not the master of a volume decides a due at-most-once occurrence itself when
  // nothing shows progress on it (no owner or worker record) backup_step_ms times its
  // backup rank after the fire time: a master that looks alive but cannot win a claim (a
  // gray failure: its messages to some replicas are lost) would otherwise leave a
  // connected majority waiting for it (docs/firing.md, Backup deciders).
  int64_t backup_step_ms = 5'000;
  // A claim's grants (and a new attempt's acceptances) count for a dispatch only within
  // this long of when the claimant began asking for them; a replica holds back its
  // acknowledgement of an edit or delete of an entry while it holds a grant for it that
  // is younger than this (plus a margin) and not known dispatched.  So once a majority
  // acknowledged a delete, no claim granted before it can still be dispatched
  // (docs/firing.md, Deletes and edits).
  int64_t claim_lease_ms = 2'000;
  // Flow control: the most round-0 claims this process has in flight at once in one
  // volume; an occurrence decided while that many are open waits, in the order decided,
  // for one to end (docs/firing.md, Flow control).  Past the cluster's capacity a burst then queues
  // on the master instead of in the replicas' streams, where answers older than the claim
  // lease would not count and would be asked for again.  0: no bound.
  int64_t max_claims_in_flight = 4'096;
  // Check the protocol's invariants after every input (the simulator and debug builds;
  // costs a look at every occurrence an input touched).
  bool check_invariants = false;
  bool test_grant_every_claim = false;     // TEST ONLY: break the protocol (checker must bite)
  // TEST ONLY: grant claims of overlap = forbid entries while another occurrence of the
  // entry may be running (the checker's overlap rule must bite).
  bool test_grant_ignores_overlap = false;
  // Hard caps on the handlers this node runs at once (docs/firing.md, Concurrency caps):
  // all together (0: none), and per handler name.  A dispatch that would exceed one is
  // refused "busy" (DispatchOutcome::kBusy) and never runs here; its owner tries another
  // worker, or waits.  Accepted attempts held for their instant count from acceptance.
  uint32_t running_cap = 0;
  std::map<std::string, uint32_t> handler_caps;
  // TEST ONLY: accept dispatches beyond the running caps (the checker's cap rule must bite).
  bool test_ignore_running_cap = false;
};

// Something that happened to an occurrence, for metrics, history, logs and the
// simulator's report.  Emitted by the node where it happened.
struct FireEvent {
  enum class Kind : uint8_t {
    kDue,           // tracked as due on this replica
    kOwned,         // this node became owner (path tells how)
    kDispatched,    // owner sent attempt `attempt` to `node`
    kAccepted,      // this worker accepted
    kCompleted,     // this worker's handler finished (ok tells success)
    kWithheld,      // at-most-once without quorum: not fired (yet)
    kMissed,        // owner/master decided it never fires (window passed, policy, no replica)
    kLost,          // at-most-once in flight whose owner/worker vanished; never re-run
    kSkipped,       // misfire policy skipped it
    kRedispatched,  // owner dispatches another attempt
    kGranted,       // this replica granted a claim
    kDeferred,      // the master leaves o to another process for now (detail says why)
    kStarted,       // this worker started the handler (lateness: from the fire time)
    kSkippedOverlap,  // overlap = forbid: due while a run of the entry was running
    kRetryScheduled,  // a run failed definitely: the owner runs attempt `attempt` after the back-off
  };
  Kind kind = Kind::kDue;
  std::string volume;
  OccurrenceId occ;
  std::string node;
  uint32_t attempt = 0;
  uint32_t run = 0;  // worker events: the run's number (1 = the first; retries count up)
  uint32_t runs = 0;  // worker events: the most runs the occurrence may have (Dispatch::runs; 0: not said)
  std::string on_failure;  // worker events with runs > 0: Dispatch::on_failure
  bool at_most_once = false;
  FirePath path = FirePath::kQuorum;
  bool ok = true;
  bool replaced = false;  // kCompleted: stopped for a later occurrence (overlap = replace), not a failure
  int64_t lateness_ms = 0;
  std::string detail;
};
const char* to_string(FireEvent::Kind k);

class SchedulerHost {
 public:
  virtual ~SchedulerHost() = default;
  // Sends a firing message to `node` (self included: the host loops it back).  With
  // `after_durable`, not before everything written so far is durable.
  virtual void send(const std::string& node, FireMessage msg, bool after_durable) = 0;
  // Writes a record into a volume's replicated store (persisted and pushed by the host).
  virtual void store_put(const std::string& volume, const std::string& key, std::string value) = 0;
  // Like store_put (persisted and visible at once), but the push to the other replicas
  // may wait up to the host's push hold; a later write of the same key within it
  // replaces it, so only the newer version travels.  For records nobody waits on
  // promptly: a worker's acceptance, which its completion usually supersedes (docs/firing.md).
  virtual void store_put_lazy(const std::string& volume, const std::string& key, std::string value) = 0;
  // Node-local durable state (grants).
  virtual void local_put(const std::string& key, std::string value) = 0;
  virtual void local_erase(const std::string& key) = 0;
  // Starts a handler, after everything written so far is durable.
  virtual void invoke(Invocation invocation) = 0;
  // Stops a running handler (overlap = replace): exec is terminated, http aborted, and
  // the run reports back through on_invocation_done with InvocationResult::replaced (or
  // as it ended, if it ended first).  A host that cannot stop handlers lets them run to
  // their end: at-most-once stays safe (the next run waits for this one's end).
  virtual void cancel(uint64_t invocation_id) { (void)invocation_id; }
  // A mark of everything written so far, and a start that waits only for that much to be
  // durable: a prepared run needs its acceptance durable, which it was long before its
  // instant, not the completion records written since (waiting for each group commit
  // made every run of a burst as late as a commit).
  virtual uint64_t write_mark() const = 0;
  virtual void invoke_after(Invocation invocation, uint64_t mark) = 0;
  // `event` is valid during the call only (the scheduler reuses it).
  virtual void emit(const FireEvent& event) = 0;
  virtual PeerView peer(const std::string& node) const = 0;
  // PeerView::clock_ahead_ms alone (asked for every prepared run, so without the rest of
  // the view).  A host that cannot tell answers kClockUnknown, and prepared attempts wait
  // for ever where this node alone is no majority: such hosts keep prepare_ahead at 0.
  virtual int64_t clock_ahead(const std::string& node) const { return peer(node).clock_ahead_ms; }
  // Reads a record of a volume's replicated store (in memory; store_put is visible at
  // once).  nullopt when absent or a tombstone.
  virtual std::optional<std::string> store_get(const std::string& volume, const std::string& key) const = 0;
  // The version of a key's record, a tombstone's included; nullopt when absent.  A host
  // that cannot tell answers nullopt: claims then carry no version and nothing is refused
  // as superseded.
  virtual std::optional<Version> entry_version(const std::string& volume, const std::string& key) const {
    (void)volume;
    (void)key;
    return std::nullopt;
  }
  // A key's record in one lookup: store_get's value and entry_version's version.  A host
  // that keeps its store in memory answers both from one find.
  struct EntryRead {
    std::optional<std::string> value;
    std::optional<Version> version;
  };
  virtual EntryRead read_entry(const std::string& volume, const std::string& key) const {
    return EntryRead{store_get(volume, key), entry_version(volume, key)};
  }
  // Whether this node hears from its peers at all lately.  A node that hears nobody
  // suspects itself first (its own links, or its own slowness) and does not act as a
  // backup decider: from its side every master looks stalled.
  virtual bool hears_peers() const { return true; }
  // `node` holds a newer record of `volume` than this one (it refused a claim as
  // superseded): reconcile with it soon.
  virtual void behind(const std::string& volume, const std::string& node) {
    (void)volume;
    (void)node;
  }
};

struct SchedulerCounters {
  uint64_t due = 0, owned_quorum = 0, owned_degraded = 0, owned_takeover = 0;
  uint64_t dispatched = 0, redispatched = 0, accepted = 0, completed = 0, failed = 0, timed_out = 0, retried = 0;
  uint64_t withheld = 0, missed = 0, lost = 0, skipped = 0, skipped_overlap = 0, overlap_refused = 0, granted = 0, refused_claims = 0;
  uint64_t bad_records = 0;
  // At-most-once dispatches this node left unanswered because they were issued before it
  // restarted without its disk (a previous life may have run them; see on_dispatch).
  uint64_t dispatches_ignored_after_wipe = 0;
  // Thrifty round-0 claims that had to ask the replicas left out (a refusal, a "not due",
  // or no majority by the first retry).
  uint64_t claims_widened = 0;
  // Claims refused because the claimant's config named other replica sets for the volume
  // at an older epoch, and claims of ours refused so.
  uint64_t stale_claims_refused = 0, stale_claims_sent = 0;
  // Accepted attempts held for their instant (prepare_ahead_ms), counted at acceptance,
  // and those revoked before they started (held here, or accepted by a previous process).
  uint64_t prepared = 0, prepared_revoked = 0, prepared_superseded = 0, prepared_fenced = 0, prepared_no_go = 0;
  // The replicas' go (scheduler_replica_go.cpp): runs asked about (each look that asked),
  // yes answers this replica gave, held runs dropped without a majority's yes by go_by, and
  // adopted attempts a takeover counted revoked from a majority of promises that never said yes.
  uint64_t go_asks_sent = 0, go_yes_given = 0, prepared_no_replicas_go = 0, prepared_fenced_by_promises = 0;
  // Claims refused because this replica holds a newer version of the entry (an edit or a
  // delete), and claims of ours refused so.
  uint64_t superseded_claims_refused = 0, superseded_claims_sent = 0;
  // Claims refused because this replica holds the record that the occurrence's runs are
  // over, and claims of ours refused so.
  uint64_t ran_claims_refused = 0, ran_claims_sent = 0;
  // Dispatches refused here because a running cap was reached, and dispatches of ours
  // refused so (the owner then tries another worker, or waits).
  uint64_t busy_refused = 0, busy_refusals_received = 0;
  // overlap = replace: runs this node asked to stop for a later occurrence (replace
  // records written), and runs stopped here (recorded replaced).
  uint64_t replace_asked = 0, replaced = 0;
};

class Scheduler {
 public:
  Scheduler(ProcessId self, SchedulerOptions options, SchedulerHost& host, int64_t start_mono_ms,
            int64_t start_utc_ms);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // --- configuration and view ---------------------------------------------------------
  void set_topology(Topology topology, Clock now);
  // The running caps (SchedulerOptions::running_cap, handler_caps), e.g. on a reload.
  void set_running_caps(uint32_t running_cap, std::map<std::string, uint32_t> handler_caps);
  // Whether this node is master of `volume` in its own view.
  void set_master(const std::string& volume, bool master, Clock now);
  // This node's place after the master among the replicas of `volume` alive in its view,
  // in the master rule's order: 1 for the next, 2 for the one after; 0 when it is the
  // master or may not decide (not synced since it started).  See backup_step_ms.
  void set_backup_rank(const std::string& volume, uint32_t rank, Clock now);
  // Masters do not decide anything before the node has joined (startup grace): a node
  // alone in its own view would otherwise fire everything degraded.
  void set_active(bool active, Clock now);
  // A graceful stop (Node::leave): this process stops deciding, drops the runs it holds
  // for their instants (recorded revoked: it will not be there to start them) and refuses
  // further prepared dispatches, so planned restarts lose no prepared work.
  void leave(Clock now);
  // Occurrences due at or before this UTC instant may have been granted or accepted in a
  // previous life whose disk is gone; this node abstains / refuses on them.  0 = none.
  void set_amnesia_horizon(int64_t utc_ms) { amnesia_horizon_utc_ms_ = utc_ms; }
  int64_t amnesia_horizon_utc_ms() const { return amnesia_horizon_utc_ms_; }
  // A peer's reachability, boot id or load changed.
  void on_peer_change(const std::string& node, Clock now);

  // --- inputs ---------------------------------------------------------------------------
  // A record of a volume store changed (store observer), or was loaded at start.
  // value = nullopt: deleted or removed.  Entry keys and occurrence keys matter; other
  // keys are ignored.  Records are applied, not acted on: the occurrences they touch are
  // decided at settle() (or the next other input; next_deadline_mono is then now), so a
  // batch — an anti-entropy session's records — is decided on as a whole.  Fed one by
  // one, a vanished owner's record (keys .../m/...) was acted on before the completion
  // record (.../w/...) of the same batch, and a restarted node ran again what had run.
  void on_record(const std::string& volume, const std::string& key,
                 const std::optional<std::string>& value, Clock now);
  void settle(Clock now);
  // Until when (mono ms) this replica holds back its acknowledgement of a write of the
  // entry `key` (an edit or a delete): until every grant it gave for an occurrence of the
  // entry that may still lead to a dispatch is older than the claim lease plus a margin.
  // Now or earlier: no hold.  See SchedulerOptions::claim_lease_ms.
  // `written_mono_ms`: when the write arrived here (a grant given after it was given under
  // its version or a newer one); INT64_MAX: any time.
  int64_t ack_hold_until_mono(const std::string& volume, const std::string& key,
                              int64_t written_mono_ms = INT64_MAX) const;
  // A node-local record loaded at start (grants).
  void on_local_record(const std::string& key, const std::string& value);
  void on_message(const std::string& from, const FireMessage& msg, Clock now);
  void on_invocation_done(const InvocationResult& result, Clock now);
  void on_tick(Clock now);

  // --- outputs and introspection ---------------------------------------------------------
  int64_t next_deadline_mono() const;  // kNever if nothing is scheduled
  const SchedulerCounters& counters() const { return counters_; }
  size_t entry_count() const { return entry_index_.size(); }
  size_t tracked_occurrences() const { return occs_.size(); }
  // Handlers started and not finished (prepared attempts held for their instant are not).
  size_t running_invocations() const { return running_.size() - held_.size(); }
  size_t held_invocations() const { return held_.size(); }
  // The earliest instant (UTC ms) at which a held prepared run is due or looked at again;
  // kNever when none is held.  The node holds its background work back while one is
  // near (a burst of prepared runs: NodeOptions::burst_hold_ms).
  int64_t next_held_utc_ms() const { return held_.empty() ? kNever : held_.begin()->first.first; }
  // When this node last started a held prepared run (UTC ms; 0: never).  The host may run
  // a started handler a loop turn later, so a burst is not over when the last one starts.
  int64_t last_held_start_utc_ms() const { return last_held_start_utc_ms_; }
  // Handlers of `volume`'s occurrences running here: their completion records are still
  // to be written (a node that stops replicating the volume keeps it open until then).
  bool running_in(const std::string& volume) const;
  // Whether this node still withholds the occurrence (at-most-once, no quorum in view; a
  // FireEvent kWithheld said when it began).  False once it moved on or is forgotten.
  bool withheld(const std::string& volume, const OccurrenceId& id) const;
  size_t grant_count() const { return votes_.size(); }
  // Rows of the interned (volume, entry key) table, free ones included: it never grows
  // past the most entries occurrences and votes named at one time.
  size_t interned_rows() const { return interned_.size(); }
  // The next scheduled instant of an entry, if it has one (for the API).
  std::optional<int64_t> next_scheduled(const std::string& volume, const std::string& key) const;
  // Debug/simulation: asserts internal consistency.
  void check_invariants() const;

 private:
  using Occ = firing::Occ;
  using Attempt = firing::Attempt;
  using AttemptState = firing::AttemptState;
  using Deadline = firing::Deadline;
  using Outcome = firing::Outcome;

  // --- the entry index (scheduler_index.cpp) ------------------------------------------------
  // Occurrences are keyed by an interned (volume, entry key) and the scheduled instant,
  // so lookups compare two integers instead of two strings.  An id lives while some key
  // of occs_ or votes_ names it (InternedEntry::refs); then it is freed and reused by the
  // next new entry (latest freed first), so one-shot timers, each an entry of its own,
  // neither grow the table nor need it compacted (which renumbered every occurrence and
  // vote at once: ~0.4 s for 800k, caesium-bench retention).  Ids depend only on the order
  // of inputs (deterministic), and ordered maps keep iteration order reproducible.
  struct OccKey {
    uint32_t entry = 0;
    int64_t scheduled_utc_ms = 0;
    auto operator<=>(const OccKey&) const = default;
  };
  struct InternedEntry {
    std::string volume;
    std::string entry_key;
    uint32_t tag = 0;   // SlotIndex::tag of interned_hash(volume, entry_key)
    uint32_t refs = 0;  // keys of occs_ and votes_ naming this id (0: free, in free_interned_)
  };
  static uint64_t interned_hash(const std::string& volume, const std::string& entry_key);
  std::optional<uint32_t> find_interned(const std::string& volume, const std::string& entry_key, uint32_t tag) const;
  // The id of (volume, entry key), allocated when new.  REQUIRES: the caller inserts a
  // key naming it into occs_ or votes_ (and retains it) before anything else interns.
  uint32_t intern(const std::string& volume, const std::string& entry_key);
  void retain_interned(uint32_t id) { ++interned_[id].refs; }
  void release_interned(uint32_t id);  // a key naming it left occs_ or votes_; the last one frees it
  std::optional<OccKey> known_occ_key(const std::string& volume, const OccurrenceId& id) const;  // without interning
  OccKey occ_key(const std::string& volume, const OccurrenceId& id) {
    return OccKey{intern(volume, id.entry_key), id.scheduled_utc_ms};
  }

  // One per entry of a replicated volume: only what arming needs.  The definition itself
  // is not kept here: it lives (encoded) in the volume store and is decoded when an
  // occurrence of the entry becomes due (load_entry), so a replica holding millions of
  // entries pays 48 bytes here (plus its key bytes, a wheel timer and ~8 bytes of
  // index) instead of a decoded Entry.  Measured by `caesium-bench replica-memory`.
  static constexpr int64_t kNoNext = INT64_MIN;  // next_scheduled_utc_ms: no further occurrence
  struct EntryRec {
    int64_t created_utc_ms = 0;  // of the definition last seen: a re-creation restarts the cursor
    int64_t cursor_utc_ms = 0;   // occurrences scheduled at or before this were enqueued
    int64_t next_scheduled_utc_ms = kNoNext;  // its fire time is the wheel timer's deadline
    wheel::Handle handle{};
    uint32_t key_offset = 0;  // the key: key_arena_[key_offset, + key_size)
    uint32_t tag = 0;         // SlotIndex::tag(slot_hash(volume, key))
    uint32_t volume = 0;      // index into volume_names_
    uint16_t key_size = 0;    // entry keys are a few hundred bytes at most
    bool armed = false;
    bool live = false;  // slot in use
    bool has_next() const { return next_scheduled_utc_ms != kNoNext; }
  };
  // The entry index finds slots by (volume, key) through the slot's own tag and key, so
  // the key is stored once (base/slot_index.h).
  static uint64_t slot_hash(uint32_t volume, std::string_view key);
  std::optional<uint32_t> find_slot(uint32_t volume, std::string_view key) const;
  // Keys of live slots live back to back in one arena (no allocation and no pointer per
  // key); a removed key is garbage until the arena is compacted, which happens when
  // garbage is most of it.  A view from key_of is valid until the next store_key.
  std::string_view key_of(const EntryRec& rec) const { return {key_arena_.data() + rec.key_offset, rec.key_size}; }
  bool store_key(EntryRec& rec, std::string_view key);  // false: the arena is full (4 GiB)
  void compact_keys();
  uint32_t volume_id(const std::string& volume);  // adds it when new
  std::optional<uint32_t> find_volume_id(const std::string& volume) const;
  const EntryRec* entry_of(const std::string& volume, const std::string& key) const;
  // The entry's current definition, decoded from the volume store; null when absent (or
  // undecodable, counted as a bad record).
  // `version`, when given, gets the record's version from the same lookup.
  std::shared_ptr<const Entry> load_entry(const std::string& volume, const std::string& key,
                                          Version* version = nullptr);
  // o's definition and its record's version, from the store; false when the entry is gone.
  bool load_definition(Occ& o);
  // An entry's record changed (edited or deleted): what this node was deciding about its
  // occurrences under the old definition stops, and they are decided again.
  void entry_changed(const std::string& volume, const std::string& key, Clock now);
  // The (re)loaded definition no longer has o: deleted, or its schedule moved.  Finished
  // (skipped) by a deciding node; true when o is not to run.
  bool unscheduled(Occ& o, Clock now);
  void upsert_entry(const std::string& volume, const std::string& key, const Entry& entry, Clock now);
  void remove_entry(const std::string& volume, const std::string& key);
  void arm_entry(uint32_t slot, const Entry& entry);
  void poll_due_entries(Clock now);  // the UTC wheel: entries whose next fire time passed
  void entry_due(uint32_t slot, Clock now);
  // A due occurrence not tracked yet that its policy will not run anyway: counted (by the
  // master) and not tracked.  True when it was dropped so.
  bool drop_untracked_late(const std::string& volume, const OccurrenceId& id, const Entry& entry,
                           const EntryRec& after, bool master, Clock now);

  // --- occurrences (scheduler.cpp) -------------------------------------------------------------
  Occ& track(const std::string& volume, const OccurrenceId& id, Clock now, const Entry* entry = nullptr);
  Occ* find_occ(const std::string& volume, const OccurrenceId& id);
  bool is_replica(const std::string& volume) const;
  // The worklist: an input marks the occurrences it touched; drain() steps each once per
  // mark, in the order marked (the last mark first, so a transition's continuation runs
  // before unrelated work, as a call would).  Deciding functions never call each other:
  // a transition marks its occurrence and returns.
  void touch(Occ& o);
  void drain(Clock now);
  void step(Occ& o, Clock now);
  void touch_volume(const std::string& volume);
  // Deadlines (firing_state.h): one per reason; the mono wheel holds the earliest.
  void set_deadline(Occ& o, Deadline d, int64_t mono_ms);
  void clear_deadline(Occ& o, Deadline d) { set_deadline(o, d, kNever); }
  void sync_timer(Occ& o);
  void poll_timers(Clock now);
  int64_t utc_to_mono(int64_t utc_ms) const;
  void purge(Clock now);
  void purge_votes(Clock now);  // sets votes_expiring_ when expired votes remain
  void forget(std::map<OccKey, Occ>::iterator it);

  // --- records of the volume store (scheduler_records.cpp) -----------------------------------
  void on_owner_record(const std::string& volume, const ParsedOccKey& k, const std::optional<std::string>& value,
                       Clock now);
  void on_worker_record(const std::string& volume, const ParsedOccKey& k, const std::optional<std::string>& value,
                        Clock now);
  void on_replace_record(const std::string& volume, const ParsedOccKey& k, const std::optional<std::string>& value,
                         Clock now);
  // The worker side of a replace record: stops o's runs here, and o's held attempts never start.
  void stop_replaced_runs(const Occ& o, Clock now);
  // A worker record of one of our attempts: what it says of the attempt.
  void apply_worker_record(Occ& o, const std::string& fire_id, const WorkerRecord& w, Clock now);
  bool ran_somewhere(const Occ& o) const;  // a worker record says some attempt finished
  void write_owner_record(Occ& o, OwnerOutcome outcome, const std::string& reason, Clock now);

  // --- transitions: the only writers of Occ::phase (scheduler_transitions.cpp) ---------------
  void to_claiming(Occ& o, const Entry& e, Clock now);
  void to_withheld_from_tracking(Occ& o, Clock now);
  void to_preparing(Occ& o, const Entry& e, Clock now);
  void to_preparing_from_owned(Occ& o, const Entry& e, Clock now);
  void leave_owned(Occ& o);
  void to_owned_from_claiming(Occ& o, const Entry& e, FirePath path, Clock now);
  void to_owned_from_idle(Occ& o, const Entry& e, FirePath path, Clock now);
  void to_owned_from_preparing(Occ& o, const Entry& e, Clock now);
  void to_tracking_from_claiming(Occ& o, Clock now);
  void to_tracking_from_preparing(Occ& o, Clock now);
  void to_tracking_from_owned(Occ& o, uint64_t round, Clock now);
  // Decided here (missed, lost, skipped: the outcome is written for every replica), or o
  // ran (kDone, nothing written).
  void to_finished(Occ& o, Outcome outcome, const std::string& reason, Clock now);
  // Someone else's closed owner record decided o.
  void to_finished_by_record(Occ& o, OwnerOutcome outcome, Clock now);
  void enter_owned(Occ& o, const Entry& e, firing::Owned owned, Clock now);
  void count_owned(FirePath path);

  // --- deciding an idle occurrence (scheduler_decide.cpp) --------------------------------------
  void decide(Occ& o, Clock now);
  // This node decides o now: the master of its volume, or a backup whose master made no
  // progress on o in time.  Arms the backup deadline where it waits.
  bool deciding(Occ& o, Clock now);
  bool progress_seen(const Occ& o) const;
  bool decide_from_owner_records(Occ& o, const Entry& e, Clock now);
  bool decide_from_holder(Occ& o, const Entry& e, Clock now);
  void decide_fresh(Occ& o, const Entry& e, Clock now);
  // Flow control: o may start a round-0 claim now (fewer than max_claims_in_flight open in
  // its volume and nobody waiting before it, or let through by admit_claims); otherwise it
  // waits in its volume's ClaimFlow.  admit_claims lets waiters through, in order, as
  // claims end.
  bool claim_admitted(Occ& o);
  void admit_claims();
  // At-most-once, its owner or claimant vanished: prepare a higher round when a quorum is
  // reachable; otherwise wait for one (a peer change or the window end brings us back).
  void take_over_or_wait(Occ& o, const Entry& e, Clock now);
  bool owner_stalled(Occ& o, const Entry& e, Clock now);
  int64_t owner_stall_ms(const Entry& e) const;
  // Where the misfire policy may stop o: Finished (missed or skipped) and true when it did.
  bool misfire_stops(Occ& o, const Entry& e, Clock now);
  bool late_attempt_stops(Occ& o, const Entry& e, Clock now);
  bool prepared_unrun(const Occ& o) const;
  bool misfire_policy_allows(const Occ& o, const Entry& e, Clock now) const;
  void defer(Occ& o, Clock now, const std::string& why);

  // --- overlap = forbid (scheduler_overlap.cpp; docs/firing.md, Overlap) ----------------------
  // Replica side: the scheduled instant of another occurrence of c's entry that this
  // replica accepted an attempt of and does not know ended; nullopt when none.  Linear in
  // this replica's votes (asked only for forbid-overlap claims).
  std::optional<int64_t> overlap_vote(const Claim& c);
  bool refuse_overlap(const std::string& from, const Claim& c, const Vote* mine, ClaimReply& reply, Clock now);
  bool amnesia_blocks_overlap(const Claim& c, Clock now) const;
  // How long after its timeout a stopped run may still be running: exec's SIGTERM-to-SIGKILL
  // grace and the reaping, with room to spare.
  static constexpr int64_t kOverlapKillGraceMs = 30'000;
  // Whether this replica knows the attempt `vote` accepted (of occurrence `occ`) ended or
  // never ran: a worker record that finished, refused or revoked it, or the proposing
  // process's own owner record deciding the occurrence missed or skipped (not another's).
  // Also true when the vote is settled (Vote::ended), or o is tracked here and its runs are
  // over (a run succeeded, or failed with no retry following).
  bool vote_ended(const std::string& volume, const OccurrenceId& occ, const Vote& vote);
  // Marks this replica's vote on o ended, durably, when it accepted `fire_id`.
  void settle_vote(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id);
  // Leaving Claiming or Owned: the attempts of ours that were never dispatched (the claim's
  // attempt, attempts still proposing) never will be — our own vote on them is settled.
  void settle_unsent(Occ& o);
  // Forgetting o: a vote on o whose runs are over is settled (when no record of its own
  // attempt says it ended), so the overlap rule keeps knowing it once o's records are out
  // of memory.
  void settle_forgotten(Occ& o);
  // Deciding side: o was due while another occurrence of its entry was running, as this
  // node knows from worker records; finishes o skipped_overlap (releasing a claim's grants)
  // and returns true.  Only for entries with overlap = forbid.  Under replace: ends o if a
  // later occurrence replaced it (replaced_stops), else asks the running ones to stop.
  // Judged at o's instant F: before it (preparing ahead) see overlap_waits.
  bool overlap_stops(Occ& o, const Entry& e, Clock now);
  // Before F (preparing ahead), whether an earlier run will still be running at F is not
  // known: an idle o with an earlier occurrence of its entry in flight here waits for F,
  // undecided (kInstant), and returns true; otherwise o is decided or claims on, judged
  // at F by the claim's steps and the votes.
  bool overlap_waits(Occ& o, Clock now);
  // An earlier occurrence of o's entry is unfinished here, or a worker record of one says
  // its run started and has not ended.
  bool earlier_in_flight(const Occ& o) const;
  // overlap = replace, deciding side: asks every earlier occurrence of o's entry that this
  // node sees running to stop (a replace record), once per occurrence.
  void ask_replace(const Occ& o, Clock now);
  // An earlier occurrence asked to stop: the deciding side ends it (releasing a claim's
  // grants) when no attempt of it is open; returns true when it did.
  bool replaced_stops(Occ& o, Clock now);

  // --- round 0 (scheduler_claim.cpp) -------------------------------------------------------
  void claim_step(Occ& o, Clock now);
  bool claim_resolved_by_owner(Occ& o, const Entry& e, Clock now);
  bool claim_resolved_by_holder(Occ& o, const Entry& e, Clock now);
  bool claim_resolved_by_split(Occ& o, const Entry& e, Clock now);
  void claim_retry(Occ& o, const Entry& e, Clock now);
  void send_claims(Occ& o, const Entry& e, Clock now, bool all);
  std::vector<std::string> thrifty_claim_targets(const Occ& o, const Entry& e) const;
  void on_claim_reply(const std::string& from, const ClaimReply& r, Clock now);
  void on_round0_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now);
  void ask_again_later(firing::Ballot& b, const std::string& from, const ClaimReply& r, Clock now);
  void release_grants(Occ& o);
  int64_t split_vote_backoff_ms(const Occ& o) const;  // before claiming again after a split vote
  int64_t give_up_at_mono(const Occ& o) const;  // at-least-once claim: when to stop waiting
  void stamp_config(Claim& c) const;  // the config epoch and sets hash of on_claim's check

  // --- higher rounds (scheduler_rounds.cpp) ----------------------------------------------------
  void prepare_step(Occ& o, Clock now);
  void on_prepare_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now);
  void adopt_values(Occ& o, const firing::Preparing& p, Clock now);
  void send_accepts(Occ& o, Attempt& a, Clock now);
  void on_accept_reply(Occ& o, const std::string& from, const ClaimReply& r, Clock now);
  void superseded(Occ& o, uint64_t round, Clock now);
  std::set<std::string> claim_targets(const Occ& o, const Entry& e) const;

  // --- owning (scheduler_owner.cpp) --------------------------------------------------------
  void owner_step(Occ& o, Clock now);
  Attempt& current_attempt(firing::Owned& own);
  void step_no_attempt(Occ& o, Clock now);
  void step_proposing(Occ& o, Attempt& a, bool window_over, Clock now);
  void step_sent(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now);
  void step_revoking(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now);
  void step_accepted(Occ& o, Attempt& a, bool worker_up, bool window_over, Clock now);
  void abandon_and_redispatch(Occ& o, Attempt& a, bool window_over, const char* why, Clock now);
  void send_revoke(Occ& o, Attempt& a, Clock now);
  Revoke make_revoke(const Occ& o, const Attempt& a) const;
  void supersede_owned(Occ& o, const std::optional<Version>& now_version, bool stops);
  bool revoke_superseded(Occ& o, Attempt& a, Clock now);
  bool redecide_superseded(Occ& o, Clock now);
  bool superseded_before_attempt(Occ& o, Clock now);
  void adopt_held_for_takeover(Occ& o, Clock now);
  void dispatch_attempt(Occ& o, Clock now, const std::set<std::string>& exclude);
  void send_dispatch(Occ& o, Attempt& a, Clock now);
  Dispatch make_dispatch(const Occ& o, const Attempt& a) const;
  void on_dispatch_reply(const std::string& from, const DispatchReply& r, Clock now);
  void on_revoke_reply(const std::string& from, const RevokeReply& r, Clock now);
  uint32_t next_attempt_number(Occ& o);
  int64_t accept_by_utc_ms(const Occ& o, Clock now) const;
  void uncount(Attempt& a);  // the attempt stops counting against its worker's load (idempotent)
  void count(Attempt& a);
  // The owner's go (scheduler_go.cpp; docs/firing.md, Preparing ahead).
  void await_go(const Occ& o, const Attempt& a);
  bool fence(Occ& o, Attempt& a);
  void send_gos(Clock now);
  bool go_reaches(const std::string& worker) const;
  int64_t next_go_utc_ms() const;

  // --- retries (scheduler_retry.cpp; docs/firing.md, Retries) ---------------------------------
  struct RunsSoFar {
    bool succeeded = false;
    uint32_t failed = 0;            // runs that ended in a definite failure
    int64_t last_failed_utc_ms = 0;  // when the latest of them ended (its worker's clock)
    // Known only from an attempt that carries run `failed + 1` (its proposer waited out the
    // back-off before proposing it): that attempt's issue time is when the run is due.
    std::optional<int64_t> implied_due_utc_ms;
  };
  // From the worker records, and from the run numbers of the attempts o's owner records
  // (and, owned, its attempts: adopted from votes) name: an attempt of run r means r - 1
  // runs failed.
  RunsSoFar runs_so_far(const Occ& o) const;
  // When the next run of o is due after its failed runs; nullopt when none follows (no
  // failure yet, a success, the attempts used up, or beyond half the retention).
  std::optional<int64_t> next_run_due_utc_ms(const Occ& o, const Entry& e) const;
  // Whether o's runs are over: one succeeded, or one failed and none follows.
  bool runs_over(Occ& o);
  // The instant the misfire window of o's next run counts from: F, or a retry's due time.
  int64_t due_utc_ms(const Occ& o) const;
  // Owned, the current attempt finished in a definite failure: waits for the back-off and
  // dispatches the next run.  False when none follows (o is done).
  bool retry_step(Occ& o, Clock now);

  // --- eligibility, quorum, workers (scheduler_quorum.cpp) ------------------------------------
  // A value either computed for the call or borrowed from the scheduler's tables (valid
  // until the next set_topology): the sets of the common entry, one without a binding,
  // are the volume's own and are not copied for every question about every occurrence.
  template <class T>
  class Borrowed {
   public:
    explicit Borrowed(const T* shared) : shared_(shared) {}
    explicit Borrowed(T own) : own_(std::move(own)) {}
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    const T& operator*() const { return shared_ != nullptr ? *shared_ : own_; }
    const T* operator->() const { return &**this; }

   private:
    const T* shared_ = nullptr;
    T own_;
  };
  using QuorumSets = std::vector<std::vector<std::string>>;
  Borrowed<QuorumSets> quorum_sets(const std::string& volume, const Entry& e) const;
  QuorumSets make_quorum_sets(const Topology::Volume* v, const Entry& e) const;  // v null: unknown volume
  Borrowed<std::vector<std::string>> eligible(const std::string& volume, const Entry& e) const;
  std::vector<std::string> bound_to(const std::vector<std::string>& nodes, const Entry& e) const;
  bool node_matches_binding(const std::string& node, const Entry& e) const;
  bool quorum_reachable(const std::string& volume, const Entry& e) const;
  bool has_majority(const std::set<std::string>& votes, const std::string& volume, const Entry& e) const;
  static bool majority_of_each(const std::set<std::string>& votes, const QuorumSets& sets);  // false for no sets
  // Some set has no majority left once the nodes in `out` are taken away.
  static bool no_majority_left(const std::set<std::string>& out, const QuorumSets& sets);
  // The ballot's refusals leave some quorum set short of a majority; with
  // `unreachable_lost`, counting the replicas that have not answered and that we cannot
  // reach as refusals too; with `silent_lost`, every replica that has not answered.
  // An at-most-once owner record closed lost whose every attempt this node knows never ran.
  bool lost_unrun(const Occ& o, const OwnerRecord& r) const;
  bool majority_impossible(const Occ& o, const firing::Ballot& b, const Entry& e, bool unreachable_lost = false,
                           bool silent_lost = false) const;
  // Our grants are at least half of some quorum set: nobody else can hold a majority.
  bool holds_half(const Occ& o, const firing::Ballot& b, const Entry& e) const;
  static bool alive_in(const PeerView& p, const ProcessId& owner);  // reachable, same boot
  bool owner_alive(const ProcessId& owner) const;
  // Not alive, or suspect and silent for owner_silence_ms (see SchedulerOptions).
  bool owner_gone(const ProcessId& owner) const;
  // When an owner that is suspect but not yet silent long enough would count as gone
  // (mono ms), or kNever.
  int64_t owner_gone_at(const ProcessId& owner, Clock now) const;
  // The worker of o's next attempt, past the ones that refused or revoked it (and, when
  // all did, not again within claim_retry); none: a deadline to look again is armed.
  std::optional<std::string> next_worker(Occ& o, const Entry& e, const std::set<std::string>& exclude_in, Clock now);
  // Picks the worker for a new attempt and counts the assignment (assigned_).
  std::optional<std::string> choose_worker(const Occ& o, const Entry& e, const std::set<std::string>& exclude,
                                           Clock now);
  uint64_t recent_assignments(const std::string& worker, int64_t now_mono_ms) const;

  // --- votes (scheduler_vote.cpp) ------------------------------------------------------------
  void on_claim(const std::string& from, const Claim& c, Clock now);
  // The vote's answer to a claim that is allowed in its round, after the checks that may
  // refuse it; nullopt when it is granted (written, durable before the reply).
  bool stale_claim(const Claim& c) const;
  bool superseded_claim(const Claim& c) const;
  // This replica holds a version of the entry newer than `decided` that governs the
  // occurrence firing at `fire_utc_ms`: a delete or a pause, or an edit written no later.
  bool superseded_here(const std::string& volume, const std::string& key, const Version& decided,
                       int64_t fire_utc_ms) const;
  int64_t prepared_hold_mono(const OccKey& key, const Occ& o, int64_t written_mono_ms) const;
  bool stops_everything(const std::string& volume, const std::string& key) const;
  bool refuse_before_vote(const std::string& from, const Claim& c, ClaimReply& reply);
  int64_t ack_hold_ms() const { return options_.claim_lease_ms + 200; }
  void grant(const std::string& from, const Claim& c, ClaimReply& reply, Clock now);
  void on_release(const Release& r);
  void emit_grant(const Claim& c);

  // --- the worker side (scheduler_worker.cpp) -----------------------------------------------
  void on_dispatch(const std::string& from, const Dispatch& d, Clock now);
  bool answer_known_dispatch(const std::string& from, const Dispatch& d, Clock now);
  void accept_dispatch(const std::string& from, const Dispatch& d, std::shared_ptr<const Entry> e,
                       bool possible_duplicate, Clock now);
  void on_revoke(const std::string& from, const Revoke& r, Clock now);
  void on_go(const std::string& from, const Go& g, Clock now);
  // Whether the go of the held run's owner lets it start (true), fences it (nullopt: it
  // never starts), or has not come yet (false).
  struct Held;
  std::optional<bool> go_given(const Held& h, const std::string& fire_id) const;
  // The replicas' go (scheduler_replica_go.cpp).
  bool went(const Vote& v, int64_t fire_utc_ms) const;  // this replica may have said yes for o
  GoVerdict go_verdict(const GoAsk::Item& item, Clock now);
  void on_go_ask(const std::string& from, const GoAsk& ask, Clock now);
  void on_go_answer(const std::string& from, const GoAnswer& answer, Clock now);
  Borrowed<QuorumSets> held_sets(const std::string& volume, const Entry* e) const;
  struct Running;  // (declared once: clang refuses a member class declared twice)
  bool replicas_went(const Held& h, const Running& r, Clock now, int64_t& look_again_utc_ms);
  std::optional<int64_t> await_replicas(Held& h, const std::map<uint64_t, Running>::iterator& run, Clock now);
  struct Asking;
  std::set<std::string> go_ask_targets(const Asking& asking, const QuorumSets& sets) const;
  // Whether this process has held the volume's present sets since before `issued_utc_ms`
  // (2 max_clock_skew before): the premise of fencing an attempt by promises.
  bool sets_held_since(const std::string& volume, int64_t issued_utc_ms) const;
  void send_go_asks();
  bool revoke_prepared(const std::string& from, const Revoke& r, const WorkerRecord& rec, Clock now);
  void drop_held(uint64_t id);
  // An acceptance is always pushed lazily; other records when `lazy` says so.
  void put_worker_record(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id,
                         const WorkerRecord& rec, Clock now, bool lazy = false);
  // Whether this worker's accepted prepared attempt `rec` (run_at set) certainly never
  // started: it waits in held_, or a previous process of this node accepted it and that
  // process's clock cannot have reached run_at before this one started.  Sets `*held_id`
  // to the waiting run of this process, if any.
  bool prepared_never_started(const std::string& volume, const OccurrenceId& occ, const std::string& fire_id,
                              const WorkerRecord& rec, uint64_t* held_id) const;
  void emit_run(FireEvent::Kind kind, const Running& r, bool ok, const std::string& detail, bool replaced = false);
  void emit_worker(FireEvent::Kind kind, const std::string& volume, const OccurrenceId& occ, uint32_t attempt,
                   bool at_most_once, bool ok, const std::string& detail, int64_t lateness_ms = 0,
                   bool replaced = false, uint32_t run = 0, uint32_t runs = 0, const std::string& on_failure = {});
  // Runs held for their instant: starts those whose instant came and whose clock check
  // passes; the others wait for their next look.
  void start_held(Clock now);
  // Whether a majority of every quorum set of the occurrence has a clock known to read
  // at least `fire_utc_ms` (this node's own, and the others' from SchedulerHost::clock_ahead).
  // When not, `retry_mono` gets when to look again.
  bool clocks_passed(const std::string& volume, const Entry* e, int64_t fire_utc_ms, Clock now,
                     int64_t& retry_mono) const;

  // --- events --------------------------------------------------------------------------------
  void emit(FireEvent::Kind kind, const Occ& o, Clock now, const std::string& node = {}, uint32_t attempt = 0,
            const std::string& detail = {}, bool ok = true);

  // --- checks (scheduler_check.cpp) -----------------------------------------------------------
  void check_occ(const Occ& o) const;
  void check_vote(const Vote& v) const;

  ProcessId self_;
  SchedulerOptions options_;
  SchedulerHost& host_;
  Topology topology_;
  std::map<std::string, QuorumSets> volume_quorum_sets_;  // per volume, for entries without a binding
  // Per volume: the sets' hash, and since when (UTC, this node's clock) this process has
  // held those sets — from its start, for the sets it started with (sets_held_since).
  std::map<std::string, std::pair<uint64_t, int64_t>> sets_since_;
  std::set<std::string> masters_;
  std::map<std::string, uint32_t> backup_ranks_;  // volume -> this node's rank after the master (0: none)
  bool active_ = false;
  bool leaving_ = false;  // leave(): held runs dropped, prepared dispatches refused
  int64_t active_since_mono_ms_ = 0;  // set_active(true): backups count from here at the earliest
  int64_t amnesia_horizon_utc_ms_ = 0;
  Clock last_{};

  std::vector<EntryRec> entries_;
  std::vector<uint32_t> free_entry_slots_;
  std::vector<std::string> volume_names_;  // EntryRec::volume -> name
  SlotIndex entry_index_;
  std::vector<char> key_arena_;
  size_t key_garbage_ = 0;  // bytes of the arena that belong to no live slot
  wheel::TimingWheel utc_wheel_;   // payload: entry slot
  wheel::TimingWheel mono_wheel_;  // payload: occurrence serial
  std::vector<InternedEntry> interned_;
  std::vector<uint32_t> free_interned_;  // ids with refs == 0, reused latest first
  SlotIndex interned_ids_;  // finds an id of interned_ by (volume, entry key)
  // Per volume: round-0 claims in flight (firing::InFlight counts them) and the occurrences
  // waiting for one to end, in order.  Per volume, so that claims stuck behind replicas
  // that do not answer hold up only the occurrences that need those replicas.  Declared
  // before occs_, which holds the counters' InFlight tokens, so it outlives them; entries
  // are never erased (their addresses stay valid).
  struct ClaimFlow {
    size_t in_flight = 0;
    std::deque<uint64_t> waiters;  // Occ::serial
  };
  std::map<std::string, ClaimFlow> claim_flow_;
  bool claims_waiting_ = false;  // some ClaimFlow::waiters is not empty
  std::map<OccKey, Occ> occs_;
  std::unordered_map<uint64_t, Occ*> occ_by_serial_;  // occs_' values stay put until forgotten
  uint64_t next_serial_ = 1;
  std::vector<uint64_t> worklist_;  // serials, touched by the current input (Occ::queued)
  // This replica's durable votes, oldest instant first: they are kept for the occurrence
  // retention (hours of them at a sustained rate), and purge drops the expired ones from
  // the front instead of walking them all every few seconds.
  struct ByInstant {
    bool operator()(const OccKey& a, const OccKey& b) const {
      return a.scheduled_utc_ms != b.scheduled_utc_ms ? a.scheduled_utc_ms < b.scheduled_utc_ms : a.entry < b.entry;
    }
  };
  using Votes = std::map<OccKey, Vote, ByInstant>;
  Votes votes_;
  // The keys of votes_ by entry, then instant (OccKey's own order): a forbid claim's check
  // (overlap_vote) visits the votes of its entry, not every vote.  Kept with votes_.
  std::set<OccKey> vote_keys_by_entry_;
  // Forgets a vote: erases it, its grant record on this node's disk, and its id's reference.
  void drop_vote(Votes::iterator it);
  ParsedOccKey parsed_scratch_;   // on_record's parse (not re-entered: see SchedulerHost)
  // The event handed to host_.emit, reused so that its strings keep their storage: a
  // node emits several events per occurrence, each naming the volume, entry and node.
  // The host reads it during the call only (SchedulerHost::emit).
  FireEvent event_scratch_;
  struct Running {
    std::string volume;
    OccurrenceId occ;
    std::string fire_id;
    uint32_t attempt = 0;
    bool possible_duplicate = false;
    // A prepared run's completion record is pushed lazily (the owner hears of it late,
    // which nothing waits for), except when an at-least-once complete_time is set: the
    // owner redispatches what it has not heard completed by then.
    bool lazy_completion = false;
    bool at_most_once = false;
    int64_t accepted_utc_ms = 0;
    uint32_t run = 1;  // Dispatch::run, written into the worker records
    uint32_t runs = 0;  // Dispatch::runs
    std::string on_failure = {};  // Dispatch::on_failure
    // The fire time as this worker knows it (run_at, or the entry's jittered instant; the
    // scheduled instant when the definition had not arrived), and how late the handler
    // started after it.
    int64_t fire_utc_ms = 0;
    int64_t lateness_ms = 0;
    bool held = false;  // waiting in held_ (not started: a revoke may still stop it)
    bool stopping = false;  // asked to stop (overlap = replace): SchedulerHost::cancel sent
    std::string handler{};
  };
  std::map<uint64_t, Running> running_;
  // Accepted and not finished, per handler name, for SchedulerOptions::handler_caps.
  std::map<std::string, uint32_t> running_per_handler_;
  void erase_running(std::map<uint64_t, Running>::iterator it);
  void drop_superseded(const std::map<uint64_t, Running>::iterator& run, Clock now);
  // Why a dispatch of `handler` would exceed a running cap here; empty when it would not.
  std::string at_running_cap(const std::string& handler) const;
  // Owner side: a worker that refused a dispatch "busy" is not chosen again until then.
  std::map<std::string, int64_t> busy_until_mono_;
  // Accepted attempts waiting for their instant (a prepared run's run_at, or the fire time
  // when this worker's clock had not reached it) and, for prepared runs, the clock check,
  // by (when to look next, UTC; invocation id); each is in running_ too.
  struct Held {
    int64_t fire_utc_ms = 0;
    Invocation invocation;
    std::shared_ptr<const Entry> entry;  // for the eligible sets of the clock check (null: the volume's)
    bool own_clock_only = false;        // decided by one node, or not prepared: this clock suffices
    uint64_t accepted_mark = 0;         // SchedulerHost::write_mark() after the acceptance was written
    Version entry_version;              // Dispatch::entry_version: checked again at the instant
    ProcessId owner;                    // Dispatch::owner: only its go starts the run
    // The last go (its up_to, the owner's clock) that may start the run: owner_silence after
    // its instant or its first issue, whichever is later.  The owner lists a fenced run in
    // its gos until its clock passes this, so a later go cannot start it either.
    int64_t go_by_utc_ms = 0;
    bool go = false;  // a go of its owner reached it (for good: the owner can no longer fence it)
    bool asks = false;  // at-most-once: starts only with yes from a majority of the replicas
    bool replicas_went = false;  // it had them (for good: a yes is never taken back)
  };
  // Held runs asking the replicas (by fire id): who said yes, where the run waits in held_
  // ({key_utc_ms, id}), and when to ask again those that did not.
  struct Asking {
    uint64_t id = 0;
    int64_t key_utc_ms = 0;
    int64_t next_ask_utc_ms = 0;
    std::set<std::string> yes;
    std::set<std::string> no;  // answered kNo: they hold no vote of this attempt in the round they promised
  };
  std::unordered_map<std::string, Asking> asking_;
  std::map<std::string, GoAsk> go_asks_;  // queued this turn, per replica
  std::map<std::pair<int64_t, uint64_t>, Held> held_;
  // The owner's go, owner side: per worker node, the highest up_to sent it, the attempts
  // dispatched there waiting for a go by their instant, and the fenced ones listed in
  // every go until the worker has certainly dropped them.
  struct GoWaiting {
    std::string volume;
    OccurrenceId occ;
    std::string fire_id;
    bool covered = false;  // a go sent before the dispatch already reached its instant
  };
  struct GoOut {
    int64_t sent_up_to_utc_ms = 0;
    int64_t resend_until_utc_ms = 0, resend_at_utc_ms = 0;  // go sent again until, next at
    std::multimap<int64_t, GoWaiting> waiting;              // by run_at
    std::vector<std::pair<std::string, int64_t>> fenced;  // fire id, listed until (UTC)
  };
  std::map<std::string, GoOut> go_out_;
  // Worker side: the latest go of each owner node's current process, and the held runs
  // parked past their instant for it (their held_ key: Held::go_by_utc_ms; invocation id).
  struct GoIn {
    uint64_t boot = 0;
    int64_t up_to_utc_ms = 0;
    std::set<std::string> fenced;
  };
  std::map<std::string, GoIn> go_in_;
  std::map<std::string, std::multimap<int64_t, uint64_t>> go_parked_;
  void drop_held_run(const std::map<uint64_t, Running>::iterator& run, const char* detail, Clock now);
  int64_t last_held_start_utc_ms_ = 0;
  const int64_t started_utc_ms_;  // this process's start (its clock), for prepared_never_started
  uint64_t next_invocation_id_ = 1;
  std::map<std::string, uint32_t> outstanding_;  // attempts this owner has in flight, by worker
  // Attempts this owner assigned to each worker lately (halved every second),
  // counted at the moment of choice.  A burst chooses hundreds of workers in one tick,
  // before any dispatch or load report can move; without this every choice in the tick
  // went to the one that looked least loaded then (in practice this node, whose own load
  // is live while its peers' is gossiped), and the master ran ~90% of all handlers.
  struct Assigned {
    uint64_t count = 0;
    int64_t since_mono_ms = 0;
    void decay(int64_t now_mono_ms);
  };
  std::map<std::string, Assigned> assigned_;
  std::deque<uint32_t> due_backlog_;  // entry slots whose wheel timer fired, not yet handled
  std::set<std::string> dirty_volumes_;          // touched on the next tick
  bool restored_votes_ = false;  // votes of a previous process were loaded (ack_hold_until_mono)
  const int64_t started_mono_ms_;
  int64_t next_purge_mono_ms_ = 0;
  bool votes_expiring_ = false;  // purge_votes left expired votes for the next turn
  SchedulerCounters counters_;
};

}  // namespace caesium::schedule
