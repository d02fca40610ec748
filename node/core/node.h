// The Node core: one Caesium node as a sans-IO state machine.  It composes
//   - membership (gossip/membership: SWIM + Lifeguard) over datagrams,
//   - one replicated VolumeStore per volume this node replicates, kept in sync by
//     pushes of local writes and periodic anti-entropy (gossip/anti_entropy),
//   - the scheduler (schedule/scheduler: index, claims, grants, dispatch, workers),
//   - the cluster configuration (node/core/cluster_config), spread by gossip,
//   - frames: every message encoded with the one schema and sealed with the cluster key.
//
// The driver (daemon or simulator) feeds inputs with both clocks and drains outputs
// (node/core/io.h).  Nothing here reads a clock, does I/O or draws entropy: the seed
// for the node's Rng (boot id, probe order, session ids) is passed in.
//
// Durability: every output that promises something (a grant, an acceptance, a
// dispatch that follows an owner record, an API acknowledgement) is held until the
// storage batch holding the promise is durable (`on_durable`).  Storage batches are
// cut when the driver polls them, so a driver that polls once per loop iteration gets
// group commit for free.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "base/hash_keyed_map.h"
#include "base/result.h"
#include "base/rng.h"
#include "gossip/anti_entropy.h"
#include "gossip/master.h"
#include "gossip/membership.h"
#include "node/core/clock_watch.h"
#include "node/core/cluster_config.h"
#include "node/core/io.h"
#include "node/core/notify.h"
#include "node/wire/codec.h"
#include "node/wire/frame.h"
#include "schedule/entry.h"
#include "schedule/retention.h"
#include "schedule/scheduler.h"
#include "schedule/store.h"

