// Membership: SWIM with the Lifeguard extensions, as a sans-IO state machine.
//
// The driver (the Node core, a test harness, the simulator) owns sockets and clocks.  It
// feeds inputs — on_packet / on_push_pull with the authenticated sender, on_tick, and
// the API calls — each with the monotonic time `now_ms`, and drains outputs: poll_send
// (datagrams and stream messages to transmit), poll_event (view changes) and
// next_deadline_ms (when to call on_tick next).  Nothing in here reads a clock, touches a
// socket or uses a global random source; randomness comes from the injected Rng, so the
// same inputs and seed give the same outputs, bit for bit.
//
// Protocol summary (docs/membership.md has the full story and the sources):
//   - Failure detection (SWIM §3, §4.3): one probe per probe period, to members in a
//     shuffled round-robin order.  No ack within the probe timeout → PingReq to
//     `indirect_checks` random alive members, who ping the target for us.  No ack by the
//     end of the period → the target becomes suspect.
//   - Lifeguard: the probe timeout and period are scaled by local health (Awareness);
//     relays answer a Nack at 80% of their probe timeout when the target stays silent,
//     and missing nacks count against *our* health; suspicions start long and shrink with
//     independent confirmations (Suspicion); a ping to a suspect carries the suspicion
//     (buddy system) so it can refute at once.
//   - Suspicion with incarnations (SWIM §4.2): Alive(i) overrides Suspect/Dead(j) iff
//     i > j; Suspect(i) overrides Alive(j) iff i >= j; Dead overrides both at i >= j.
//     A member refutes news of its own suspicion or death by raising its incarnation.
//   - Dissemination (SWIM §4.1): every datagram piggybacks queued updates (BroadcastQueue),
//     each sent retransmit_mult * ceil(log10(N+1)) times; a gossip round every
//     gossip_interval to gossip_nodes members, only while something is queued.
//   - Anti-entropy: a PushPull exchange over the stream channel with one random alive
//     member every push_pull_interval (scaled above 32 members), and with one random dead
//     member (to heal partitions: both sides of a long split have declared each other
//     dead and would otherwise never talk again).  It opens with the digest of our view
//     and goes on to full states only if the partner's view differs (or someone is
//     suspect).  Joining = a full PushPull{join} to the seeds.
//
// Threading: none; a Membership is used by one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "base/rng.h"
#include "gossip/awareness.h"
#include "gossip/broadcast.h"
#include "gossip/id_index.h"
#include "gossip/messages.h"
#include "gossip/suspicion.h"

