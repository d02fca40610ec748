// What the simulator drives: one node process.  The real implementation wraps the
// sans-IO Node core (sim/node_process.*); tests of the simulator itself may use small
// test processes.  A crash destroys the Process; a restart creates a new one from the
// factory and hands it what survived on its simulated disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gossip/messages.h"
#include "node/core/io.h"
#include "schedule/hlc.h"

namespace caesium::sim {

using node::Channel;
using node::Clock;
using node::Invocation;
using node::InvocationResult;
using node::StorageBatch;
using node::StoredRecord;
using node::Transmit;

// Something a process reports for the simulator's report and checker; not protocol
// traffic.  Membership view changes feed detection/dissemination/false-positive figures.
struct Observation {
  enum class Kind : uint8_t {
    kMemberState = 0,  // observer's view of `subject` changed to `state`
    kMaster = 1,       // observer now considers `subject` master of `volume` ("" = none)
    kNote = 2,         // free text for the trace (e.g. "withheld o=...")
    kEntry = 3,        // an API write created/replaced entry `key` in `volume` at `at_utc_ms`
    kFire = 4,         // a scheduler decision on occurrence (volume, key, scheduled_utc_ms): `text`
                       // is the event kind (withheld, missed, lost, owned, dispatched, ...)
    kConfigAdopted = 5,  // the node adopted config `epoch`, which gives `volume` these sets
    kConfigResult = 6,   // the node's reconfigure() ended: `text` is "" (adopted) or why not
    kWriteAcked = 7,     // workload write `write_id` is acknowledged: durable here and held
                         // durably by as many replicas as it asked for (EntryWrite::want_acks)
  };
  Kind kind = Kind::kMemberState;
  std::string subject;
  std::string volume;
  int state = 0;  // gossip::MemberState as int for kMemberState
  uint64_t incarnation = 0;
  std::string text;
  // kEntry / kFire
  std::string key;               // entry key "<entity>/caesium/schedule/<name>"
  int64_t scheduled_utc_ms = 0;  // kFire: the occurrence
  int64_t at_utc_ms = 0;         // kEntry: the node's clock when it accepted the write
  schedule::Version version;     // kEntry: the record's version (the last-writer-wins order of writes)
  bool at_most_once = false;     // kFire
  std::string detail;            // kFire: path ("quorum"/"degraded"/"takeover") or reason
  uint64_t epoch = 0;                                // kConfigAdopted
  std::vector<std::string> replicas, previous;       // kConfigAdopted: the volume's sets in it
  uint32_t attempt = 0;   // kFire: the attempt a dispatched / redispatched event sent
  uint64_t write_id = 0;  // kEntry (text "delete" for a delete) and kWriteAcked: the write
};

// A workload write as the HTTP API would receive it: PUT (create or replace) or DELETE of
// one entry, waiting for `want_acks` replicas' durable acknowledgements (?w=N).
struct EntryWrite {
  uint64_t id = 0;      // the World's write id; the process names it in kEntry / kWriteAcked
  bool remove = false;  // a delete (json unused)
  std::optional<bool> pause;  // a pause (true) or resume (false) of the stored entry (json unused)
  bool trigger = false;       // run now: a manual occurrence (json unused)
  std::string idempotency_key;  // the trigger's Idempotency-Key ("" = none)
  std::string volume, entity, name, json;
  uint32_t want_acks = 1;  // replicas holding it durably, this node included
};

class Process {
 public:
  virtual ~Process() = default;

  // Start with what the simulated disk holds (empty: a fresh or wiped disk).
  virtual void start(std::vector<StoredRecord> disk, Clock now) = 0;
  // Graceful leave requested (the scenario's `leave` fault).
  virtual void leave(Clock now) = 0;

  virtual void on_datagram(const std::string& from_addr, const std::string& bytes, Clock now) = 0;
  virtual void on_stream(const std::string& from_addr, const std::string& bytes, Clock now) = 0;
  virtual void on_tick(Clock now) = 0;
  virtual void on_durable(uint64_t seq, Clock now) = 0;
  virtual void on_invocation_done(const InvocationResult& result, Clock now) = 0;

  // The monotonic instant at which the process wants on_tick (kNever: no need).
  virtual int64_t next_deadline_mono() const = 0;