namespace caesium::node {

struct NodeOptions {
  std::string id;
  std::string cluster_name = "caesium";
  std::string gossip_addr;  // where peers send datagrams
  std::string stream_addr;  // where peers open streams
  std::string api_addr;     // advertised for request forwarding (may be empty)
  std::vector<std::string> seeds;  // stream addresses to join through
  wire::Keyring keyring = wire::Keyring::single(wire::Key{});
  ClusterConfig initial_config;    // used unless a higher epoch is stored or learned
  // The operator's word that this node never ran before (`caesium node --first-start`).
  // Heeded only when the data directory is empty: such a node has no previous life whose
  // votes it forgot, so it records no amnesia horizon and votes at once, where a wiped
  // node abstains on everything due before its start + 2 max_clock_skew (+ prepare_ahead).
  // Never for a node whose disk was lost: its forgotten votes could let an at-most-once
  // occurrence be granted twice (docs/firing.md, Amnesia).
  bool first_start = false;
  gossip::Capacity capacity{1, 1024, 16};
  gossip::MembershipConfig membership;
  schedule::SchedulerOptions scheduler;
  schedule::VolumeStoreOptions store;
  gossip::SyncOptions sync;
  int64_t sync_interval_ms = 10'000;    // anti-entropy with one peer replica per volume
  int64_t sync_session_timeout_ms = 5'000;  // since the session's last message
  int64_t startup_grace_ms = 3'000;     // masters decide nothing before join or this long
  // A node that sees peer replicas decides only once it has reconciled with a majority (or
  // all it sees) — or, when no session completes, after this long (node_gossip.cpp).
  int64_t reconcile_timeout_ms = 10'000;
  // Reconciling after a start, with no replica in view left to begin a session with (none
  // in view, or each one reconciled with already, waiting out the grace): look again this
  // often.  Never "at once": with a peer that answers in no time a session ends in the
  // instant it began, and one begun again at once would never let time advance.
  int64_t reconcile_retry_ms = 250;
  int64_t replay_window_ms = 120'000;   // frames older/newer than this are refused
  int64_t maintenance_interval_ms = 30'000;  // retention sweeps, tombstone purge
  // Records a retention sweep visits (or tombstones it purges) per event-loop turn: a
  // pass over millions of occurrence records goes in steps of this many, with I/O served
  // in between (schedule/retention.h).
  size_t maintenance_step_records = 4096;
  int64_t heard_recently_ms = 2'000;    // a peer heard from this recently counts as reachable
  int64_t direct_contact_ms = 10'000;   // ...and is preferred as a worker within this
  size_t max_stream_frame_bytes = size_t{4} << 20;
  // How long the push of a lazy write (store_put_lazy: a worker's acceptance) may wait
  // for a newer version of the same record to replace it.
  int64_t lazy_push_hold_ms = 500;
  // While this node fires a burst of prepared runs (one is due within burst_horizon_ms:
  // scheduler prepare_ahead), lazy pushes and routine anti-entropy wait, each at most
  // burst_hold_ms longer than it would have: the burst's window goes to the runs, and
  // their records reach the other replicas after it (docs/firing.md, Preparing ahead).
  int64_t burst_horizon_ms = 100;
  int64_t burst_hold_ms = 2'000;
  size_t max_push_release = 1'000;  // lazy writes released into one flush's pushes, at most
  NotifyOptions notify;  // the cluster's notify handler (notify.h)
};

// What happened inside the node: for logs, metrics, the simulator's report.
struct NodeEvent {
  enum class Kind : uint8_t {
    kMember = 0,   // membership view of `subject` changed (state, incarnation)
    kMaster = 1,   // this node now considers `subject` master of `volume` ("" = none)
    kFire = 2,     // a scheduler event (fire)
    kConfig = 3,   // cluster config adopted or conflicting (text)
    kWarning = 4,  // something dropped or refused that an operator may care about (text)
  };
  Kind kind = Kind::kMember;
  std::string subject;
  std::string volume;
  gossip::MemberState state = gossip::MemberState::kAlive;
  uint64_t incarnation = 0;
  schedule::FireEvent fire;
  std::string text;
};

struct NodeCounters {
  uint64_t datagrams_in = 0, datagrams_out = 0, datagram_bytes_in = 0, datagram_bytes_out = 0;
  uint64_t frames_in = 0, frames_out = 0, frame_bytes_in = 0, frame_bytes_out = 0;
  uint64_t auth_failures = 0;     // wrong key, wrong cluster, tampered, not a frame
  uint64_t replays = 0;           // replayed or too-old frames
  uint64_t malformed = 0;         // authenticated but undecodable
  uint64_t unknown_messages = 0;  // from a newer version: counted and dropped
  uint64_t misrouted = 0;         // messages for volumes we do not replicate, or to unknown peers
  uint64_t store_pushes_out = 0, store_pushes_in = 0, records_pushed = 0, records_merged = 0;
  uint64_t syncs_started = 0, syncs_completed = 0, syncs_failed = 0, sync_records_applied = 0;
  uint64_t config_conflicts = 0;
  // Config changes proposed through this node (node_config_vote.cpp), by how they ended,
  // and votes this node refused (a higher ballot was promised).
  uint64_t config_agreed = 0, config_not_agreed = 0, config_votes_refused = 0;
  uint64_t storage_ops = 0;
  // Peers found further ahead of this node's clock than the skew bound allows (clock_watch.h):
  // one per warning, at most one per peer per minute.
  uint64_t clock_skew_warnings = 0;
  // Notifications (notify.h): entries written, events noticed too late to be notified
  // (past the notification window), notification entries deleted past retention.
  uint64_t notifications_written = 0, notifications_too_late = 0, notifications_deleted = 0;
};

// The result of an API write: the record written and the storage sequence that must be
// durable before the write may be acknowledged.
struct WriteAck {
  schedule::Record record;
  uint64_t durable_seq = 0;
  // A config change being agreed (apply_config): answer once config_outcome(id) says how
  // it ended.  0: nothing to wait for but durability.
  uint64_t config_proposal = 0;
};

std::string encode_incarnation(uint64_t incarnation);  // "n/incarnation"
// How volume records are kept in node storage ("v/<volume>/<key>").
std::string encode_stored_record(const schedule::RecordView& record);
Result<schedule::Record> decode_stored_record(std::string_view key, std::string_view bytes);

class Node final : private schedule::SchedulerHost {
 public:
  Node(NodeOptions options, uint64_t seed);
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Starts from what storage holds (empty: a fresh or wiped disk).  A store that
  // belongs to another node or cluster, or that cannot be decoded, is an Error.
  Status start(const std::vector<StoredRecord>& records, Clock now);
  void leave(Clock now);
  // Takes these members as known and alive without gossiping them (the simulator's
  // converged start; see gossip::Membership::adopt_members).  REQUIRES: started.
  void adopt_members(const std::vector<gossip::Alive>& members, Clock now);
  // Our own membership record as peers hold it.  REQUIRES: started.
  gossip::Alive self_alive() const;

  // --- inputs ---------------------------------------------------------------------------
  void on_datagram(std::string_view from_addr, std::string_view bytes, Clock now);
  void on_stream(std::string_view from_addr, std::string_view bytes, Clock now);
  void on_tick(Clock now);
  void on_durable(uint64_t seq, Clock now);
  void on_invocation_done(const InvocationResult& result, Clock now);

