// World: virtual time, a seeded network, disks and handler executions around a set of
// sim::Process objects — the deterministic simulator (TigerBeetle VOPR / FoundationDB
// sim2 in spirit).
//
// Determinism: every random choice comes from Rng streams forked from the seed, the
// agenda is ordered by (time, insertion seq), and nothing iterates a hash map into an
// output.  A running 64-bit hash of every event (delivery, drop, fault, tick, storage,
// invocation, observation, each with its virtual time) is kept: the same seed and
// scenario give the same trace_hash(); any divergence changes it.
//
// Clocks (per node):
//   monotonic = virtual time + a per-node base (so processes cannot assume it starts at 0)
//   realtime  = epoch + virtual time + skew, skew = offset + drift * (t - t_set),
//               clamped to [-max_skew_ms, +max_skew_ms] (an NTP-disciplined clock wanders
//               up to the bound and is held there).  A `skew` fault may step realtime
//               backwards; monotonic never goes backwards.
//
// Network:
//   datagrams: latency from a Distribution, loss, duplication (an independent second
//     copy), corruption (1-4 random bytes flipped, delivered anyway: the receiver must
//     reject it), reordering through latency jitter.  A datagram larger than
//     max_datagram_bytes is dropped and reported as a "datagram_size" violation.
//     The partition state is checked at send and again at delivery.
//   streams: the daemon's transport (node/daemon/net_tcp.cpp).  Per (src, dst stream
//     address) one outbound connection, reliable and FIFO while both ends are up and
//     links both ways are open.  A partition that separates the pair, or a crash or
//     restart of the receiving process, breaks it: every frame in flight on it is lost,
//     and the sender, which learns at once (FIN / RST), backs off: 100 ms doubling to
//     5 s, reset by a successful connect.  Without a connection, frames wait in a
//     bounded queue (8 MiB, oldest dropped first), and the sender connects only while
//     it has frames queued, when the back-off has run out: a connect takes a round trip
//     (refused by a down process: fails after the round trip; across a partition: fails
//     after the 5 s connect timeout).  A connected sender flushes the queue — frames
//     meant for a process that died reach the one that replaced it, as over TCP.  A
//     crash of the sender drops its connections and queues.  The process may reset a
//     back-off at once (Process::poll_reconnect: a peer restarted).
//
// Slow nodes: while a node is slow (delay D), every inbound delivery and tick that comes
// due is postponed by D; afterwards, inbound work waits until the backlog has drained, so
// per-connection order holds.  Durability and handler completions are not delayed.  An
// inbound-only slow node (slow = {..., inbound_only = true}) still ticks on time.
//
// Busy loops: a process whose deadline is still <= now after on_tick, more than
// busy_loop_limit times in a row, is reported ("busy_loop") and then ticked at most once
// per virtual ms so the run still ends.
//
// Livelocks: a run must end.  More than livelock_events_per_instant events at one virtual
// instant (processes feeding each other messages and ticks that never let time advance),
// an agenda holding more than livelock_queue_events events, or more than max_events in
// all, stop the run there: a "livelock" violation names the count, the instant and the
// busiest nodes and event kinds, and run_until returns at once from then on.  The
// checkers' end-of-run verdicts are skipped (they would judge a run cut short); what
// they found while it ran stays.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "base/rng.h"
#include "base/time.h"
#include "sim/checker.h"
#include "sim/cluster.h"
#include "sim/disk.h"
#include "sim/distribution.h"
#include "sim/event_queue.h"
#include "sim/links.h"
#include "sim/report.h"