namespace caesium::gossip {

inline constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

// Longest node id or address membership accepts, so that the largest primary message
// (a Ping with its buddy Suspect, or a PingReq) plus the sender's own id and address in
// the frame always fit a datagram with room for updates.
inline constexpr size_t kMaxIdBytes = 128;

// Incarnations only ever count up by one per refutation or meta change, so a value at
// or above this is corrupt (or hostile): accepting it would leave its subject unable to
// outbid it without wrapping around.  News carrying one is dropped.
inline constexpr uint64_t kMaxIncarnation = uint64_t{1} << 62;

// Defaults are memberlist's LAN configuration unless noted.
struct MembershipConfig {
  int64_t probe_interval_ms = 1000;
  int64_t probe_timeout_ms = 500;  // direct ack timeout; should be ~p99 RTT
  int indirect_checks = 3;
  int suspicion_mult = 4;              // Lifeguard Min = mult * max(1, log10 N) * probe_interval
  int suspicion_max_timeout_mult = 6;  // Lifeguard Max = this * Min
  int retransmit_mult = 4;             // each update is sent mult * ceil(log10(N+1)) times
  int64_t gossip_interval_ms = 200;
  int gossip_nodes = 3;
  int64_t gossip_to_dead_ms = 30000;   // keep gossiping to a dead member this long: it may refute
  int64_t push_pull_interval_ms = 30000;
  int awareness_max_multiplier = 8;    // local health score stays in [0, 7]
  int64_t load_update_min_interval_ms = 1000;  // load-only meta changes: at most one per this
  size_t max_packet_bytes = 1400;      // every datagram payload, frame included
  // What the frame and its envelope add to a Packet, *except* the sender's node id and
  // gossip address, which membership accounts for itself (node/wire today: 48 bytes of
  // frame header and tag + at most 53 of envelope fields).
  size_t packet_overhead_bytes = 200;
  // Caesium's own (not memberlist's):
  int64_t join_retry_interval_ms = 2000;  // resend PushPull{join} to the seeds until one answers
  int64_t dead_reclaim_ms = 24 * 3600 * 1000;  // forget dead/left members after this (serf: 24 h)
  // Each probe period also pings one random dead member (the reconnect probe), which
  // heals a partition flip within periods instead of push-pull intervals.  A member dead
  // for longer than this is pinged only with probability this / (time dead): a split
  // that just healed is found at once, and a member that is really gone costs the
  // cluster ever less (push-pull's dead partner still reaches it).  0: no reconnect probes.
  int64_t reconnect_probe_full_ms = 60000;
  // Lifeguard off = plain SWIM as memberlist ran it before Lifeguard: no local health
  // awareness, no nacks, no buddy system, and a fixed suspicion timeout equal to
  // Lifeguard's Min (= memberlist's pre-Lifeguard suspicionTimeout), with no
  // acceleration by confirmations.
  bool lifeguard = true;
};

// Checks ranges and relations (timeout < interval, budget > overhead, ...).
Status check_config(const MembershipConfig& config);

struct Outgoing {
  enum class Channel : uint8_t {
    kDatagram = 0,  // to_addr is the peer's gossip (UDP) address; msg is a Packet
    kStream = 1,    // to_addr is the peer's stream (TCP) address; msg is a PushPull
  };
  Channel channel = Channel::kDatagram;
  std::string to_addr;
  std::variant<Packet, PushPull> msg;
};

struct MemberEvent {
  enum class Kind : uint8_t {
    kJoined = 0,    // a new member, or a dead/left one back (new incarnation or new address)
    kUpdated = 1,   // an alive member's meta changed
    kSuspect = 2,   // alive → suspect
    kAlive = 3,     // suspect → alive (the member refuted); about self: we refuted
    kDead = 4,      // → dead (failure detected, here or by a peer)
    kLeft = 5,      // → left (graceful leave)
    kConflict = 6,  // two processes claim one node id (different addresses); never merged
  };
  Kind kind = Kind::kJoined;
  std::string node;
  MemberState state = MemberState::kAlive;  // the node's state in our view after the event
  uint64_t incarnation = 0;
  std::string detail;  // human-readable cause, for logs and the simulator's trace
};

// Counters for metrics and the simulator report.  Remote faults are counted and dropped.
struct MembershipStats {
  uint64_t datagrams_sent = 0;
  uint64_t push_pulls_sent = 0;        // full states sent (joins, replies, exchanges)
  uint64_t seed_exchanges = 0;         // exchanges opened with seeds no member answers to (seed_tick)
  uint64_t push_pull_digests_sent = 0; // digest push-pulls sent (see PushPull::digest_only)
  uint64_t push_pulls_in_sync = 0;     // digest push-pulls received that matched our view
  uint64_t probes = 0;
  uint64_t probe_failures = 0;
  uint64_t indirect_probes = 0;  // PingReqs sent
  uint64_t nacks_sent = 0;
  uint64_t suspicions_started = 0;  // by our own failed probes
  uint64_t deaths_declared = 0;     // by our own suspicion timeouts
  uint64_t refutations = 0;
  // News of our own id, at our address, from a process before ours: an alive above our
  // incarnation, or at it with another meta, or an accusation above it.  A process's own
  // life never makes any (only it raises its incarnation, and its meta changes with it),
  // so a node that started on an empty disk and sees one was wiped, not new
  // (node::NodeOptions::first_start).
  uint64_t previous_life_seen = 0;
  uint64_t conflicts = 0;
  uint64_t malformed_dropped = 0;   // empty/oversized ids, missing addresses, bad targets
  uint64_t misdirected_pings = 0;   // a Ping for another node id reached us
  uint64_t stale_replies = 0;       // acks/nacks matching no outstanding probe or relay
  uint64_t updates_too_large = 0;   // updates that could never fit a datagram
  uint64_t reconnect_probes = 0;    // pings to members held dead (see reconnect_probe)
  uint64_t stale_news_answered = 0; // datagrams correcting a sender's refuted Suspect/Dead
};

class Membership {
 public:
  // A node named `self_id` at gossip address `self_addr`, advertising `meta`, starting at
  // `incarnation`.  A restarted node must pass a higher incarnation than it ever
  // advertised before (the core persists incarnation()).  Nothing is sent until the
  // first input; call join() to contact seeds (join({}) starts a new cluster).
  // REQUIRES: check_identity(self_id, self_addr, meta, config).ok() and
  // check_config(config).ok() — validate operator input with those first.
  Membership(std::string self_id, std::string self_addr, MemberMeta meta, uint64_t incarnation,
             MembershipConfig config, Rng rng);