  // --- outputs --------------------------------------------------------------------------
  int64_t next_deadline_mono() const;
  bool poll_transmit(Transmit& out);
  bool poll_storage(StorageBatch& out);
  bool poll_invocation(Invocation& out);
  // A running invocation to stop (overlap = replace), by Invocation::id: released after
  // every invocation queued before it, so a driver that polls invocations first has
  // started it.  The driver stops it and reports it through on_invocation_done
  // (InvocationResult::replaced), or as it ended if it ended first.
  bool poll_cancel(uint64_t& invocation_id);
  bool poll_event(NodeEvent& out);
  // A peer restarted (its frames name a new boot id): the driver should drop any
  // reconnect backoff towards its stream address and connect at once.  Our frames to the
  // previous process broke its connection, and a backoff that grew while it was down
  // would hold the answers the restarted node waits for before it decides (docs/firing.md,
  // Restart).
  bool poll_reconnect(std::string& stream_addr);
  // Fire events (NodeEvent::kFire) go to `observer` as they happen instead of into the
  // event queue; the observer must not call into the Node.  The daemon counts and logs
  // them there: in a burst of tens of thousands of runs a second, each queued event cost
  // a copy of its strings, a queue slot and a move back out.  Unset: queued, as before
  // (the simulator reads them with the rest).
  void set_fire_observer(std::function<void(const schedule::FireEvent&)> observer) {
    fire_observer_ = std::move(observer);
  }

  // --- API (local to this node; the daemon forwards requests for other volumes) ----------
  bool is_replica(std::string_view volume) const;
  // With `want_acks`, the pushes ask the other replicas to acknowledge the write once it
  // is durable there; `replica_acks` then counts them (API ?w=N).
  Result<WriteAck> put_entry(const std::string& volume, const schedule::Entry& entry, Clock now,
                             bool want_acks = false);
  Result<WriteAck> delete_entry(const std::string& volume, const std::string& entity, const std::string& name,
                                Clock now, bool want_acks = false);
  // Pauses or resumes an entry: the stored definition with `paused` set, its creation
  // instant kept; a resume records its instant, and the misfire policy judges what fell
  // due while it was paused (docs/entries.md, Controls).  A write even when the entry is already so, so that
  // `?w=N` confirms the state.
  Result<WriteAck> set_paused(const std::string& volume, const std::string& entity, const std::string& name,
                              bool paused, Clock now, bool want_acks = false);
  // Runs an entry now ("run now", docs/entries.md Controls): writes the entry again with a
  // manual occurrence added (schedule::add_trigger), due at the write's time, which then
  // goes through the ordinary claim path like any occurrence.  `idempotency_key` (empty:
  // none; the caller has checked it, see trigger_id_for_key) names the trigger: when the
  // entry still holds a trigger of that name, nothing is written and the ack is the
  // current record (`existing`).  Errors by field: "volume" (not a replica), "name" (no
  // such entry), "paused" (a paused entry runs nothing), "triggers" (kMaxTriggers
  // triggers may still run).
  struct TriggerAck {
    WriteAck ack;
    schedule::Trigger trigger;
    bool existing = false;
  };
  Result<TriggerAck> trigger_entry(const std::string& volume, const std::string& entity, const std::string& name,
                                   std::string_view idempotency_key, Clock now, bool want_acks = false);
  // Replicas known to hold `version` (or newer) of `key` durably, this node included
  // (the caller waits for this node's own durability through durable_seq()).
  size_t replica_acks(const std::string& volume, const std::string& key, const schedule::Version& version) const;
  std::optional<schedule::Entry> get_entry(const std::string& volume, const std::string& entity,
                                           const std::string& name) const;
  // Entries of a volume in key order, after `start_after` (a key), at most `limit`.
  std::vector<schedule::Entry> list_entries(const std::string& volume, std::string_view entity_prefix,
                                            std::string_view start_after, size_t limit) const;
  struct OccurrenceHistory {
    schedule::OccurrenceId occ;
    std::vector<schedule::OwnerRecord> owners;
    std::vector<std::pair<std::string, schedule::WorkerRecord>> workers;  // by fire id
  };
  std::vector<OccurrenceHistory> history(const std::string& volume, const std::string& entity,
                                         const std::string& name, size_t limit) const;
  std::optional<int64_t> next_occurrence(const std::string& volume, const std::string& key) const;
  // Adopts a new cluster config (API `PUT /v1/config`).  Refused: an epoch not above the
  // current one, an invalid document, a replica that is not a node, a replica change
  // whose old and new majorities may miss each other (check_config_change), and a change
  // of replica sets while a reachable replica of a changed volume still holds an older
  // epoch than ours (config_lagging): a node that missed the previous step would claim
  // under sets two steps old.
  // And a change while fewer than a majority of a current replica set is known to hold
  // our epoch (config_unadopted), or while we see fewer than a majority of the nodes
  // alive (config_nodes_not_alive: field "nodes", 503 at the API).
  // `force` (disaster recovery: replicas lost for good) skips the last four checks, not
  // the majority check.
  //
  // A change that passes these checks is not adopted at once: the nodes of the current
  // config agree on it first (node_config_vote.cpp; docs/api.md, *How a change is
  // agreed*), so two changes of the same epoch, applied at once through two nodes, can
  // never both be adopted.  The ack then names the proposal (WriteAck::config_proposal);
  // config_outcome says how it ended.  `force`, and a config that lists no nodes, adopt
  // at once as before.
  Result<WriteAck> apply_config(ClusterConfig config, Clock now, bool force = false);
  // How the config proposal `id` ended: nullopt while it is being agreed; success when
  // its config was adopted; an error (field "epoch": another change took the epoch, or
  // this node learnt of a newer epoch; field "nodes": no majority answered in time)
  // otherwise.  Outcomes are kept for the last 64 proposals; an older or unknown id is
  // an error.
  std::optional<Status> config_outcome(uint64_t id) const;
  // A proposal is being agreed through this node.
  bool config_proposing() const { return proposal_.has_value(); }
  // Reachable replicas (current or previous, in ours or in `next`) of the volumes whose
  // replica sets `next` changes that report a config epoch below ours; sorted.
  std::vector<std::string> config_lagging(const ClusterConfig& next) const;
  // Volumes whose replica sets `next` changes where fewer than a majority of one of the
  // current sets (replicas, previous replicas) are known to hold our epoch — reachable or
  // not, by the epoch their gossip last advertised.  Until a majority of each set holds
  // it, a node cut off since before it may still gather a majority under the sets of the
  // epoch before, which a further change could leave disjoint from the next sets
  // (docs/api.md, Replica changes).  "volume: node, node of [set]" strings.
  std::vector<std::string> config_unadopted(const ClusterConfig& next) const;
  // The nodes of our config, other than us, that are not alive in our view.  A config
  // change needs a majority of the nodes alive (us included), so that the two sides of a
  // partition cannot both apply one of the same epoch.
  std::vector<std::string> config_nodes_not_alive() const;
  // Replicas of `next` that may not hold a volume's entries yet (not filled, not
  // reachable, or not a replica before) when `next` removes replicas from it: removing
  // the old ones now could lose what only they hold.  "volume: node" strings, sorted.
  std::vector<std::string> config_unfilled(const ClusterConfig& next) const;
  // This node replicates `volume` and has copied it from a replica that held it before
  // (VolumeState::filled).
  bool volume_filled(const std::string& volume) const {
    auto it = volumes_.find(volume);
    return it != volumes_.end() && it->second.filled && !it->second.departing;
  }
  // This node still holds `volume`, which it no longer replicates, until it has handed
  // its records to a current replica (VolumeState::departing).
  bool volume_departing(const std::string& volume) const {
    auto it = volumes_.find(volume);
    return it != volumes_.end() && it->second.departing;
  }
  // The durable sequence that covers everything written so far.
  uint64_t write_barrier() const;
  uint64_t durable_seq() const { return durable_seq_; }