namespace caesium::sim {

struct NetworkParams {
  Distribution latency{Distribution::Shape::kExponential, 1, 1.0, 1.0, kMsPerHour};
  double loss = 0;       // probability a datagram is dropped
  double duplicate = 0;  // probability a datagram is delivered twice
  double corrupt = 0;    // probability a datagram has bytes flipped
  double stream_corrupt = 0;  // same for stream frames (TCP checksums miss rarely)
  size_t max_datagram_bytes = 1400;
};

struct HandlerModel {
  Distribution duration = Distribution::constant(100);
  double fail_probability = 0;           // completes with ok = false
  double never_complete_probability = 0;  // hangs forever (outcome kHung)
  std::vector<double> slowness;           // per node index; empty or 1.0 = normal
  // Handlers that always take this long (by handler name), instead of `duration`: long
  // runs of one entry, e.g. under overlap = forbid.  Drawn from no random stream, so a
  // scenario that names none runs exactly as before.
  std::map<std::string, int64_t> fixed_duration_ms;
  // Handlers that fail with this probability (by handler name), instead of
  // `fail_probability`: e.g. flaky handlers of entries that retry.  Decided by a hash of
  // the fire id, not a random stream, for the same reason.
  std::map<std::string, double> fail_by_handler;
};

struct WorldOptions {
  uint64_t seed = 1;
  NetworkParams network;
  Distribution disk_sync = Distribution{Distribution::Shape::kExponential, 1, 1.0, 1.0, kMsPerHour};
  HandlerModel handler;
  int64_t epoch_utc_ms = 1767225600000;  // 2026-01-01T00:00:00Z
  int64_t max_skew_ms = 5 * kMsPerSecond;
  int64_t leave_grace_ms = 2 * kMsPerSecond;  // a leaving process runs this long, then stops
  uint32_t busy_loop_limit = 1000;
  // The livelock bounds (see the header).  The busiest scenarios stay orders of magnitude
  // below each: a burst of 100,000 occurrences is ~10^6 events spread over many ms.
  uint64_t livelock_events_per_instant = 2'000'000;
  size_t livelock_queue_events = 20'000'000;
  uint64_t max_events = 0;  // 0: no cap on the total
  std::shared_ptr<const toml::table> node_options;  // null = empty table
};

class World {
 public:
  World(ClusterSpec cluster, WorldOptions options, ProcessFactory factory);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Checkers see every event from start() on.  The World does not own them.
  void add_checker(Checker* checker) { checkers_.push_back(checker); }
  // Optional human-readable trace, one line per event (slow; for debugging a seed).
  void set_trace_sink(std::function<void(const std::string&)> sink) { trace_sink_ = std::move(sink); }

  // Starts every node with an empty disk at the current virtual time.  Call once.
  void start();
  // Runs every event due at or before time_ms, then sets now to time_ms — unless the run
  // is found livelocked (see the header), which stops it where it is.
  void run_until(int64_t time_ms);
  // The run was stopped as a livelock; nothing more runs.
  bool livelocked() const { return livelocked_; }
  // Schedules `action` at virtual time_ms (>= now).  For faults and workload.
  void at(int64_t time_ms, std::function<void()> action);

  // --- Faults (take effect now) ---------------------------------------------------------
  void crash(uint32_t node);
  void restart(uint32_t node, bool wipe_disk);
  void leave(uint32_t node);
  void partition(const std::vector<std::vector<uint32_t>>& groups);
  void cut(uint32_t a, uint32_t b);
  void oneway(uint32_t from, uint32_t to);
  void heal_all();
  void heal_pair(uint32_t a, uint32_t b);
  void set_skew(uint32_t node, int64_t offset_ms, double drift);
  // Slow for [now, now + for_ms); for_ms = kNever: until heal_slowness().
  // inbound_only: deliveries are late but the node's own timers fire on time (a node
  // that reads its sockets late: it times out healthy peers — Lifeguard's case).
  void set_slow(uint32_t node, int64_t delay_ms, int64_t for_ms, bool inbound_only = false);
  void heal_slowness();
  // A cluster config change through `node`'s API: the volume's replica sets become
  // `replicas` and `previous` (empty: none) in the next epoch of the config `node` holds.
  // Refused (counted, traced) when the node is down or its core refuses the change.
  void reconfigure(uint32_t node, const std::string& volume, const std::vector<std::string>& replicas,
                   const std::vector<std::string>& previous);
  // A process adopted a config that changes a volume's sets, or its reconfigure ended.
  void observe_config(uint32_t node, const Observation& obs);
  // Applied changes, in order: ground truth for the checkers' replica sets.
  struct ConfigChange {
    int64_t at_ms = 0;
    std::string volume;
    std::vector<std::string> replicas, previous;
  };
  const std::vector<ConfigChange>& config_changes() const { return config_changes_; }
  // The volume's replica sets in effect at time_ms by the applied changes (the
  // scenario's own before the first), and whether any change of it falls in (from, to].
  const std::vector<std::string>& replicas_at(const std::string& volume, int64_t time_ms) const;
  const std::vector<std::string>& previous_replicas_at(const std::string& volume, int64_t time_ms) const;
  bool config_changed_between(const std::string& volume, int64_t from_ms, int64_t to_ms) const;
  // The workload's API write (put or delete) on `node`, recorded in writes() (refused,
  // and counted, when the node is down).  `write.id` is assigned here; with
  // `want_majority`, want_acks becomes a majority of the volume's replicas now.
  void write_entry(uint32_t node, size_t workload_index, EntryWrite write, bool want_majority);
  // Every workload write so far, in issue order, with when it was acknowledged.
  const std::vector<WriteRecord>& writes() const { return writes_; }

