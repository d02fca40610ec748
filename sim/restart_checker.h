// The restart checker: a restarted node must not decide from the state it had before it
// went down (issue 33, class 3).
//
//   restart.rerun  an occurrence that already completed — some attempt's finished worker
//                  record was held by a majority of the entry's eligible replicas (ground
//                  truth: their stores, read when the node restarted), and it was no failed
//                  run of an entry that retries with attempts left — is run again by
//                  that node after its restart: an execution started after the restart
//                  whose attempt the restarted node dispatched after the restart (or,
//                  when no dispatch was reported, that ran on it) — an attempt its
//                  previous life dispatched, held or slow to start, is no decision from
//                  stale state (swarm --prepare-ahead seed 1283: a prepared run held for
//                  two minutes by a worker cut off from the others' clocks) — while it
//                  could reach a majority of the
//                  eligible replicas — of each set in force, during a replica change —
//                  (up, links both ways: ground truth) and had been
//                  able to for kViewSettleMs — since the last change of links, a node's
//                  view needs a few probe periods to learn of a heal.  A node that
//                  restarts into a minority cannot ask, and may fire at-least-once work
//                  alone, flagged.
//
// Why it is a violation although at-least-once allows duplicates: a majority held the
// completion, so any master that asked a majority before deciding would have known it
// (docs/design.md §6: decisions come from a quorum, and the restarted node's store is only
// one stale replica).  Running it again is deciding from stale local state — the
// possible_duplicate flag tells the client, but nothing forced the duplicate.
//
// As with the write rules, the judgement is a pure function (judge_reruns) of records a
// unit test can make by hand.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "schedule/entry.h"
#include "sim/checker.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/write_checker.h"

namespace caesium::sim {

struct RestartRules {
  using Occ = std::tuple<std::string, std::string, int64_t>;  // volume, entry key, scheduled_utc_ms
  struct Restart {
    std::string node;
    int64_t at_ms = 0;
    std::set<Occ> completed;  // finished, and held so by a majority of the eligible replicas
  };
  struct Run {
    Occ occ;
    int64_t start_ms = 0;
    std::string node, decided_by, fire_id;  // decided_by: the dispatching owner ("" unknown)
    bool possible_duplicate = false;
    bool decider_reaches_majority = true;  // when decided (or, unknown, when it started)
    int64_t decided_ms = -1;  // when decided_by dispatched it (-1: unknown)
  };
  std::vector<Restart> restarts;
  std::vector<Run> runs;
};

std::vector<Violation> judge_reruns(const RestartRules& rules);

class RestartChecker final : public Checker {
 public:
  explicit RestartChecker(const Scenario& scenario) : scenario_(scenario) {}
  void on_observation(const World& world, uint32_t node, const Observation& obs) override;
  void on_execution(const World& world, const Execution& execution) override;
  void on_fault(const World& world, const FaultRecord& fault) override;
  void finish(const World& world, Report& report) override;

 private:
  const Scenario& scenario_;
  std::map<std::pair<std::string, std::string>, schedule::Entry> entries_;  // latest definition
  // Whether `node` reaches a majority of the eligible replicas of (volume, key) now, with
  // no change of links in the last kViewSettleMs (a heal takes that long to be seen).
  bool reaches_majority(const World& world, uint32_t node, const std::string& volume, const std::string& key) const;
  int64_t last_link_change_ms_ = -kViewSettleMs;  // write_checker.h

  // (occurrence, attempt, worker) -> the owner that last dispatched it, when, and whether
  // it reached a majority then
  struct Dispatched {
    std::string owner;
    int64_t at_ms = 0;
    bool reaches_majority = false;
  };
  std::map<std::tuple<std::string, std::string, int64_t, uint32_t, std::string>, Dispatched> dispatched_by_;
  RestartRules rules_;
};

}  // namespace caesium::sim
