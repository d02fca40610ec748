// The notify rules judged on hand-made executions: notify.once bites on a notification run
// twice (withheld ones only when unflagged), notify.spurious on one about a run that was not
// the last or did not fail, notify.sent on a last failed run nobody notified — and each
// spares the cases the rules leave alone.
#include <catch2/catch.hpp>

#include "base/time.h"
#include "node/core/notify.h"
#include "sim/notify_checker.h"

using namespace caesium;
using namespace caesium::sim;

namespace {

constexpr int64_t kDue = 1767225600000;  // 2026-01-01T00:00:00Z

Execution run(uint32_t node, int64_t start_ms, Execution::Outcome outcome, uint32_t run_number = 1) {
  Execution e;
  e.node = node;
  e.start_ms = start_ms;
  e.done_ms = start_ms + 100;
  e.outcome = outcome;
  e.invocation.volume = "v";
  e.invocation.entity = "nt";
  e.invocation.entry = "x";
  e.invocation.handler = "fails";
  e.invocation.scheduled_utc_ms = kDue;
  e.invocation.run = run_number;
  return e;
}

Execution notification(const std::string& event, uint32_t node, int64_t start_ms, bool flagged = false,
                       const std::string& name_suffix = "0001") {
  Execution e;
  e.node = node;
  e.start_ms = start_ms;
  e.done_ms = start_ms + 10;
  e.outcome = Execution::Outcome::kOk;
  e.invocation.volume = "v";
  e.invocation.entity = std::string(node::kNotifyEntity);
  e.invocation.entry = event + "-" + name_suffix;
  e.invocation.handler = "notify";
  e.invocation.possible_duplicate = flagged;
  e.invocation.payload = R"({"event":")" + event + R"(","volume":"v","entity":"nt","name":"x","scheduled":")" +
                         format_rfc3339_utc(kDue) + R"("})";
  return e;
}

NotifyJudgeInput input(uint32_t attempts, const std::string& on_failure) {
  NotifyJudgeInput in;
  in.subjects["v\nnt/caesium/schedule/x"] = NotifySubject{on_failure, attempts, true};
  in.notify_handler = "notify";
  in.end_ms = 600'000;
  in.settle_ms = 60'000;
  return in;
}

std::vector<std::string> kinds(const std::vector<Violation>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.invariant);
  return out;
}

}  // namespace

TEST_CASE("notify: a last failed run notified once by each handler breaks no rule", "[sim][notify]") {
  auto in = input(2, "on-fail");
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed, 1), run(1, 12'000, Execution::Outcome::kFailed, 2),
                   notification("on_failure", 2, 12'500), notification("failed", 0, 12'600)};
  CHECK(judge_notifications(in).empty());
}

TEST_CASE("notify.once bites on a notification run twice, withheld ones only unflagged", "[sim][notify]") {
  auto in = input(1, "");
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed), notification("failed", 0, 10'500),
                   notification("failed", 1, 11'000)};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.once"});
  // Withheld notifications are at-least-once: a flagged second run is allowed...
  in.executions = {notification("withheld", 0, 10'500), notification("withheld", 1, 11'000, true)};
  CHECK(judge_notifications(in).empty());
  // ...an unflagged one is not.
  in.executions = {notification("withheld", 0, 10'500), notification("withheld", 1, 11'000, false)};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.once"});
  // Two notifications of different entries are two notifications.
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed), notification("failed", 0, 10'500, false, "0001"),
                   notification("missed", 1, 11'000, false, "0002")};
  CHECK(judge_notifications(in).empty());
}

TEST_CASE("notify.spurious bites on a notification of a run that was not the last, or did not fail", "[sim][notify]") {
  auto in = input(3, "on-fail");
  // Run 2 of 3 failed: a retry follows, nothing is to be notified.
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed, 2), notification("on_failure", 0, 10'500)};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.spurious"});
  // The last run succeeded.
  in.executions = {run(0, 10'000, Execution::Outcome::kOk, 3), notification("failed", 0, 10'500)};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.spurious"});
  // The last run timed out: a failure.
  in.executions = {run(0, 10'000, Execution::Outcome::kTimedOut, 3), notification("on_failure", 0, 10'500),
                   notification("failed", 0, 10'600, false, "0002")};
  CHECK(judge_notifications(in).empty());
  // An entry the workload edited is not judged.
  in.subjects.begin()->second.judged = false;
  in.executions = {run(0, 10'000, Execution::Outcome::kOk, 3), notification("failed", 0, 10'500)};
  CHECK(judge_notifications(in).empty());
}

TEST_CASE("notify.sent bites on a last failed run nobody notified, once the run settled", "[sim][notify]") {
  auto in = input(1, "on-fail");
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed), notification("failed", 0, 10'500)};
  auto v = judge_notifications(in);
  REQUIRE(kinds(v) == std::vector<std::string>{"notify.sent"});
  CHECK(v[0].detail.find("no on_failure notification") != std::string::npos);
  // Without a cluster handler only on_failure is due.
  in.notify_handler.clear();
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed), notification("on_failure", 0, 10'500)};
  CHECK(judge_notifications(in).empty());
  in.executions = {run(0, 10'000, Execution::Outcome::kFailed)};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.sent"});
  // Not judged: the failure came too close to the end...
  in.executions[0].done_ms = in.end_ms - 1'000;
  CHECK(judge_notifications(in).empty());
  in.executions[0].done_ms = 10'100;
  // ...a fault came too close to the end...
  in.faults.push_back(FaultRecord{in.end_ms - 30'000, FaultKind::kHeal, {}, ""});
  CHECK(judge_notifications(in).empty());
  in.faults.clear();
  // ...or a node crashed after the run began (the worker: its notice may have died with
  // it; another: the notification's own at-most-once run may have been lost with it).
  in.faults.push_back(FaultRecord{20'000, FaultKind::kCrash, {0}, ""});
  CHECK(judge_notifications(in).empty());
  in.faults = {FaultRecord{20'000, FaultKind::kCrash, {1}, ""}};
  CHECK(judge_notifications(in).empty());
  // A crash before the run does not excuse it.
  in.faults = {FaultRecord{5'000, FaultKind::kCrash, {0}, ""}};
  CHECK(kinds(judge_notifications(in)) == std::vector<std::string>{"notify.sent"});
}