  // --- introspection ----------------------------------------------------------------------
  const std::string& id() const { return options_.id; }
  uint64_t boot_id() const { return boot_id_; }
  const ClusterConfig& config() const { return config_; }
  // What start() found and did: whether the data directory was empty, and the amnesia
  // horizon it abstains before (UTC ms; 0: none).
  bool started_empty() const { return started_empty_; }
  int64_t amnesia_horizon_utc_ms() const { return scheduler_->amnesia_horizon_utc_ms(); }
  const gossip::Membership& membership() const { return *membership_; }
  const NodeCounters& counters() const { return counters_; }
  const schedule::SchedulerCounters& scheduler_counters() const { return scheduler_->counters(); }
  // At least how far `peer`'s clock is ahead of ours, from its recent frames (clock_watch.h);
  // nullopt when none was sampled lately.
  std::optional<int64_t> peer_clock_ahead_ms(const std::string& peer) const {
    const ClockWatch::Peer* p = peer_clocks_.find(hash64(peer));
    if (p == nullptr) return std::nullopt;
    return clock_watch_.ahead_at_least(*p, last_.mono_ms);
  }
  // The master of `volume` in this node's view (replicated or not); nullopt when no
  // replica is alive in it.
  std::optional<std::string> master_of(const std::string& volume) const;
  const schedule::VolumeStore* store(const std::string& volume) const;
  std::vector<std::pair<std::string, uint64_t>> volume_digests() const;
  bool active() const { return active_; }
  size_t running_invocations() const { return scheduler_->running_invocations(); }
  // The handlers' running caps (SchedulerOptions::handler_caps), e.g. on a reload; the
  // node's own cap (running_cap) stays as started.
  void set_handler_caps(std::map<std::string, uint32_t> caps) {
    options_.scheduler.handler_caps = caps;
    scheduler_->set_running_caps(options_.scheduler.running_cap, std::move(caps));
  }
  size_t held_invocations() const { return scheduler_->held_invocations(); }
  void check_invariants() const;

