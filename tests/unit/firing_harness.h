// A hand-timed protocol harness for the firing core (schedule/scheduler.h), in the
// spirit of quinn-proto's test `Pair` and TigerBeetle's replica tests: N schedulers,
// each behind a FakeHost that behaves like the Node (node/core/) where it matters to
// the protocol, wired by a network the test drives message by message.
//
// It uses the scheduler's public API only (inputs, SchedulerHost outputs, counters),
// so it survives any restructuring of the scheduler's internals.
//
// What it models, and how:
//   time      one global virtual time t (ms).  Node i reads Clock{t, kBaseUtc + t +
//             skew_i}.  Nothing sleeps: `advance` and `run_for` move t from one
//             scheduler deadline (next_deadline_mono) or packet to the next.
//   storage   per node a volume store (visible at once to store_get, echoed to the
//             node's own scheduler as on_record after the call returns, as the Node's
//             store observer does) and local records (grants).  Every write joins an
//             unflushed batch; `flush` makes it durable.  By default a node flushes at
//             the end of every turn; `set_auto_flush(n, false)` lets a test look
//             between the write and its durability.  A crash loses what was not flushed.
//   sends     `send(after_durable)` waits in the node's outbox until everything
//             written before it is durable (the Node's write barrier), as do `invoke`
//             and `invoke_after(mark)`.  Messages to oneself loop back without the
//             network, like the Node's self queue.
//   network   every other message, and every store push (replication), is a Packet in
//             flight.  The test delivers, drops, delays or holds packets, or sets link
//             rules: `cut` (dropped, one way) and `hold` (kept in flight until
//             delivered explicitly or the rule is removed).
//   views     what each node sees of each peer (PeerView) is set by the test; the
//             harness calls on_peer_change.  A crashed node looks alive until the test
//             says otherwise, as in a real membership.
//   crashes   `crash` drops the process; `restart` builds a new one (new boot id) from
//             the node's disk, or from nothing (`Disk::kWipe`: amnesia horizon = start +
//             2 x max_clock_skew, as the Node sets it).  A new cluster starts wiped too.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "base/rng.h"
#include "base/time.h"
#include "schedule/entry.h"
#include "schedule/entry_codec.h"
#include "schedule/fire_messages.h"
#include "schedule/marks.h"
#include "schedule/occurrence.h"
#include "schedule/scheduler.h"