  // Drains a process's outputs now and re-reads its deadline: for a driver (a test) that
  // changed the process from outside rather than through an input.
  void drain_outputs(uint32_t node) { drain(node); }

  // A violation found by the World itself or by a checker during the run.
  void violate(Violation v);

  // Writes the World's figures, runs every checker's finish(), and fills the header.
  void finish(Report& report);

  // --- Introspection (ground truth for checkers and tests) -------------------------------
  int64_t now_ms() const { return now_ms_; }
  int64_t max_skew_ms() const { return options_.max_skew_ms; }
  uint64_t trace_hash() const { return trace_hash_; }
  uint64_t events_processed() const { return events_; }
  size_t node_count() const { return nodes_.size(); }
  const ClusterSpec& cluster() const { return cluster_; }
  const NodeSpec& spec(uint32_t node) const { return cluster_.nodes[node]; }
  // Node index by id; -1 when unknown.
  int64_t index_of(const std::string& id) const;
  bool is_up(uint32_t node) const { return nodes_[node].up; }
  // When the node's current process started (a restart starts a new one).  REQUIRES: up.
  int64_t up_since_ms(uint32_t node) const { return nodes_[node].up_since_ms; }
  bool is_slow(uint32_t node) const;
  uint32_t generation(uint32_t node) const { return nodes_[node].generation; }
  node::Clock clock_of(uint32_t node) const;
  const Process* process(uint32_t node) const { return nodes_[node].process.get(); }
  Process* process(uint32_t node) { return nodes_[node].process.get(); }
  const SimDisk& disk(uint32_t node) const { return nodes_[node].disk; }
  const LinkState& links() const { return links_.current(); }
  const std::vector<Execution>& executions() const { return executions_; }
  const std::vector<FaultRecord>& faults() const { return fault_log_; }
  // a and b up, not slow, and linked both ways at every instant of [from_ms, to_ms], and
  // no message between them in flight then took longer than kLatencySpikeMs.
  bool healthy_pair_throughout(uint32_t a, uint32_t b, int64_t from_ms, int64_t to_ms) const;
  // A delivery slower than this beyond the configured base latency is a network fault for
  // the checkers' "healthy" windows, although no fault was injected: a heavy-tailed
  // latency distribution (lognormal) does produce the odd one-second message among
  // millions.  At most kMaxSpikes are remembered.
  static constexpr int64_t kLatencySpikeMs = 250;
  static constexpr size_t kMaxSpikes = 100'000;
  // a -> b and b -> a open at every instant of [from_ms, to_ms] (nodes' state aside).
  bool linked_throughout(uint32_t a, uint32_t b, int64_t from_ms, int64_t to_ms) const {
    return links_.connected_throughout(a, b, from_ms, to_ms);
  }
  // node up and not slow during all of [from_ms, to_ms].
  bool healthy_throughout(uint32_t node, int64_t from_ms, int64_t to_ms) const;
  // Total node-up time so far (for per-node-per-second rates).
  int64_t up_node_ms() const;