 private:
  static constexpr size_t kMaxUnfilledBytes = 256;  // of volume names in MemberMeta::unfilled_volumes
  struct VolumeState {
    std::unique_ptr<schedule::VolumeStore> store;
    // A node decides for a volume only once its store has been reconciled with a peer
    // replica since it started (or it found no peer to ask): a restarted master must
    // not act on the state it had before it went down.
    bool synced = false;
    // Synced by the startup grace with no peer replica reachable (deciding alone): a peer
    // replica that appears must be reconciled with before this node decides again.
    bool synced_alone = false;
    // Until synced: the replicas this node has completed a session with (as the one who
    // began it) since it started, or since a peer appeared while it decided alone.
    std::set<std::string> synced_with;
    // Until synced: the replicas a session this node began failed or timed out with (a
    // link that drops what we send).  They are tried last, and a failure moves on to
    // another replica at once: waiting out the sync interval for the next session, a
    // node that first picked such a replica reached reconcile_timeout without having
    // reconciled with the one that would have answered
    // (tests/sim/regress_plain_seed_6028.toml).
    std::set<std::string> reconcile_failed_with;
    int64_t reconciling_since_mono_ms = 0;  // reconciling again since (a peer appeared while alone)
    // Copied from a replica that held the volume before this node did: an anti-entropy
    // session with a previous replica completed since the volume was opened (or with any
    // replica, when the config names no previous ones or this node is one).  Advertised
    // (MemberMeta::unfilled_volumes); apply_config checks it before old replicas go.
    bool filled = false;
    // During a change: the previous replicas this node has completed a session with since
    // they adopted the current epoch.  Filled takes a majority of them: what the old sets
    // decided while some of them were cut off (a run granted and completed under the old
    // epoch) may be held by only some old replicas, and any majority of the old set meets
    // the one that granted it (swarm --reconfig seed 10921).
    std::set<std::string> filled_from;
    // No longer a replica in the config, but kept open until anti-entropy with a current
    // replica has completed: the entries and records only it holds (written during a
    // partition, say) are handed over before it lets go.  Not a replica meanwhile: it
    // takes no writes, decides nothing and reads are forwarded.
    bool departing = false;
    int64_t opened_mono_ms = 0;
    // Writes of this node into the volume so far.  A hand-over session vouches only for
    // what was written before it began (its digest was taken then).
    uint64_t local_writes = 0;
    std::map<std::string, schedule::Record> push;  // local writes not yet pushed, by key
    std::string notify_purge_after;  // purge_notifications goes on after this key
    // Lazy writes not yet pushed, by key (never also in `push`), and when each may wait
    // no longer (mono ms, in write order).
    std::map<std::string, schedule::Record> held;
    std::deque<std::pair<int64_t, std::string>> held_until;
    // Pushed records received while this node fired a burst of prepared runs, not merged
    // yet, with when each arrived (mono ms; merged at the latest burst_hold_ms later).
    std::deque<std::pair<int64_t, schedule::Record>> inbound;
    bool push_wants_ack = false;
    // Acknowledgements of entry writes this replica holds back for the scheduler
    // (Scheduler::ack_hold_until_mono), in arrival order.
    struct HeldAck {
      int64_t until_mono_ms = 0;
      int64_t written_mono_ms = 0;  // when the write was merged here (ack_hold_until_mono)
      std::string to;
      std::string key;
      schedule::Version version;
    };
    std::deque<HeldAck> held_acks;
    struct AckSet {
      int64_t updated_mono_ms = 0;
      std::map<std::string, schedule::Version> by_node;
    };
    std::map<std::string, AckSet> acks;  // key -> replicas that acknowledged a version
    int64_t next_sync_mono_ms = 0;
    int64_t sync_deferred_since_mono_ms = 0;  // a routine sync held back by a burst (0: none)
    uint64_t initiator_session = 0;  // 0 = none running
    std::string sync_soon_with;      // a replica that just (re)appeared: reconcile with it next
    // Retention work of the current maintenance round, done in bounded steps.
    bool purging_tombstones = false;
    schedule::RetentionSweep sweep;
  };
  struct Session {
    std::string volume;
    std::string peer;
    std::unique_ptr<gossip::SyncSession> sync;
    int64_t last_activity_mono_ms = 0;
    uint64_t writes_at_start = 0;  // the volume's local_writes when this session began
  };
  struct PendingMessage {
    std::string to;  // node id
    wire::CoreMessage msg;
    uint64_t barrier = 0;  // released when durable_seq_ >= barrier
  };
  struct PendingInvocation {
    Invocation inv;
    uint64_t barrier = 0;
  };