  // Whether an identity is acceptable: non-empty id and address of at most kMaxIdBytes,
  // and an Alive carrying `meta` small enough to fit a datagram next to the frame.
  static Status check_identity(std::string_view self_id, std::string_view self_addr, const MemberMeta& meta,
                               const MembershipConfig& config);

  // --- API ------------------------------------------------------------------------------

  // Sends PushPull{join} over the stream channel to every seed (their stream addresses;
  // our own stream address is skipped) and repeats every join_retry_interval until a
  // PushPull arrives from anyone.  An empty list starts a new cluster.
  void join(const std::vector<std::string>& seed_stream_addrs, int64_t now_ms);

  // Takes `members` as known and alive without spreading them: for a driver that starts
  // every node of a cluster already holding the converged view (the simulator's
  // `start = "joined"`, which measures the steady state without the join storm).  Our
  // own record and members we already know are skipped; each added member is reported as
  // kJoined.  Ends a pending join.
  void adopt_members(const std::vector<Alive>& members, int64_t now_ms);

  // Graceful leave: broadcasts Dead{self, from = self} (peers record kLeft), stops probing
  // and push-pull.  Keeps answering pings and gossiping until the news is out
  // (leave_done()); then the driver may stop.  Idempotent.
  void leave(int64_t now_ms);

  // True once the leave broadcast has been sent its full retransmit count (or there is
  // nobody left to tell).
  bool leave_done() const;

  // Advertises new meta under a new incarnation.  A change of load alone is rate-limited:
  // at most one Alive per load_update_min_interval; a newer load replaces a pending one
  // and goes out when the interval has passed.  Any other change goes out at once.
  // Errors: after leave(), or if the meta would not fit a datagram.
  Status set_meta(const MemberMeta& meta, int64_t now_ms);

  // --- Inputs ---------------------------------------------------------------------------

  // A datagram from `from` (authenticated by the driver).  Malformed content is dropped
  // and counted, never asserted on.
  void on_packet(const Peer& from, const Packet& packet, int64_t now_ms);

  // A full-state exchange over the stream channel.  Replies with our state if
  // `reply_wanted`, to the sender's stream address (taken from its own record in the
  // message, else from our view).
  void on_push_pull(const Peer& from, const PushPull& msg, int64_t now_ms);

  // Runs every timer that is due at `now_ms`.  Cheap when nothing is due.
  void on_tick(int64_t now_ms);

  // --- Outputs --------------------------------------------------------------------------

  // The earliest instant at which on_tick has work (kNoDeadline: none).  It is 0 before
  // the first input (call on_tick to start the timers), and it is at or after the last
  // input's now_ms unless something is already due.
  int64_t next_deadline_ms() const;

  // Pops the oldest queued message into `out`; false if none.
  bool poll_send(Outgoing& out);
  // Pops the oldest view change into `out`; false if none.  Events about self_id report
  // our own incarnation changes (kAlive = refuted, kUpdated = new meta), kLeft (leave())
  // and kConflict (someone else claims our id): the core must persist incarnation() after
  // any of them.
  bool poll_event(MemberEvent& out);

