// Retries (docs/firing.md, Retries), rule by rule, through the hand-timed harness
// (tests/unit/firing_harness.h): a run that fails definitely is followed by the next after
// the back-off, up to retry.attempts runs; at-most-once never retries an unknown outcome;
// a takeover between two runs continues the chain; a replica that holds the record that
// an occurrence's runs are over refuses claims of it.
#include <catch2/catch.hpp>
#include <regex>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

Entry retrying(const std::string& name, Semantics semantics, uint32_t attempts, int64_t backoff_ms) {
  Entry e = at_most_once_on("n3", name, kF);
  e.semantics = semantics;
  e.retry.attempts = attempts;
  e.retry.backoff_ms = backoff_ms;
  e.retry.max_backoff_ms = 60'000;
  return e;
}

// The run of occ that has not finished; throws when there is none or several.
const Run& running(const Cluster& c, const OccurrenceId& occ) {
  const Run* found = nullptr;
  for (const Run& r : c.runs()) {
    if (r.inv.scheduled_utc_ms != occ.scheduled_utc_ms || r.finished) continue;
    if (found != nullptr) throw HarnessError("two runs of one occurrence at once");
    found = &r;
  }
  if (found == nullptr) throw HarnessError("no run of the occurrence is going on");
  return *found;
}

// The master n1 crashes and is declared dead; n2 becomes master, and 30 s pass.
void n1_dies_n2_masters(Cluster& c) {
  c.crash("n1");
  c.declare_dead("n1");
  c.make_master("n2");
  c.run_for(30'000);
}

}  // namespace

