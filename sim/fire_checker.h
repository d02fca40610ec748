// The firing checker: what docs/design.md §7 says must always hold, checked against the
// simulator's ground truth (every handler execution, every fault, who was up and who
// could reach whom), not against what the nodes believe.
//
// Per occurrence o of every entry the workload created (enumerated from the entry's
// own timing, with the creating node's clock at creation):
//   amo.duplicate  an at-most-once occurrence started more than once           (always)
//   duplicate.unflagged  an occurrence started more than once as a first attempt
//                  without the possible_duplicate flag: a client could not tell the
//                  duplicate from the original                               (always)
//   alo.missed     an at-least-once occurrence never completed although an eligible
//                  replica holding the entry stayed up from its creation until the
//                  failure-detection bound after the due time
//   amo.liveness   an at-most-once occurrence did not run exactly once although a
//                  majority of its eligible replicas was up and connected (to each
//                  other) throughout a window around the due time — unless a worker it
//                  was dispatched to crashed meanwhile: whether that worker had already
//                  accepted can be unknowable (a wiped disk), and then at-most-once must
//                  report the occurrence lost rather than run it again; or unless a
//                  later write issued within that window took it away (a delete, a
//                  pause, or an edit that governs it by its version time and no longer
//                  schedules it)
//   healthy.once   in a run without faults, an occurrence did not run exactly once
//   early          an execution started before the due time (allowing the configured
//                  skew bound only where skewed clocks could make a quorum agree, or a
//                  flagged lone fire was decided by a skewed replica — in the sets of
//                  any config in force from reconfig_settle_ms before the start)
//   lateness       in a fault-free window, the first execution came later than the
//                  healthy bound (not judged with a running cap: waiting for a slot is
//                  lateness by design)
//   entry.lost     an entry whose write was acknowledged is held by no replica of the
//                  volume's final replica sets at the end, with all of them up
//   trigger.key    one trigger id (from an Idempotency-Key) was answered with two
//                  different manual occurrences: a retried trigger would run twice.
//                  (Each manual occurrence is an occurrence like any other: the rules
//                  above hold for it, so a trigger of an at-most-once entry runs at most
//                  once, and one of an at-least-once entry runs when they say.)
//   overlap.forbid two runs of one at-most-once entry with overlap = "forbid" or "replace" overlapped
//                  in time (invocation to completion, crash, or the end of the run)  (always)
//   cap.exceeded   a node ran more handlers at once than its running cap (node option
//                  max_running), on the real execution intervals               (always)
//   retry.amo      the runs of one at-most-once occurrence of an entry that retries do not
//                  form one chain: in start order, each run after the first started after
//                  the one before it ended in a definite failure (failed or timed out) —
//                  never after a success, a crash or a hang, never beside it — and there
//                  are at most retry.attempts of them, given run numbers 1, 2, ... in that
//                  order.  (Entries that retry are judged by
//                  this rule instead of amo.duplicate.)                            (always)
//   healthy.retry  in a run without faults, a run of an entry that retries failed with
//                  attempts left, and no run followed within its back-off (max_backoff)
//                  plus the healthy lateness bound, before the end
//   misfire.skip_late  an occurrence of a misfire = "skip" entry was first dispatched
//                  later than misfire_threshold after its due time (plus the skew
//                  bound where clocks were skewed, plus Options::misfire_slack_ms for the
//                  claim's round trips): the policy promises such an occurrence is
//                  skipped.  Later runs of an attempt first dispatched in time (a
//                  redispatch after a worker vanished) are the same firing, not a misfire
// The replica sets are those in effect at each due time (World::replicas_at: `config`
// faults change them; the early check also looks at earlier ones); the liveness checks skip occurrences near a change
// (Options::reconfig_settle_ms) and while previous replicas are listed.
// Figures per semantics: due, once, duplicates, withheld, missed, lost; lateness
// (all, healthy, after a fault); messages per occurrence; per entry
// ("entry.<entity>/<name>.due" / ".executions"); the most nodes that believed
// themselves master of one volume at the same time ("masters.max_concurrent").
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "schedule/entry.h"
#include "sim/checker.h"
#include "sim/scenario.h"

namespace caesium::sim {

class FireChecker final : public Checker {
 public:
  struct Options {
    int64_t detection_bound_ms = 60'000;   // failure detection + claim give-up + accept timeout
    int64_t liveness_window_ms = 20'000;   // AMO liveness / quiet lateness: healthy this long after
    // ...and this long before the due time: membership agrees again within two push-pull
    // intervals of a heal (issue 4's bound), so connectivity alone is not enough sooner.
    int64_t liveness_before_ms = 65'000;
    int64_t replication_grace_ms = 5'000;  // an entry reaches its replicas within this
    int64_t healthy_lateness_ms = 1'000;   // fault-free lateness bound
    size_t max_occurrences_per_entry = 20'000;
    // A replica change of the volume between an entry's write (or this long before an
    // occurrence) and the end of the occurrence's liveness window exempts the occurrence
    // from the liveness checks: the new replicas fill by anti-entropy, and which of them
    // hold the entry is not ground truth.  Safety checks still apply.
    int64_t reconfig_settle_ms = 30'000;
    // The nodes' misfire_threshold (node option), and how much later than it the first
    // dispatch of a "skip" occurrence may come: the decision is taken when the claim
    // starts, and its round trips (retries under loss) come after it.
    int64_t misfire_threshold_ms = 30'000;
    int64_t misfire_slack_ms = 5'000;
    // The nodes' running cap (node option max_running, when set; 0: none): cap.exceeded.
    uint32_t running_cap = 0;
    // The nodes' max_clock_skew and prepare_ahead (node options).  Preparing ahead, a
    // worker process that ended within 2 max_clock_skew before an instant may have
    // started the run it held for it (its clock may have read the instant already), and
    // no later process can tell: amo.liveness then cannot require exactly one run.
    int64_t max_clock_skew_ms = 1'000;
    int64_t prepare_ahead_ms = 0;
  };
  FireChecker(const Scenario& scenario, Options options);