  // SchedulerHost
  void send(const std::string& node, schedule::FireMessage msg, bool after_durable) override;
  void store_put(const std::string& volume, const std::string& key, std::string value) override;
  void store_put_lazy(const std::string& volume, const std::string& key, std::string value) override;
  void local_put(const std::string& key, std::string value) override;
  void local_erase(const std::string& key) override;
  void invoke(Invocation invocation) override;
  uint64_t write_mark() const override { return write_barrier(); }
  void invoke_after(Invocation invocation, uint64_t mark) override;
  void cancel(uint64_t invocation_id) override;
  void emit(const schedule::FireEvent& event) override;
  schedule::PeerView peer(const std::string& node) const override;
  int64_t clock_ahead(const std::string& node) const override;
  std::optional<std::string> store_get(const std::string& volume, const std::string& key) const override;
  std::optional<schedule::Version> entry_version(const std::string& volume, const std::string& key) const override;
  EntryRead read_entry(const std::string& volume, const std::string& key) const override;
  void behind(const std::string& volume, const std::string& node) override;
  bool hears_peers() const override { return last_.mono_ms - last_heard_any_mono_ms_ <= options_.heard_recently_ms; }

  // node.cpp: frames, outbox, storage, the pump
  void pump(Clock now);
  void queue_core(const std::string& to, wire::CoreMessage msg, bool after_durable);
  void flush_datagrams_and_streams(Clock now);
  // batch_claims: wire::encode's (the receiver reads claim batches).
  void seal_and_queue(node::Channel channel, const std::string& to_addr, wire::Body body, Clock now,
                      bool batch_claims = false);
  bool open_frame(std::string_view bytes, node::Channel channel, wire::Envelope& out, Clock now);
  void warn_clock_ahead(const std::string& peer, int64_t ahead_ms);
  void storage_put(std::string key, std::string value);
  void storage_erase(std::string key);
  void on_core_message(const std::string& from, wire::CoreMessage& msg, Clock now);

  // node_gossip.cpp: membership glue, masters, config spread
  void drain_membership(Clock now);
  void first_start_refuted(Clock now);
  int64_t record_amnesia_horizon(Clock now);
  void refresh_masters(Clock now);
  void update_synced(VolumeState& vs, const VolumeSpec& spec, Clock now);
  void refresh_meta(Clock now);
  bool co_replica(std::string_view node) const;
  void remember_peer(const std::string& node);
  void forget_peers_not_co_replicas();
  gossip::MemberMeta self_meta() const;
  void on_config_doc(const std::string& from, const wire::ConfigDoc& doc, Clock now);
  Status adopt_config(ClusterConfig config, Clock now, bool persist);

  // node_config_vote.cpp: agreeing on each epoch's config before it is adopted
  // (single-decree Paxos per epoch among the current config's nodes).
  struct Ballot {
    uint64_t number = 0;  // 0: none
    std::string proposer;
    auto operator<=>(const Ballot&) const = default;
  };
  // This node's votes on the next epoch (config_.epoch + 1), durable ("c/vote") before
  // any answer leaves; votes on an epoch at or below ours are moot.
  struct ConfigAcceptor {
    uint64_t epoch = 0;
    Ballot promised;
    Ballot accepted;
    std::string value;  // the accepted config, encoded
  };
  struct ConfigProposal {
    uint64_t id = 0;
    uint64_t epoch = 0;  // being decided: the config's epoch + 1 when it started
    Ballot ballot;
    std::string mine;   // the change asked for, encoded
    std::string value;  // proposed in phase 2: `mine`, or a value a promise named
    bool accepting = false;
    std::set<std::string> answered;  // in this phase
    Ballot best;                     // the highest accepted value the promises named
    std::string best_value;
    uint64_t highest_nack = 0;
    int ballots = 1;
    int64_t started_mono_ms = 0, sent_mono_ms = 0, retry_mono_ms = 0;
  };
  static constexpr int64_t kConfigVoteResendMs = 300;
  static constexpr int64_t kConfigVoteTimeoutMs = 5'000;
  static constexpr int kConfigMaxBallots = 4;
  static constexpr size_t kConfigOutcomesKept = 64;
  uint64_t start_config_proposal(std::string doc, Clock now);
  void on_config_vote(const std::string& from, const wire::ConfigVote& vote, Clock now);
  void config_vote_as_acceptor(const std::string& from, const wire::ConfigVote& vote, Clock now);
  void config_vote_as_proposer(const std::string& from, const wire::ConfigVote& vote, Clock now);
  void send_config_votes(Clock now);
  void config_proposal_tick(Clock now);
  void config_chosen(std::string value, Clock now);
  void end_config_proposal(Status outcome);
  size_t config_majority() const { return config_.nodes.size() / 2 + 1; }
  bool config_node(const std::string& id) const;
  std::string encode_config_acceptor() const;
  Status load_config_acceptor(std::string_view bytes);
  ConfigAcceptor acceptor_;
  std::optional<ConfigProposal> proposal_;
  uint64_t next_proposal_id_ = 0;
  uint64_t ballot_floor_ = 0;  // the highest ballot number this node has seen (next ballot above it)
  struct ConfigOutcome {
    uint64_t id = 0;
    Status status;
    uint64_t barrier = 0;  // reported once durable up to here
  };
  std::deque<ConfigOutcome> config_outcomes_;
  void maybe_activate(Clock now);