  struct ChannelStats {
    uint64_t sent = 0, sent_bytes = 0, delivered = 0, delivered_bytes = 0;
    uint64_t dropped_loss = 0, dropped_partition = 0, dropped_down = 0, unroutable = 0;
    uint64_t duplicated = 0, corrupted = 0, oversize = 0, broken = 0;
    // streams: frames that waited for a connection, dropped from a full queue; connect
    // attempts that succeeded / failed; back-offs reset by the process (poll_reconnect)
    uint64_t queued = 0, queue_dropped = 0, connects = 0, connect_failures = 0, reconnects_now = 0;
    uint64_t max_bytes = 0;
  };
  const ChannelStats& datagram_stats() const { return datagram_; }
  const ChannelStats& stream_stats() const { return stream_; }

 private:
  struct InFlight {
    std::string bytes;
    uint32_t src = 0;
    uint32_t src_generation = 0;
    uint32_t dst_generation = 0;
    uint64_t connection = 0;  // stream connection epoch
  };
  // One outbound stream connection with its reconnect state (the daemon's Transport::Peer).
  struct Connection {
    enum class State : uint8_t { kIdle, kConnecting, kConnected };
    uint64_t epoch = 0;  // frames in flight carry it; a break bumps it
    int64_t last_delivery_ms = 0;
    State state = State::kIdle;
    uint32_t token = 0;  // the pending connect attempt or retry timer (older ones are stale)
    int64_t backoff_ms = 0;
    int64_t retry_at_ms = 0;
    std::deque<std::string> queue;  // frames waiting for a connection
    size_t queue_bytes = 0;
  };
  static constexpr int64_t kBackoffMinMs = 100, kBackoffMaxMs = 5'000, kConnectTimeoutMs = 5'000;
  static constexpr size_t kSendQueueBytes = size_t{8} << 20;
  struct StatusChange {
    int64_t time_ms;
    bool up;
    bool slow;
  };
  struct SimNode {
    std::unique_ptr<Process> process;
    SimDisk disk;
    bool up = false;
    bool leaving = false;
    uint32_t generation = 0;
    uint32_t incarnation = 0;
    int64_t mono_base_ms = 0;
    int64_t skew_offset_ms = 0;
    double drift = 0;
    int64_t drift_since_ms = 0;
    int64_t slow_delay_ms = 0;
    int64_t slow_until_ms = 0;
    bool slow_inbound_only = false;
    int64_t backlog_until_ms = 0;
    int64_t tick_at_ms = kNever;
    uint64_t tick_token = 0;
    bool tick_deferred = false;  // the pending tick was postponed by slowness
    uint32_t busy_count = 0;
    bool busy_reported = false;
    int64_t up_since_ms = 0;
    int64_t up_total_ms = 0;
    uint64_t sent_msgs = 0, sent_bytes = 0;
    std::vector<StatusChange> history;
  };