// Rule: a run that ends in a definite failure is followed by the next run after
// backoff x 2^(n-1), each a new attempt (a higher number, a new fire id) that starts only
// after the one before failed, until retry.attempts runs; a success ends the chain.
TEST_CASE("firing retry: a failed run is retried after the back-off, doubling, until one succeeds", "[firing][retry]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  Cluster c;
  const Entry e = retrying("retry-chain", semantics, 4, 1'000);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.runs_of(occ).size() == 1);

  // Run 1 fails: run 2 after 1 s, not before.
  const std::string worker1 = running(c, occ).node;
  REQUIRE(c.complete(worker1, false) == 1);
  const int64_t failed1 = c.now();
  c.run_for(900);
  CHECK(c.runs_of(occ).size() == 1);
  c.run_for(1'000);
  INFO(c.dump());
  REQUIRE(c.runs_of(occ).size() == 2);
  const Run second = running(c, occ);
  CHECK(second.start_t >= failed1 + 1'000);
  CHECK(second.inv.attempt > c.runs_of(occ)[0].inv.attempt);
  CHECK(second.inv.fire_id != c.runs_of(occ)[0].inv.fire_id);
  CHECK_FALSE(second.inv.possible_duplicate);

  // Run 2 fails: run 3 after 2 s (doubled).
  REQUIRE(c.complete(second.node, false) == 1);
  const int64_t failed2 = c.now();
  c.run_for(1'900);
  CHECK(c.runs_of(occ).size() == 2);
  c.run_for(1'000);
  REQUIRE(c.runs_of(occ).size() == 3);
  CHECK(running(c, occ).start_t >= failed2 + 2'000);

  // Run 3 succeeds: no fourth, though attempts allow one.
  REQUIRE(c.complete(running(c, occ).node, true) == 1);
  c.run_for(60'000);
  CHECK(c.runs_of(occ).size() == 3);
  const auto scheduled = c.events(FireEvent::Kind::kRetryScheduled, occ, "n1");
  REQUIRE(scheduled.size() == 2);
  // The history line says when the next run is due, as a time a reader can read.
  CHECK(std::regex_match(scheduled[0].ev.detail,
                         std::regex(R"(run 1 of 4 failed; next at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)")));
  CHECK(c.sched("n1").counters().retried == 2);
}

// Rule: retry.attempts bounds the runs: after the last one fails, nothing follows.
TEST_CASE("firing retry: the attempts are the runs in all", "[firing][retry]") {
  Cluster c;
  const Entry e = retrying("retry-bounded", Semantics::at_most_once, 2, 500);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.complete(running(c, occ).node, false) == 1);
  c.run_for(5'000);
  REQUIRE(c.runs_of(occ).size() == 2);
  REQUIRE(c.complete(running(c, occ).node, false) == 1);
  c.run_for(120'000);
  INFO(c.dump());
  CHECK(c.runs_of(occ).size() == 2);
  CHECK(c.events(FireEvent::Kind::kRetryScheduled, occ).size() == 1);
}

// Rule: at-most-once retries only after a definite failure report: a run whose worker
// died while running has an unknown outcome (lost), and is never retried.
TEST_CASE("firing retry: at-most-once never retries a run whose outcome is unknown", "[firing][retry]") {
  Cluster c;
  const Entry e = retrying("retry-lost", Semantics::at_most_once, 3, 500);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(running(c, occ).node == "n3");
  c.crash("n3");
  c.declare_dead("n3");
  c.run_for(60'000);
  INFO(c.dump());
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.events(FireEvent::Kind::kLost, occ, "n1").size() == 1);
  CHECK(c.events(FireEvent::Kind::kRetryScheduled, occ).empty());
}

// Rule: the chain lives in the worker records every replica holds, so a master that takes
// o over between two runs (its owner vanished during the back-off) starts the next run
// when it is due — once, and not before the back-off.
TEST_CASE("firing retry: a takeover during the back-off continues the chain", "[firing][retry]") {
  Cluster c;
  const Entry e = retrying("retry-takeover", Semantics::at_most_once, 3, 8'000);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.complete(running(c, occ).node, false) == 1);
  const int64_t failed = c.now();
  c.run_for(100);  // the worker record reaches every replica
  c.crash("n1");
  c.suspect("n1");
  c.set_master("n2", true);
  c.run_for(30'000);
  INFO(c.dump());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].start_t >= failed + 8'000);
  CHECK(c.sched("n2").counters().owned_takeover == 1);
  REQUIRE(c.complete(runs[1].node, true) == 1);
  c.run_for(60'000);
  CHECK(c.runs_of(occ).size() == 2);
}

// Rule: an attempt carries its run number in the accepted value (AttemptInfo::run), so a
// master that takes o over knows from a majority's promises which run a retry attempt was,
// though the worker record of the failed run before it never reached it: the next run it
// dispatches keeps that number (tests/sim/regress_retries_seed_1057.toml).
TEST_CASE("firing retry: a takeover that learns a retry attempt from the votes keeps its run number", "[firing][retry]") {
  Cluster c(at_instant());
  const Entry e = retrying("retry-votes", Semantics::at_most_once, 2, 1'000);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(running(c, occ).node == "n3");
  c.hold("n1", "n2", pushes());  // n2 hears no record of o
  c.hold("n3", "n2", pushes());
  c.cut("n1", "n3", is<Dispatch>());  // run 2's dispatch never reaches its worker
  REQUIRE(c.complete("n3", false) == 1);
  c.run_for(1'500);  // the back-off passes: n1 proposes run 2, and a majority accepts it
  REQUIRE(c.runs_of(occ).size() == 1);
  const auto vote = c.vote("n2", occ);
  REQUIRE(vote.has_value());
  REQUIRE(vote->has_accepted);
  CHECK(vote->accepted.run == 2);
  REQUIRE(c.worker_records("n2", occ).empty());
  n1_dies_n2_masters(c);
  INFO(c.dump());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].inv.run == 2);
  CHECK(c.sched("n2").counters().owned_takeover == 1);
  // Run 2 fails too: with attempts = 2 the chain is over, and nothing runs again.
  REQUIRE(c.complete(runs[1].node, false) == 1);
  c.unhold();
  c.run_for(60'000);
  CHECK(c.runs_of(occ).size() == 2);
}

// Rule (votes): a replica that holds the record that o's runs are over (it ran; no retry
// follows) refuses a claim of o with kRan, and the claimant stops: nothing runs again.
// Here n2, the next master, never received the records (and holds no vote of o).
TEST_CASE("firing retry: a replica that holds the record that o ran refuses claims of it", "[firing][retry][claims]") {
  Cluster c;
  Entry e = at_most_once_on("n3", "ran-refuses", kF);
  const OccurrenceId occ = occ_of(e, kF);
  c.make_master("n1");
  c.hold("n1", "n2", any());  // n2 hears nothing of o from n1 or n3
  c.hold("n3", "n2", pushes());
  c.put_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.runs_of(occ).size() == 1);
  REQUIRE(c.complete("n3", true) == 1);
  c.run_for(100);
  REQUIRE_FALSE(c.vote("n2", occ).has_value());
  REQUIRE(c.worker_records("n2", occ).empty());
  n1_dies_n2_masters(c);
  INFO(c.dump());
  bool refused_ran = false;
  for (const auto& r : replies(c, "n3", "n2", occ)) refused_ran = refused_ran || r.outcome == ClaimOutcome::kRan;
  CHECK(refused_ran);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.sent("n2", "*", is<Dispatch>()).empty());
}