  // --- View -----------------------------------------------------------------------------

  std::optional<MemberState> state_of(std::string_view id) const;
  // Alive or suspect in our view (docs/design.md §3).  Ourselves: true until leave().
  bool reachable(std::string_view id) const;
  // nullptr if unknown.  Our own: the meta we currently advertise.
  const MemberMeta* meta_of(std::string_view id) const;
  std::optional<std::string> addr_of(std::string_view id) const;
  // Every known member, ourselves and dead/left members included, sorted by id.
  std::vector<MemberRecord> members() const;

  const std::string& self_id() const { return self_id_; }
  const std::string& self_addr() const { return self_addr_; }
  const MemberMeta& self_meta() const;
  uint64_t incarnation() const { return incarnation_; }
  bool has_left() const { return left_; }
  int local_health() const { return awareness_.score(); }
  size_t alive_count() const { return state_counts_[index(MemberState::kAlive)]; }
  size_t reachable_count() const {
    return state_counts_[index(MemberState::kAlive)] + state_counts_[index(MemberState::kSuspect)];
  }
  size_t member_count() const { return members_.size(); }
  const MembershipStats& stats() const { return stats_; }
  const MembershipConfig& config() const { return config_; }
  // Estimated bytes a datagram's Packet may take: max_packet - overhead - the estimated
  // size of our own id and address, which every frame we send carries.
  size_t datagram_budget_bytes() const { return budget_bytes_; }
  static size_t datagram_budget_bytes(std::string_view self_id, std::string_view self_addr,
                                      const MembershipConfig& config);
  // The current suspicion timeout bounds for a cluster of `n` members (for tests and the
  // simulator's detection bound).
  std::pair<int64_t, int64_t> suspicion_bounds_ms(size_t n) const;

  // A digest of the full state a push-pull would carry: the sum (mod 2^64) of a 64-bit
  // hash of each member's record (id, address, incarnation, state, meta), ourselves
  // included.  Two views with equal digests hold the same records, so a full exchange
  // between them would change nothing.  Cached; recomputed (O(N)) after a change.
  uint64_t view_digest() const;

  // Asserts every internal invariant.  O(N log N) with assertions on, a no-op when
  // NDEBUG is defined; drivers call it after each input.
  void check_invariants() const;

 private:
  struct Member {
    std::string addr;
    uint64_t incarnation = 0;
    MemberState state = MemberState::kAlive;
    MemberMeta meta;
    int64_t state_change_ms = 0;
    std::optional<Suspicion> suspicion;  // engaged iff state == kSuspect
  };
  using MemberMap = std::map<std::string, Member, std::less<>>;
  // A member's id and record; its address is stable until the member is reaped.
  using MemberEntry = MemberMap::value_type;
  // Our probe in flight.  Cleared on ack; on failure when end_ms passes.
  struct Probe {
    std::string target;
    uint64_t incarnation = 0;  // the target's incarnation when the probe began
    uint32_t seq = 0;
    int64_t ack_deadline_ms = 0;  // direct ack timeout: then PingReqs
    int64_t end_ms = 0;           // end of the (scaled) probe period: then suspect
    bool indirect_sent = false;
    std::vector<std::string> relays;
    size_t expected_nacks = 0;
    std::set<std::string, std::less<>> nacked;
  };
  // A PingReq we are serving for someone else.
  struct Relay {
    std::string requester_addr;
    uint32_t requester_seq = 0;
    std::string target;
    int64_t nack_at_ms = kNoDeadline;  // kNoDeadline: no nack wanted, or already sent
    int64_t expire_ms = 0;
  };
  static constexpr size_t kMaxRelays = 256;
  static constexpr size_t kMaxConflictsRemembered = 1024;

  static size_t index(MemberState s) { return static_cast<size_t>(s); }