  virtual bool poll_transmit(Transmit& out) = 0;
  virtual bool poll_storage(StorageBatch& out) = 0;
  virtual bool poll_invocation(Invocation& out) = 0;
  // A running invocation to stop (node::Node::poll_cancel).  Default: never.
  virtual bool poll_cancel(uint64_t& invocation_id) {
    (void)invocation_id;
    return false;
  }
  virtual bool poll_observation(Observation& out) = 0;
  // A peer's process restarted: drop the reconnect back-off towards its stream address
  // and connect at once (the daemon's Transport::reconnect_now).  Default: never.
  virtual bool poll_reconnect(std::string& stream_addr) {
    (void)stream_addr;
    return false;
  }

  // --- Added by the simulator (sim/ owner) -------------------------------------------
  // The workload's API write: create or replace entry `name` of `entity` in `volume`
  // with the entry fields as a JSON object text, as the HTTP API of this node would.
  // Called at the scenario's `at` time on the scenario's `via` node.  Default: ignored.
  virtual void put_entry(const std::string& volume, const std::string& entity,
                         const std::string& name, const std::string& json, Clock now) {
    (void)volume, (void)entity, (void)name, (void)json, (void)now;
  }

  // The workload's write with an id and an acknowledgement to wait for: the process
  // reports kEntry (with the id) when it accepted the write and kWriteAcked once
  // `want_acks` replicas hold it durably.  Default: a put goes to put_entry (no
  // acknowledgement is ever reported), a delete is ignored.
  virtual void write_entry(const EntryWrite& write, Clock now) {
    if (!write.remove && !write.pause) put_entry(write.volume, write.entity, write.name, write.json, now);
  }

  // A cluster config change through this node's API (the simulator's `config` fault):
  // the next epoch of the config it holds, with `volume`'s replica sets replaced.
  // Returns "" when applied or being agreed (the outcome follows as a kConfigResult
  // observation), else why it was refused.  Default: not supported.
  virtual std::string reconfigure(const std::string& volume, const std::vector<std::string>& replicas,
                                  const std::vector<std::string>& previous, Clock now) {
    (void)volume, (void)replicas, (void)previous, (void)now;
    return "this process kind has no cluster config";
  }
  // Whether this node's store of `volume` holds a live record `key` (nullopt: the
  // process cannot tell, or does not replicate the volume).
  virtual std::optional<bool> holds_record(const std::string& volume, const std::string& key) const {
    (void)volume, (void)key;
    return std::nullopt;
  }

  // Whether this node's store of `volume` holds the worker record of attempt `fire_id`
  // of occurrence (entry_key, scheduled_utc_ms) as finished (completed or failed):
  // ground truth for the restart.rerun rule.  nullopt: cannot tell / not a replica.
  virtual std::optional<bool> holds_completion(const std::string& volume, const std::string& entry_key,
                                               int64_t scheduled_utc_ms, const std::string& fire_id) const {
    (void)volume, (void)entry_key, (void)scheduled_utc_ms, (void)fire_id;
    return std::nullopt;
  }

  // The converged start (`[nodes] start = "joined"`): after every process started, the
  // world hands each one the others' membership records to hold as alive.  Defaults:
  // nothing to offer, nothing to take.
  virtual std::optional<gossip::Alive> self_alive() const { return std::nullopt; }
  virtual void adopt_members(const std::vector<gossip::Alive>& members, Clock now) { (void)members, (void)now; }

  // Introspection for the checkers (never protocol traffic).  Defaults return empty,
  // which the checkers read as "not implemented" and then fall back to observations.
  //
  // This node's membership view: (node id, gossip::MemberState as int), any order.
  virtual std::vector<std::pair<std::string, int>> member_view() const { return {}; }
  // One digest per volume this node replicates: (volume name, store digest), any order.
  // Equal digests on all up replicas of a volume = converged store.
  virtual std::vector<std::pair<std::string, uint64_t>> volume_digests() const { return {}; }
  // The cluster config this node holds: (epoch, fingerprint).  Up nodes that hold
  // different ones at the end of a run never converged (two configs of one epoch are
  // kept apart, docs/design.md §4).  Default: none.
  virtual std::optional<std::pair<uint64_t, uint64_t>> config_identity() const { return std::nullopt; }
  // The process's own counters (name, value), summed over the processes running at the
  // end into the report's [process] figures.  Default: none.
  virtual std::vector<std::pair<std::string, double>> counters() const { return {}; }
};

}  // namespace caesium::sim