  // node_volumes.cpp: stores, pushes, anti-entropy, retention
  void open_volume(const std::string& name, Clock now);
  void close_volume(const std::string& name);
  // An anti-entropy session with `peer` fills this node's copy of the volume: the peer
  // is a previous replica, or the config names none (or this node is one).
  bool fills_from(const VolumeSpec& spec, const std::string& peer) const;
  // The config no longer lists this node as a replica of `name`: stand down, keep the
  // store until it is handed over (VolumeState::departing).
  void depart_volume(const std::string& name, Clock now);
  std::optional<std::string> elect_master(const VolumeSpec& spec) const;  // highest (priority, id) alive replica
  uint32_t backup_rank(const VolumeSpec& spec) const;
  std::vector<gossip::MasterCandidate> master_candidates(const VolumeSpec& spec) const;
  void start_sync(const std::string& volume, VolumeState& v, const std::string& peer, Clock now);
  // A replica of the volume in view (previous ones included) that this node, reconciling
  // after a start, has not completed a session with yet, nor seen one fail with.
  bool unreconciled_peer(const std::string& volume, const VolumeState& v) const;
  // A session this node began with `peer` failed or timed out: while reconciling, try
  // another replica at once.
  void reconcile_session_failed(const std::string& volume, VolumeState& v, const std::string& peer, Clock now);
  void on_store_change(const std::string& volume, const schedule::Change& change);
  void flush_pushes(Clock now);
  // A burst of prepared runs is due, or was started within burst_horizon_ms.
  bool bursting(Clock now) const;
  VolumeState* volume_for_write(const std::string& volume);  // null (counted misrouted) if not replicated here
  // Moves the lazy writes whose hold ends at or before `until_mono_ms` into the push queue.
  void release_held(VolumeState& v, int64_t until_mono_ms, size_t max_records);
  void on_store_push(const std::string& from, wire::StorePush& push, Clock now);
  // Merges pushed records that waited out a burst (VolumeState::inbound), at most
  // max_push_release per call; all of them when `all`.
  void merge_inbound(Clock now, bool all = false);
  void on_store_ack(const std::string& from, const wire::StoreAck& ack);
  void release_held_acks(Clock now);
  void on_sync(const std::string& from, const gossip::SyncMessage& msg, Clock now);
  void start_syncs(Clock now);
  void expire_sessions(Clock now);
  void maintenance(Clock now);
  void maintenance_step(Clock now);

  // --- notifications (node_notify.cpp; notify.h) -------------------------------------------
  // Notes what a fire event calls for: notices to write, or a withheld occurrence to watch.
  void notice(const schedule::FireEvent& event);
  // Writes the queued notices as notification entries (from pump: never inside a
  // scheduler call, since a write feeds the scheduler).  True when there were any.
  bool write_notices(Clock now);
  // Withheld occurrences whose watch ended: a notice for each one still withheld.
  void check_withheld(Clock now);
  // Deletes up to `budget` notification entries of `volume` past the occurrence
  // retention; returns how many it looked at.
  size_t purge_notifications(const std::string& volume, Clock now, size_t budget);
  int64_t next_withheld_check_mono() const;

  NodeOptions options_;
  Rng rng_;
  uint64_t triggers_made_ = 0;  // names triggers made without an Idempotency-Key
  uint64_t boot_id_ = 0;
  uint64_t incarnation_ = 0;
  bool started_ = false;
  bool active_ = false;
  bool left_ = false;
  int64_t started_mono_ms_ = 0;
  bool restored_ = false;  // started from a disk that held state: a restart, not a fresh node
  Clock last_{};

