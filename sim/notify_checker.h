// The notification checker (docs/entries.md, "Notifications"; node/core/notify.h), on the
// simulator's ground truth: every handler execution and every fault.
//
//   notify.once      a notification ran twice: two executions of one at-most-once
//                    notification entry (on_failure, failed, missed, lost), or two
//                    executions of one withheld notification neither flagged
//                    possible_duplicate                                        (always)
//   notify.spurious  an on_failure or failed notification names an occurrence none of
//                    whose executions was its entry's last run ending in a failure (failed
//                    or timed out)                                             (always)
//   notify.sent      an occurrence's last run failed — at least `settle_ms` before the end
//                    of a run whose last fault ended `settle_ms` before the end, with no
//                    node crashing after it began (the notice may die with its worker, and
//                    an at-most-once notification may be lost with its own worker, as
//                    swarm --retries --notify seed 194 showed) — and the entry has `on_failure`
//                    (or the scenario a notify handler for failed), but no notification
//                    of it ran
//
// "Last run": the run numbered retry.attempts, or any run of an entry that does not retry.
// Only entries the workload wrote once are judged by notify.sent and notify.spurious (an
// edit may change on_failure or the retry policy under a run).
//
// The judgement is a pure function (judge_notifications) of records a unit test can make
// by hand.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/checker.h"
#include "sim/scenario.h"

namespace caesium::sim {

// What the judgement needs of one workload entry.
struct NotifySubject {
  std::string on_failure;  // empty: none
  uint32_t attempts = 1;   // retry.attempts
  bool judged = true;      // written once (see above)
};

struct NotifyJudgeInput {
  std::vector<Execution> executions;
  std::map<std::string, NotifySubject> subjects;  // by volume + '\n' + entry key
  std::vector<FaultRecord> faults;
  std::string notify_handler;   // the scenario's cluster notify handler ("": none)
  bool notify_failed = true;    // ...and whether it is told of failures
  int64_t end_ms = 0;
  int64_t settle_ms = 60'000;
};

std::vector<Violation> judge_notifications(const NotifyJudgeInput& in);

class NotifyChecker final : public Checker {
 public:
  // notify_handler / notify_failed: the nodes' [notify] (node option notify_handler).
  NotifyChecker(const Scenario& scenario, std::string notify_handler, bool notify_failed);

  void on_execution(const World& world, const Execution& execution) override;
  void on_fault(const World& world, const FaultRecord& fault) override;
  void finish(const World& world, Report& report) override;

 private:
  NotifyJudgeInput in_;
};

}  // namespace caesium::sim