  void dispatch(Event& e);
  // The livelock bounds, checked after each event; true once the run is stopped.
  bool check_livelock(const Event& e);
  void stop_livelocked(const std::string& why);
  void deliver(Event& e);
  void on_tick_event(Event& e);
  void on_sync_done(const Event& e);
  void on_invocation_done(const Event& e);
  bool defer_if_slow(Event& e);
  void start_process(uint32_t node, bool drain_now);
  void stop_process(uint32_t node);
  void drain(uint32_t node);
  void send(uint32_t node, node::Transmit& tx);
  void send_datagram(uint32_t src, uint32_t dst, std::string bytes);
  void send_stream(uint32_t src, uint32_t dst, std::string bytes);
  void transmit_stream(uint32_t src, uint32_t dst, Connection& conn, std::string bytes);
  void start_connect(uint32_t src, uint32_t dst, Connection& conn);
  void connect_event(uint32_t src, uint32_t dst, Connection& conn, int64_t time_ms, bool retry);
  void on_connect_event(const Event& e);
  void connection_failed(uint32_t src, uint32_t dst, Connection& conn);
  // The connection breaks (its receiver died, or the link): in-flight frames are lost.
  void break_connection(uint32_t src, uint32_t dst, Connection& conn);
  // Connections matching `pred(src, dst)`, in key order (never hash order: breaking one
  // schedules events, whose order must be the seed's alone).
  std::vector<uint64_t> connection_keys(const std::function<bool(uint32_t, uint32_t)>& pred) const;
  void reconnect_now(uint32_t src, const std::string& stream_addr);
  void corrupt(std::string& bytes);
  void submit_storage(uint32_t node, node::StorageBatch& batch);
  void start_sync(uint32_t node);
  void execute(uint32_t node, node::Invocation& invocation);
  // The node stops a run of its own (overlap = replace): it ends kStopDelayMs later,
  // unless it ended first.
  void stop_execution(uint32_t node, uint64_t invocation_id);
  void observe(uint32_t node, const Observation& obs);
  void schedule_tick(uint32_t node, bool after_tick);
  // Applies `edit` to a copy of the current links, records it, breaks broken streams.
  void change_links(const std::function<void(LinkState&)>& edit);
  void links_changed();
  void record_status(uint32_t node);
  void record_fault(FaultKind kind, std::vector<uint32_t> nodes, std::string detail = {});
  void mix(uint64_t v) { trace_hash_ = Rng::splitmix64(v += trace_hash_); }
  void trace(const std::string& line);
  Connection& connection(uint32_t src, uint32_t dst);

  ClusterSpec cluster_;
  WorldOptions options_;
  ProcessFactory factory_;
  std::shared_ptr<const toml::table> node_options_;
  std::vector<SimNode> nodes_;
  AddressBook addresses_;  // routing by address; lookups only
  std::unordered_map<uint64_t, Connection> connections_;   // (src << 32 | dst); lookups
                                                           // and epoch bumps only
  LinkHistory links_;
  EventQueue queue_;
  Pool<InFlight> in_flight_;
  Pool<std::function<void()>> actions_;
  Rng net_rng_, disk_rng_, handler_rng_, process_seed_rng_;
  std::vector<Checker*> checkers_;
  std::vector<Execution> executions_;
  std::vector<FaultRecord> fault_log_;
  struct LatencySpike {
    uint32_t src = 0, dst = 0;
    int64_t sent_ms = 0, arrive_ms = 0;
  };
  std::vector<LatencySpike> spikes_;  // deliveries slower than kLatencySpikeMs, by sent_ms
  int64_t longest_spike_ms_ = 0;      // max arrive_ms - sent_ms in spikes_
  int64_t spikes_overflow_ms_ = -1;   // spikes_ full from then on: nothing after is quiet
  void note_latency(uint32_t src, uint32_t dst, int64_t arrive_ms);
  std::vector<Violation> violations_;
  std::function<void(const std::string&)> trace_sink_;
  ChannelStats datagram_, stream_;
  uint64_t ticks_ = 0, syncs_ = 0, batches_lost_ = 0, observations_ = 0, puts_ = 0,
           puts_dropped_ = 0, configs_applied_ = 0, configs_refused_ = 0;
  std::vector<ConfigChange> config_changes_;
  std::vector<WriteRecord> writes_;
  uint64_t deletes_ = 0;
  std::set<std::pair<uint64_t, std::string>> configs_seen_;  // (epoch, volume) recorded in config_changes_
  int64_t now_ms_ = 0;
  uint64_t events_ = 0;
  // Events at the current instant, and what they were once they pass half the bound
  // (counted only then, so a healthy run pays one comparison per event).
  uint64_t instant_events_ = 0;
  std::map<uint32_t, uint64_t> instant_by_node_;
  std::map<EventKind, uint64_t> instant_by_kind_;
  bool livelocked_ = false;
  uint64_t trace_hash_ = 0;
  uint32_t oversize_reported_ = 0;
  bool started_ = false;
};

}  // namespace caesium::sim