  ClusterConfig config_;
  std::unique_ptr<gossip::Membership> membership_;
  std::unique_ptr<schedule::Scheduler> scheduler_;
  std::unique_ptr<wire::FrameCipher> cipher_;
  wire::ReplayGuard replay_;
  ClockWatch clock_watch_;
  std::map<std::string, VolumeState> volumes_;
  std::map<std::pair<std::string, uint64_t>, Session> sessions_;  // (peer, session id)
  std::map<std::string, std::optional<std::string>> masters_;     // volume -> master in our view
  std::map<std::string, bool> deciding_;                          // volume -> this node decides
  bool all_synced_ = false;
  std::map<std::string, int64_t> config_requested_mono_;           // peer -> last request time
  int64_t config_retry_mono_ = kNever;  // retry_config_requests is due (kNever: not behind)
  void want_newer_config(const std::string& peer, uint64_t epoch, Clock now);
  void retry_config_requests(Clock now);
  std::map<std::string, uint64_t> known_boots_;                    // peer -> boot id last seen
  // The stream addresses of the replicas this node shares a volume with, as last seen
  // alive, persisted under "p/<id>": a restart joins through them as well as through
  // the seeds (see remember_peer).
  std::map<std::string, std::string> remembered_peers_;
  bool started_empty_ = false;
  static constexpr std::string_view kPeerPrefix = "p/";
  // hash64(peer id) -> the boot id of its latest authenticated frame: a change is a restart.
  HashKeyedMap<uint64_t> frame_boots_;
  HashKeyedMap<int64_t> frame_boot_changed_mono_;       // when frame_boots_ last changed, per peer
  std::map<std::string, int64_t> known_boot_changed_mono_;  // when gossip's boot (known_boots_) last changed
  std::vector<std::string> boots_changed_;              // peers whose frames named a new boot: for the scheduler
  std::deque<std::string> reconnects_;  // peers seen with a new boot id (poll_reconnect)
  HashKeyedMap<int64_t> last_heard_mono_;
  int64_t last_heard_any_mono_ms_ = INT64_MIN / 2;  // the latest authenticated frame from any peer  // hash64(peer id) -> last authenticated frame (lookups only)
  // hash64(peer id) -> what its stream frames say of its clock (clock_watch.h).  Streams
  // only: they come from the peers this node works with, a few a second even when idle
  // (anti-entropy, push-pull), while gossip datagrams from every member would cost a
  // second table lookup per datagram (a 1,000-node simulation opens millions).
  HashKeyedMap<ClockWatch::Peer> peer_clocks_;

  // outputs
  std::deque<Transmit> transmits_;
  // Outgoing core messages in FIFO order, released from the front once their durability
  // barrier has passed (barriers never decrease along a queue, so nothing behind the
  // front can be released before it).  Messages to ourselves are looped back.
  std::deque<PendingMessage> self_out_;
  std::deque<PendingMessage> remote_out_;
  std::deque<PendingInvocation> invocations_out_;
  std::deque<std::pair<uint64_t, uint64_t>> cancels_out_;  // (invocation id, barrier)
  std::deque<NodeEvent> events_;
  std::function<void(const schedule::FireEvent&)> fire_observer_;
  std::deque<Notice> notices_;
  // Withheld occurrences watched for notify.withheld_after, by when the watch ends (UTC):
  // the kWithheld event, kept whole for its notice.  At most kMaxWithheldWatched.
  std::multimap<int64_t, schedule::FireEvent> withheld_watch_;
  static constexpr size_t kMaxWithheldWatched = 100'000;
  struct DeferredRecord {
    std::string volume;
    std::string key;
    std::optional<std::string> value;
  };
  std::deque<DeferredRecord> deferred_records_;
  bool loading_ = false;  // during start(): store changes are not persisted again

  // storage
  std::vector<StorageOp> open_batch_;
  uint64_t polled_seq_ = 0;   // last batch handed to the driver
  uint64_t durable_seq_ = 0;  // last batch the driver reported durable

  // Frame sequence numbers per destination, keyed by hash64(address), one map per
  // channel (lookups only).  Two addresses sharing a hash share a counter: the
  // receivers then see gaps, which their replay windows accept.
  HashKeyedMap<uint64_t> seq_out_[2];
  int64_t next_maintenance_mono_ms_ = 0;
  bool maintenance_running_ = false;  // a round's retention work is not finished
  NodeCounters counters_;
};

}  // namespace caesium::node