  void on_start(const World& world) override;
  void on_execution(const World& world, const Execution& execution) override;
  void on_observation(const World& world, uint32_t node, const Observation& obs) override;
  void on_fault(const World& world, const FaultRecord& fault) override;
  void finish(const World& world, Report& report) override;

 private:
  struct Created {
    std::string volume;
    std::string key;
    std::string via;
    int64_t at_ms = 0;       // virtual time of the write
    int64_t at_utc_ms = 0;   // the via node's clock then
    uint64_t write_id = 0;   // World::writes() id (0: unknown)
    bool deleted = false;    // a delete: no entry from here on
    schedule::Version version;  // the record's: versions of a key are ordered by it (last writer wins)
    schedule::Entry entry;
  };
  struct OccKey {
    std::string volume;
    std::string key;
    int64_t scheduled_utc_ms = 0;
    auto operator<=>(const OccKey&) const = default;
  };
  struct Decisions {
    bool withheld = false, lost = false, missed = false, skipped_overlap = false;
    std::set<std::string> workers;  // every node an attempt was dispatched to
    int64_t first_dispatch_ms = -1;  // virtual time of the first (re)dispatch observed
    int64_t last_dispatch_ms = -1;   // ... and of the last
    int64_t lost_ms = -1;            // of the first `lost` verdict
  };

  // The replicas of c's volume at time_ms (World::replicas_at) that c's binding allows.
  // The replicas (or, during a change, the previous replicas) at time_ms that the entry's
  // binding allows, sorted.
  std::vector<std::string> eligible(const World& world, const Created& c, int64_t time_ms) const;
  std::vector<std::string> eligible_previous(const World& world, const Created& c, int64_t time_ms) const;
  std::vector<std::string> eligible_among(const World& world, const Created& c,
                                          const std::vector<std::string>& replicas) const;
  bool entry_lost(const World& world, const Created& c) const;
  // Whether a version after versions[version], issued before until_ms, takes the
  // occurrence (scheduled, firing at fire_utc_ms) away: a delete, or an edit that governs
  // it and no longer schedules it.
  static bool taken_away_by_later_write(const std::vector<Created>& versions, size_t version,
                                        int64_t scheduled_utc_ms, int64_t fire_utc_ms, int64_t until_ms);
  void check_overlap(const World& world, Report& report) const;
  void check_caps(const World& world, Report& report) const;
  // When an execution's run ended: its completion, its node's crash, restart or stop (the
  // run dies with the process), or never (a hung or still running handler).
  int64_t execution_end_ms(const Execution& e) const;
  bool overlap_blocked(const World& world, const OccKey& k, int64_t due_ms) const;
  // retry.amo: what breaks the chain the runs `idxs` of one at-most-once occurrence must
  // form under `retry`; empty when they form it.
  static std::string retry_chain_break(const std::vector<Execution>& execs, std::vector<size_t> idxs,
                                       const schedule::RetryPolicy& retry);
  // healthy.retry: in a run without faults, a run that failed with attempts left and was
  // followed by none although the back-off (and a healthy allowance) passed before the end.
  static std::string retry_left_undone(const std::vector<Execution>& execs, std::vector<size_t> idxs,
                                       const schedule::RetryPolicy& retry, int64_t end_ms);
  bool quiet_between(const World& world, const std::vector<std::string>& replicas, int64_t from_ms,
                     int64_t to_ms) const;

  const Scenario& scenario_;
  Options options_;
  // Run now: the due instants each trigger id (volume, key, id) was answered with.
  std::map<std::tuple<std::string, std::string, std::string>, std::set<int64_t>> trigger_instants_;
  std::map<std::string, size_t> workload_by_key_;  // volume + '\n' + key -> workload index
  // Every version of every entry the workload wrote, in issue order.
  std::map<std::pair<std::string, std::string>, std::vector<Created>> created_;
  std::map<OccKey, std::vector<size_t>> executions_;  // indexes into World::executions()
  std::map<OccKey, Decisions> decisions_;
  std::vector<FaultRecord> faults_;
  std::set<uint32_t> skewed_nodes_;
  // Who believes itself master of each volume right now, and the most at once.
  std::map<std::string, std::set<uint32_t>> self_masters_;
  size_t max_concurrent_masters_ = 0;
  uint64_t unknown_executions_ = 0;
};

}  // namespace caesium::sim
