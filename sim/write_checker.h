// The write checker: what an acknowledged delete or edit promises about the runs that
// follow it (issue 33).  The rules, on ground truth (World::writes() says when each
// workload write was acknowledged; fire events say when each attempt was dispatched):
//
//   delete.run_after_ack  once a delete of entry E is acknowledged by a majority of E's
//                  eligible replicas (at t), no attempt of E first dispatched after t
//                  runs: always for at-most-once entries; for at-least-once entries when
//                  the owner that dispatched it could reach a majority of the eligible
//                  replicas then (links both ways, ground truth) — a minority cut off
//                  before the delete may still fire, flagged.
//   edit.run_after_ack  the same after an edit acknowledged by a majority, for the
//                  occurrences due at or after the edit's version time (the clock of the
//                  node that took it) that the new definition no longer schedules.
//   pause.run_after_ack  as delete.run_after_ack, after a pause (op = "pause", the stored
//                  entry with `paused` set) acknowledged by a majority, until the next
//                  write of the entry (a resume) is issued.
//   delete.prepared_run, edit.prepared_run, pause.prepared_run
//                  an attempt dispatched before the acknowledgement (prepared ahead) does
//                  not start after it when the acknowledgement came before the
//                  occurrence's instant (ground truth): no run of a definition superseded,
//                  with a majority's acknowledgement, before its due time.  Same scope
//                  (which occurrences an edit governs; at-least-once only where the owner
//                  reached a majority when it dispatched).
//
// "Acknowledged by a majority of the eligible replicas": the write waited for w
// replicas' durable acknowledgements (?w=N, World::WriteRecord::want_acks) and w is a
// majority of the eligible replicas of each replica set in force (the previous set too,
// during a change) even if every other replica was among them.  A rule holds until a write of the same key with a higher version (last
// writer wins) is issued — which may be before it, from a node whose clock is ahead.
//
// The judgement is a pure function of hand-made records (judge_writes), so unit tests
// prove each rule bites without running a World; WriteChecker collects the records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/entry.h"
#include "sim/checker.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace caesium::sim {

// The replicas among `replicas` that an entry's binding allows, sorted.
std::vector<std::string> eligible_replicas(const World& world, const schedule::Entry& entry,
                                           const std::vector<std::string>& replicas);

// Whether `node` reaches a majority of `eligible` now: itself, and the others up with
// links open both ways (ground truth), each process up for kViewSettleMs at least — a
// replica that (re)started just now could not have answered a claim the decider gave up
// on a moment ago (swarm seed 7831: an at-least-once owner fired degraded, after
// claim_give_up, the instant the replica holding a delete came back from a restart).
bool reaches_majority(const World& world, uint32_t node, const std::vector<std::string>& eligible);

// A node's view, and its stream connections (their reconnect backoff), need this long to
// learn of a change of links — a heal most of all: a decision within it of the last change
// is judged as if the links had not changed yet.  Likewise for a peer's process that
// started within it.
inline constexpr int64_t kViewSettleMs = 10'000;

// Whether the node deciding about `entry` of `volume` could ask a majority now: a majority
// of each replica set in force (the previous set too, during a change), and no change of
// links in the last kViewSettleMs (`last_link_change_ms`).
bool decider_reaches_majority(const World& world, uint32_t node, const schedule::Entry& entry,
                              const std::string& volume, int64_t last_link_change_ms);
// A fault that changes links (partition, cut, one-way, heal).
bool changes_links(const FaultRecord& fault);

// Whether `entry` schedules an occurrence at exactly `scheduled_utc_ms`.
bool schedules(const schedule::Entry& entry, int64_t scheduled_utc_ms);

// The entry a workload write (kEntry observation) created, as the taking node did:
// nullopt for a delete, an unknown write, or fields the node refused too.
std::optional<schedule::Entry> entry_of_write(const Scenario& scenario, const World& world, uint32_t node,
                                              const Observation& obs);

struct WriteRules {
  // One version of an entry: what a write of its key made it, in last-writer-wins order (a
  // write stands until a write of a higher version is issued, which may come earlier).
  struct Version {
    uint64_t write_id = 0;
    int64_t issued_ms = 0;
    int64_t acked_ms = -1;  // -1: never acknowledged
    bool deleted = false;
    bool majority_acked = false;  // w covers a majority of the eligible replicas (see above)
    schedule::Version hlc;        // the record's version: versions are in this (last-writer-wins) order
    std::optional<schedule::Entry> entry;  // absent for a delete
  };
  // A dispatched / redispatched fire event.
  struct Dispatch {
    int64_t at_ms = 0;
    std::string owner, worker;
    uint32_t attempt = 0;
    bool owner_reaches_majority = false;  // ground truth at at_ms
  };
  struct Run {
    int64_t start_ms = 0;
    std::string node, fire_id;
    uint32_t attempt = 1;
    int64_t scheduled_utc_ms = 0;
  };
  struct Key {
    std::string volume, key;
    std::vector<Version> versions;
    std::map<int64_t, std::vector<Dispatch>> dispatches;  // by scheduled_utc_ms
    std::vector<Run> runs;
  };
  std::vector<Key> keys;
  int64_t epoch_utc_ms = 0;
};

// Every violation of delete.run_after_ack, edit.run_after_ack and pause.run_after_ack in `rules`.
std::vector<Violation> judge_writes(const WriteRules& rules);

class WriteChecker final : public Checker {
 public:
  explicit WriteChecker(const Scenario& scenario) : scenario_(scenario) {}
  void on_observation(const World& world, uint32_t node, const Observation& obs) override;
  void on_fault(const World& world, const FaultRecord& fault) override;
  void finish(const World& world, Report& report) override;

 private:
  WriteRules::Key& key(const std::string& volume, const std::string& key);

  const Scenario& scenario_;
  int64_t last_link_change_ms_ = -kViewSettleMs;
  std::map<std::pair<std::string, std::string>, WriteRules::Key> keys_;
};

}  // namespace caesium::sim
