// The replicas' go (docs/firing.md, Preparing ahead, "The replicas' go"), rule by rule,
// through the hand-timed harness (tests/unit/firing_harness.h): a held at-most-once run
// asks the replicas at its instant and starts only with yes from a majority of them.
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // 10 s after the cluster starts

ClusterOptions preparing() {
  ClusterOptions o;
  o.scheduler.prepare_ahead_ms = 5'000;
  return o;
}

// Runs on n3 whenever it can (prepare_origin), so the test knows the worker.
Entry held_on_n3(const std::string& name) {
  Entry e = one_shot(name, kF, Semantics::at_most_once);
  e.origin = "n3";
  e.prefer_origin = true;
  return e;
}

size_t yes_from(const Cluster& c, const std::string& replica) {
  size_t n = 0;
  for (const Packet& p : c.sent(replica, "n3", is<GoAnswer>())) {
    for (const auto& item : p.as<GoAnswer>()->items) n += item.verdict == GoVerdict::kYes ? 1 : 0;
  }
  return n;
}

}  // namespace

// Rule: once its instant came (and its owner's go), a held at-most-once run asks every
// replica, and starts only when a majority said yes — not on its owner's go alone.
TEST_CASE("replicas' go: a held at-most-once run starts only with yes from a majority", "[firing][prepare]") {
  Cluster c(preparing());
  const OccurrenceId occ = c.start_entry(held_on_n3("majority-yes"));
  for (const std::string from : {"n1", "n2", "n3"}) c.hold(from, "n3", is<GoAnswer>());
  c.run_until_t(c.t_at("n3", kF) + 1'000);
  INFO(c.dump());
  // The other replicas are asked (n3 answers for itself, without a message: it had no vote
  // of the occurrence here, the round-0 claim having gone to n1 and n2).
  REQUIRE(c.sent("n3", "n1", is<GoAsk>()).size() >= 1);
  REQUIRE(c.sent("n3", "n2", is<GoAsk>()).size() >= 1);
  CHECK(c.sent("n3", "n3", is<GoAsk>()).empty());
  CHECK(c.runs_of(occ).empty());

  // One yes (n1's) is no majority of three.
  REQUIRE(c.deliver("n1", "n3", is<GoAnswer>()) >= 1);
  CHECK(yes_from(c, "n1") >= 1);
  CHECK(c.runs_of(occ).empty());

  // The second makes it.
  REQUIRE(c.deliver("n2", "n3", is<GoAnswer>()) >= 1);
  REQUIRE(c.runs_of(occ).size() == 1);
  CHECK(c.runs_of(occ)[0].node == "n3");
  CHECK(c.runs_of(occ)[0].start_utc >= kF);
}

// Rule: a replica that promised a higher round no longer backs the attempt it accepted
// before: it answers no, and the held run never starts (dropped as soon as the no answers
// leave no majority that could say yes).
TEST_CASE("replicas' go: after promising a higher round a replica says no", "[firing][prepare]") {
  Cluster c(preparing());
  const OccurrenceId occ = c.start_entry(held_on_n3("promised-away"));
  c.run_until_t(c.t_at("n3", kF) - 1'000);  // accepted and held at n3, before its instant
  REQUIRE(c.runs_of(occ).empty());
  // n1 and n2 promise round 5 to n2 before the instant (as to a master taking over).
  for (const std::string replica : {"n1", "n2"}) {
    Claim prepare;
    prepare.volume = kVolume;
    prepare.occ = occ;
    prepare.claimant = schedule::ProcessId{"n2", c.boot("n2")};
    prepare.fire_utc_ms = kF;
    prepare.kind = ClaimKind::kPrepare;
    prepare.round = 5;
    c.inject("n2", replica, prepare);
  }
  c.run_until_t(c.t_at("n3", kF) - 900);
  size_t promised = 0;
  for (const Packet& p : c.sent("*", "n2", is<ClaimReply>())) {
    const ClaimReply* r = p.as<ClaimReply>();
    if (r->kind != ClaimKind::kPrepare || r->outcome != ClaimOutcome::kGranted) continue;
    ++promised;
    CHECK_FALSE(r->went);  // neither had said yes to anything of o
  }
  CHECK(promised == 2);
  c.unhold();
  c.run_until_t(c.t_at("n3", kF) + 1'000);
  INFO(c.dump());
  CHECK(c.sent("n3", "*", is<GoAsk>()).size() >= 2);  // n1 and n2, asked at the instant
  CHECK(yes_from(c, "n1") == 0);
  CHECK(yes_from(c, "n2") == 0);
  CHECK(c.runs_of(occ).empty());
  // Both answered no: no majority is left that could say yes, so n3 drops the run at once
  // (recorded revoked), not at its go_by.
  CHECK(c.sched("n3").counters().prepared_no_replicas_go == 1);
  CHECK(c.sched("n3").held_invocations() == 0);
}

// Rule: an owner whose prepared at-most-once attempt's worker died before F — its go sent,
// so it cannot fence the attempt, and the worker answers no revoke — takes the occurrence
// over itself in a higher round.  Its promise majority never said yes, so the held run can
// never start: it counts it revoked and runs the occurrence elsewhere, once.
TEST_CASE("replicas' go: an owner whose worker died before F fences by promises", "[firing][prepare]") {
  Cluster c(preparing());
  const OccurrenceId occ = c.start_entry(held_on_n3("worker-died"));
  c.run_until_t(c.t_at("n3", kF) - 200);  // accepted and held at n3
  REQUIRE(c.events(FireEvent::Kind::kAccepted, occ, "n3").size() == 1);
  c.crash("n3");
  c.run_until_t(c.t_at("n1", kF) + 500);  // n1's go went out: n3 still looks alive
  REQUIRE(c.sent("n1", "n3", is<schedule::Go>()).size() >= 1);
  CHECK(c.runs_of(occ).empty());
  c.declare_dead("n3");
  c.run_until_t(c.t_at("n1", kF) + 10'000);
  INFO(c.dump());
  REQUIRE(c.runs_of(occ).size() == 1);
  CHECK(c.runs_of(occ)[0].node != "n3");
  CHECK(c.sched("n1").counters().prepared_fenced_by_promises + c.sched("n2").counters().prepared_fenced_by_promises == 1);
  CHECK(c.events(FireEvent::Kind::kLost, occ).empty());
}