namespace caesium::firing_test {

using schedule::Claim;
using schedule::ClaimKind;
using schedule::ClaimOutcome;
using schedule::ClaimReply;
using schedule::Dispatch;
using schedule::DispatchOutcome;
using schedule::DispatchReply;
using schedule::Entry;
using schedule::FireEvent;
using schedule::FireMessage;
using schedule::GoAnswer;
using schedule::GoAsk;
using schedule::GoVerdict;
using schedule::Invocation;
using schedule::OccurrenceId;
using schedule::OwnerOutcome;
using schedule::OwnerRecord;
using schedule::PeerView;
using schedule::Release;
using schedule::Revoke;
using schedule::RevokeOutcome;
using schedule::RevokeReply;
using schedule::Scheduler;
using schedule::SchedulerOptions;
using schedule::Semantics;
using schedule::Topology;
using schedule::Vote;
using schedule::WorkerRecord;
using schedule::WorkerState;

inline constexpr int64_t kBaseUtc = 1'790'000'000'000;  // an unskewed clock's UTC at t = 0
inline constexpr int64_t kStartT = 100'000;             // t when a cluster starts
inline constexpr const char* kVolume = "v";

// A harness limit was hit (a pump that does not go quiet) or it was misused.
struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A volume store value with the version the harness stamps on every write (a global
// counter): replication delivered out of order keeps the newest.
struct Record {
  std::string value;
  uint64_t version = 0;
  bool deleted = false;  // a tombstone: store_get answers nothing, entry_version its version
};
// What the scheduler hears of a record (on_record): nothing for a tombstone.
inline std::optional<std::string> live(const Record& r) {
  if (r.deleted) return std::nullopt;
  return r.value;
}

// A store record on its way to another replica.
struct StorePush {
  std::string volume, key;
  Record rec;
  bool lazy = false;  // store_put_lazy: leaves after the push hold
};

struct Packet {
  uint64_t id = 0;  // cluster-wide send order
  std::string from, to;
  std::variant<FireMessage, StorePush> body;
  int64_t sent_t = 0;   // when it left its node's outbox
  int64_t ready_t = 0;  // run_for delivers it no earlier
  bool dropped = false;  // (in the sent log) dropped by a cut

  template <class T>
  const T* as() const {
    if constexpr (std::is_same_v<T, StorePush>) {
      return std::get_if<StorePush>(&body);
    } else {
      const auto* m = std::get_if<FireMessage>(&body);
      return m == nullptr ? nullptr : std::get_if<T>(m);
    }
  }
  std::string describe() const;
};

using Filter = std::function<bool(const Packet&)>;
template <class T>
Filter is() {
  return [](const Packet& p) { return p.as<T>() != nullptr; };
}
inline Filter any() {
  return [](const Packet&) { return true; };
}
inline Filter pushes() { return is<StorePush>(); }
inline Filter claims(ClaimKind kind) {
  return [kind](const Packet& p) { return p.as<Claim>() != nullptr && p.as<Claim>()->kind == kind; };
}
inline Filter messages() {
  return [](const Packet& p) { return p.as<StorePush>() == nullptr; };
}

// What one node sees of one peer.  The harness turns it into the PeerView the
// scheduler asks for; unset optionals follow the real peer (its boot, the clocks).
struct ObservedView {
  bool reachable = true, suspect = false, direct = true, known = true;
  std::optional<uint64_t> boot;           // nullopt: the peer's current boot
  uint32_t load = 0, slots = 8;
  std::optional<int64_t> silent_since_t;  // nullopt: heard from just now
  std::optional<int64_t> clock_ahead_ms;  // nullopt: the true difference of the clocks
};

// A handler started on a worker (after its acceptance was durable).
struct Run {
  std::string node;
  uint64_t boot = 0;
  Invocation inv;
  int64_t start_t = 0, start_utc = 0;  // start_utc: the worker's clock
  bool finished = false, ok = false, crashed = false;
  bool stop_requested = false;  // SchedulerHost::cancel (overlap = replace)
  bool replaced = false;        // ended by finish_stopped
};

struct LoggedEvent {
  std::string node;
  int64_t t = 0, utc = 0;  // utc: the emitting node's clock
  FireEvent ev;
};

enum class Disk : uint8_t { kKeep, kWipe };

struct ClusterOptions {
  size_t nodes = 3;
  SchedulerOptions scheduler;
  int64_t latency_ms = 1;           // ready_t = sent_t + latency
  int64_t lazy_push_hold_ms = 500;  // store_put_lazy pushes leave this much later
  uint64_t seed = 1;                // the only randomness (boot ids; Cluster::rng for tests)
  int64_t max_steps = 200'000;      // per pump: more means a livelock, and throws
};

// The shipped options with preparing ahead off: occurrences are claimed at F and a run
// starts on acceptance.  For the hand-timed tests of deciding at the instant, which time
// each message against F (deciding ahead is tested with prepare_ahead stated).
inline ClusterOptions at_instant() {
  ClusterOptions o;
  o.scheduler.prepare_ahead_ms = 0;
  return o;
}

class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // --- nodes -----------------------------------------------------------------------------
  const std::vector<std::string>& ids() const { return ids_; }
  Scheduler& sched(const std::string& id);  // throws when the node is down
  bool up(const std::string& id) const;
  uint64_t boot(const std::string& id) const;
  Clock clock(const std::string& id) const;
  int64_t now() const { return t_; }
  // Global time at which `id`'s clock reads `utc`.
  int64_t t_at(const std::string& id, int64_t utc) const;
  void set_skew(const std::string& id, int64_t skew_ms);
  void set_master(const std::string& id, bool master, const std::string& volume = kVolume);
  void make_master(const std::string& id, const std::string& volume = kVolume);  // the others stop
  void set_active(const std::string& id, bool active);
  // The node's place after the master (Scheduler::set_backup_rank); 0: not a backup.
  void set_backup_rank(const std::string& id, uint32_t rank, const std::string& volume = kVolume);
  void set_topology(const std::string& id, Topology topology);
  Topology topology(const std::string& id) const;
  Rng& rng() { return rng_; }

  // --- entries and records ---------------------------------------------------------------
  // Makes `master` the master and puts the one-shot entry `e`: its occurrence.
  OccurrenceId start_entry(const Entry& e, const std::string& master = "n1");
  // Validates and writes the entry into every replica's store (as if replicated long
  // ago), durably, and tells the live schedulers.
  void put_entry(const Entry& e);
  // The same on `nodes` only (the others do not have it yet): an edit that reached some.
  void put_entry_on(const Entry& e, const std::vector<std::string>& nodes);
  // A delete (a tombstone newer than every write so far) of `key` on `nodes` only.
  void delete_entry_on(const std::string& key, const std::vector<std::string>& nodes);
  std::optional<std::string> store_value(const std::string& id, const std::string& key) const;
  std::map<std::string, OwnerRecord> owner_records(const std::string& id, const OccurrenceId& occ) const;
  std::map<std::string, WorkerRecord> worker_records(const std::string& id, const OccurrenceId& occ) const;
  // The node's vote on occ: as written (durable or not), or on its disk only.
  std::optional<Vote> vote(const std::string& id, const OccurrenceId& occ, bool durable_only = false) const;
  // Copies every record `id` lacks (or holds older) from the other live nodes, as
  // anti-entropy would; the scheduler hears of each through on_record.
  void resync(const std::string& id);

  // --- durability ------------------------------------------------------------------------
  void set_auto_flush(const std::string& id, bool on);
  void flush(const std::string& id);  // makes writes durable; releases what waited for them
  size_t unflushed(const std::string& id) const;

  // --- network -----------------------------------------------------------------------------
  // "*" matches any node.  Explicit deliver ignores hold rules (not cuts).
  size_t deliver(const std::string& from = "*", const std::string& to = "*", const Filter& what = any());
  size_t deliver_all();  // time frozen: every deliverable packet, and what they cause, until quiet
  size_t drop(const std::string& from = "*", const std::string& to = "*", const Filter& what = any());
  void delay(const std::string& from, const std::string& to, const Filter& what, int64_t ms);
  std::vector<Packet> in_flight(const std::string& from = "*", const std::string& to = "*",
                                const Filter& what = any()) const;
  // The packets in flight, in send order, without copying them (valid until the network
  // next changes): for random tests that pick one at each step.
  const std::deque<Packet>& flying() const { return net_; }
  // Every packet ever sent (dropped ones flagged), in send order.
  std::vector<Packet> sent(const std::string& from = "*", const std::string& to = "*",
                           const Filter& what = any()) const;
  void inject(const std::string& from, const std::string& to, FireMessage msg);  // e.g. a replay
  void cut(const std::string& from, const std::string& to, Filter what = any());   // one way, dropped
  void hold(const std::string& from, const std::string& to, Filter what = any());  // one way, kept
  void heal();    // removes every cut and hold rule
  void unhold();  // removes the hold rules only

  // --- time ----------------------------------------------------------------------------------
  void advance(int64_t ms);  // ticks the schedulers at their deadlines; delivers nothing
  void run_for(int64_t ms);  // the same, delivering packets as they become ready
  void run_until_t(int64_t t) { run_for(std::max<int64_t>(0, t - t_)); }
  void advance_until_t(int64_t t) { advance(std::max<int64_t>(0, t - t_)); }

  // --- membership views ----------------------------------------------------------------------
  ObservedView& view(const std::string& observer, const std::string& peer);
  void notify(const std::string& observer, const std::string& peer);  // on_peer_change
  void change_view(const std::string& observer, const std::string& peer, const std::function<void(ObservedView&)>& f);
  void set_indirect(const std::string& observer, const std::string& peer);  // heard through relays only
  // Every other live node's view of `peer`.
  void change_views_of(const std::string& peer, const std::function<void(ObservedView&)>& f);
  void suspect(const std::string& peer);       // every other live node: suspect, silent from now
  void declare_dead(const std::string& peer);  // every other live node: unreachable, silent from now
  void recover(const std::string& peer);       // every other live node: healthy view again

  // --- crashes -------------------------------------------------------------------------------
  void crash(const std::string& id);
  void restart(const std::string& id, Disk disk = Disk::kKeep, bool active = true);
  int64_t amnesia_horizon(const std::string& id) const;

  // --- handlers and observations -------------------------------------------------------------
  const std::vector<Run>& runs() const { return runs_; }
  std::vector<Run> runs_of(const OccurrenceId& occ) const;
  size_t complete(const std::string& id, bool ok = true);  // every unfinished run of the node
  // Every unfinished run of the node that its scheduler asked to stop ends, replaced (as a
  // host reports a stopped handler).
  size_t finish_stopped(const std::string& id);
  // Occurrences (entry key, instant) started more than once across the cluster, with their
  // run count: at-most-once entries must never appear here.
  std::map<std::pair<std::string, int64_t>, size_t> duplicate_runs() const;
  const std::vector<LoggedEvent>& events() const { return events_; }
  std::vector<LoggedEvent> events(FireEvent::Kind kind, const OccurrenceId& occ, const std::string& node = "*") const;
  std::string dump() const;  // the sent log and events, for INFO on failure

 private:
  struct Member;
  class Host;
  Member& member(const std::string& id);
  const Member& member(const std::string& id) const;
  Member* find(const std::string& id);
  const Member* find(const std::string& id) const;
  PeerView peer_view(const Member& observer, const std::string& peer) const;
  void start(Member& m, Disk disk, bool active);
  template <class F>
  void turn(Member& m, F&& f);
  void settle(Member& m);
  void release(Member& m);
  void write(Member& m, const std::string& volume, const std::string& key, std::string value, bool lazy, bool push);
  void transmit(Member& m, const std::string& to, std::variant<FireMessage, StorePush> body, int64_t ready_t);
  bool matches_rule(const Packet& p, int action) const;
  void deliver_packet(Packet p);
  bool pop_ready(bool honour_time, Packet& out);
  void progress(int64_t ms, bool network);
  void check_steps(int64_t& steps, const char* where) const;

  ClusterOptions options_;
  std::vector<std::string> ids_;
  std::map<std::string, std::unique_ptr<Member>> members_;
  int64_t t_ = kStartT;
  uint64_t next_version_ = 1, next_packet_ = 1;
  std::deque<Packet> net_;
  std::vector<Packet> log_;
  struct Rule {
    std::string from, to;
    Filter what;
    int action;  // 0 drop, 1 hold
  };
  std::vector<Rule> rules_;
  std::vector<Run> runs_;
  std::vector<LoggedEvent> events_;
  Rng rng_;
};

// --- entries ---------------------------------------------------------------------------------

// A one-shot timer entry of entity "e", handler "log", created at the cluster's start.
// Counts coverage marks for the life of a test case (they are process-wide).
struct MarksOn {
  MarksOn() {
    schedule::reset_marks();
    schedule::enable_marks(true);
  }
  ~MarksOn() { schedule::enable_marks(false); }
};

Entry one_shot(const std::string& name, int64_t at_utc, Semantics semantics);
// An at-most-once one-shot that prefers to run on `origin`, with a 2 s accept timeout:
// the takeover and decision tests' occurrence.
Entry at_most_once_on(const std::string& origin, const std::string& name, int64_t at_utc);
// Fires every `interval_ms` from the cluster's start, `count` times.
Entry every(const std::string& name, int64_t interval_ms, uint64_t count, Semantics semantics);
OccurrenceId occ_of(const Entry& e, int64_t scheduled_utc);
// The claim replies `from` sent `to` about occ, in send order.
std::vector<ClaimReply> replies(const Cluster& c, const std::string& from, const std::string& to,
                                const OccurrenceId& occ);
const char* kind_name(const Packet& p);

}  // namespace caesium::firing_test