  // membership.cpp
  void touch(int64_t now_ms);
  void emit(MemberEvent::Kind kind, const std::string& id, std::string detail);
  Member* find(std::string_view id);
  const Member* find(std::string_view id) const;
  Member& self();
  const Member& self() const;
  void apply_meta(const MemberMeta& meta, int64_t now_ms);
  void meta_tick(int64_t now_ms);
  static bool valid_id(std::string_view id) { return !id.empty() && id.size() <= kMaxIdBytes; }
  static bool valid_incarnation(uint64_t incarnation) { return incarnation < kMaxIncarnation; }
  static bool valid_alive(const Alive& a) {
    return valid_id(a.node) && !a.addr.empty() && a.addr.size() <= kMaxIdBytes && valid_incarnation(a.incarnation);
  }

  // membership_state.cpp: the rules of SWIM's state machine
  void apply_update(const Update& update, int64_t now_ms);
  void on_alive(const Alive& a, int64_t now_ms);
  void on_alive_about_self(const Alive& a, int64_t now_ms);
  void on_suspect(const Suspect& s, int64_t now_ms);
  void on_dead(const Dead& d, int64_t now_ms);
  void add_member(const Alive& a, int64_t now_ms, bool spread = true);
  void change_state(const std::string& id, Member& m, MemberState to, int64_t now_ms);
  void start_suspicion(const std::string& id, Member& m, std::string_view from, int64_t now_ms);
  // Drops m's suspicion and its deadline.  REQUIRES: m.suspicion.
  void end_suspicion(const std::string& id, Member& m);
  void reschedule_suspicion(const std::string& id, const Member& m, int64_t old_deadline_ms);
  void expire_suspicions(int64_t now_ms);
  void refute(uint64_t accused_incarnation, int64_t now_ms, std::string detail);
  bool note_conflict(const std::string& id, const std::string& known_addr, const std::string& claimed_addr,
                     uint64_t incarnation);
  void broadcast(Update update);
  void merge(const Peer& from, const PushPull& msg, int64_t now_ms);
  bool valid_digest_push_pull(const Peer& from, const PushPull& msg) const;
  void reap(int64_t now_ms);

  // membership_probe.cpp: failure detection
  void probe_tick(int64_t now_ms);
  void start_probe(int64_t now_ms);
  std::optional<std::string> next_probe_target(int64_t now_ms);
  void reset_probe_order(int64_t now_ms);
  void send_indirect(int64_t now_ms);
  void conclude_probe(int64_t now_ms);
  void relay_tick(int64_t now_ms);
  void handle_ping(const Peer& from, const Ping& ping, int64_t now_ms);
  void handle_ack(const Peer& from, const Ack& ack, int64_t now_ms);
  void handle_nack(const Peer& from, const Nack& nack);
  void handle_ping_req(const Peer& from, const PingReq& req, int64_t now_ms);
  std::optional<Update> buddy_update_for(const std::string& target) const;

  // membership_gossip.cpp: dissemination and anti-entropy
  void send_datagram(const std::string& to_addr, Primary primary, std::vector<Update> first);
  void reconnect_probe(int64_t now_ms);
  // Members (self included) about whom the packet being applied carried a Suspect or
  // Dead older than the record we hold alive: its sender missed a refutation, and is told
  // directly (set by on_suspect/on_dead; on_packet clears it before applying a packet's
  // updates and answers it after, on_push_pull drops what a merge left).
  std::vector<std::string> stale_news_;
  void note_stale_news(const std::string& id);
  void answer_stale_news(const Peer& to);
  void gossip_tick(int64_t now_ms);
  void push_pull_tick(int64_t now_ms);
  void join_tick(int64_t now_ms);
  void send_push_pull(const std::string& to_stream_addr, bool join, bool reply_wanted);
  // The periodic exchange with the node at `stream_addr`: a digest push-pull if it speaks
  // one and no member of our view is suspect, a full one otherwise.  `partner` is its
  // member record, or null for a seed that is no member (assumed to speak digests; the
  // message then carries our record only).
  void start_exchange(const std::string& stream_addr, const MemberEntry* partner);
  // One seed per exchange round that no member of the view answers to: see push_pull_tick.
  void seed_tick();
  PushPull snapshot(bool join, bool reply_wanted) const;
  // Every change to a member's id set, address, incarnation, state or meta calls this.
  void view_changed() { digest_stale_ = true; }
  static uint64_t record_hash(std::string_view id, const std::string& addr, uint64_t incarnation,
                              MemberState state, const MemberMeta& meta);
  uint64_t compute_view_digest() const;
  // Which members a random pick draws from.
  enum class Pool : uint8_t {
    kAlive,         // relays and push-pull partners
    kGossipTarget,  // alive, suspect, or dead for less than gossip_to_dead
    kDead,          // failed (not left): partition-healing push-pull
  };
  // Up to k distinct members of `pool` other than `exclude`, uniformly at random.
  // Tries at most 3·N random positions (memberlist's kRandomNodes), so it is O(k) when
  // the pool is most of the cluster and never worse than O(N).  The O(N) case is real:
  // with one dead member among N, a reconnect probe tries ~N positions; each try reads
  // the record through probe_order_'s pointer, with no id lookup.
  std::vector<MemberEntry*> pick_random(size_t k, Pool pool, std::string_view exclude, int64_t now_ms);
  int transmit_limit() const;

  MembershipConfig config_;
  size_t budget_bytes_;
  std::string self_id_;
  std::string self_addr_;
  Rng rng_;
  uint64_t incarnation_;

  bool started_ = false;
  bool left_ = false;
  int64_t last_input_ms_ = 0;

  // Every known member, ourselves included.  Sorted, so anything built by iterating it is
  // deterministic.
  MemberMap members_;
  // The same members for O(1) lookup (the hot path: every update, ping and probe looks
  // one up).  Points into members_, whose entries never move.  Never iterated.
  IdIndex<MemberEntry> index_;
  Member* self_ = nullptr;
  std::array<size_t, 4> state_counts_{};
  // Every member but ourselves, in probe order (reshuffled at each wrap); also the pool
  // for random picks.  Points into members_: members are only erased by reap(), which
  // runs just before the order is rebuilt.
  std::vector<MemberEntry*> probe_order_;
  size_t probe_index_ = 0;
  // Every member held dead (not left), any order: the pool of the reconnect probe and
  // the dead push-pull partner, so picking one costs O(1) however large the cluster
  // (sampling probe_order_ for the one dead member among 1000 cost thousands of draws).
  // With the time each became dead (its state_change_ms), so the reconnect probe's
  // back-off is decided without reading the member's record.
  struct DeadRef {
    MemberEntry* entry = nullptr;
    int64_t since_ms = 0;
  };
  std::vector<DeadRef> dead_;
  std::optional<Probe> probe_;
  std::map<uint32_t, Relay> relays_;
  // (deadline, member) for every suspect, so the earliest is found in O(1).
  std::set<std::pair<int64_t, std::string>> suspicion_deadlines_;
  uint32_t next_seq_ = 0;

  int64_t next_probe_ms_ = 0;
  int64_t next_gossip_ms_ = 0;
  int64_t next_push_pull_ms_ = 0;
  bool gossip_idle_ = false;  // queue non-empty but nobody to gossip to; cleared by any view change
  mutable uint64_t digest_ = 0;       // view_digest(), valid unless digest_stale_
  mutable bool digest_stale_ = true;

  std::vector<std::string> join_seeds_;
  size_t next_seed_check_ = 0;  // seed_tick's round-robin position in join_seeds_
  bool join_pending_ = false;
  int64_t next_join_ms_ = 0;

  std::optional<MemberMeta> pending_meta_;  // a rate-limited load change
  int64_t last_alive_broadcast_ms_ = std::numeric_limits<int64_t>::min() / 2;

  std::set<std::pair<std::string, std::string>> conflicts_seen_;  // (id, claimed addr)

  Awareness awareness_;
  BroadcastQueue queue_;
  // Sends not yet polled: sends_[sends_head_..].  A vector emptied when drained, not a
  // deque: an Outgoing is large enough that a deque allocated and freed a block for
  // nearly every datagram.
  std::vector<Outgoing> sends_;
  size_t sends_head_ = 0;
  std::deque<MemberEvent> events_;
  MembershipStats stats_;
};

}  // namespace caesium::gossip
