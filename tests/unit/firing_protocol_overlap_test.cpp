// overlap = "forbid" in the firing protocol (docs/firing.md, Overlap), rule by rule,
// through the hand-timed harness (tests/unit/firing_harness.h).
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

// Created after the nodes' amnesia horizon (a new cluster starts wiped): a wiped replica
// abstains on forbid claims of an entry due before its horizon.
constexpr int64_t kCreated = kBaseUtc + kStartT + 10'000;
constexpr int64_t kPeriodMs = 2'000;

// An at-most-once entry due every 2 s from its creation, three times.
Entry forbid_entry(schedule::OverlapPolicy overlap = schedule::OverlapPolicy::forbid) {
  Entry e = every("long", kPeriodMs, 3, Semantics::at_most_once);
  e.created_utc_ms = kCreated;
  e.overlap = overlap;
  return e;
}

// A round-0 claim of `occ` by `claimant`'s process, as its scheduler would send it.
Claim claim_of(const Cluster& c, const std::string& claimant, const OccurrenceId& occ, bool forbid_overlap) {
  Claim cl;
  cl.volume = kVolume;
  cl.occ = occ;
  cl.claimant = schedule::ProcessId{claimant, c.boot(claimant)};
  cl.fire_utc_ms = occ.scheduled_utc_ms;
  cl.kind = ClaimKind::kClaim;
  cl.round = 0;
  cl.attempt.attempt = 1;
  cl.attempt.worker = claimant;
  cl.attempt.fire_id = schedule::make_fire_id(kVolume, occ, cl.claimant, 1);
  cl.forbid_overlap = forbid_overlap;
  return cl;
}

// The first replica other than `not_this` holding an accepted vote on occ.
std::string accepting_replica(const Cluster& c, const OccurrenceId& occ, const std::string& not_this) {
  for (const auto& id : c.ids()) {
    if (id == not_this) continue;
    auto v = c.vote(id, occ);
    if (v && v->has_accepted) return id;
  }
  return "";
}

}  // namespace

// Rule (replica side): a replica that accepted an attempt of occurrence k refuses a
// forbid claim of another occurrence of the entry (kOverlap) until it knows that attempt
// ended; then it grants.  A claim without the flag (overlap = allow) is granted as before.
TEST_CASE("firing overlap: a replica refuses a forbid claim while an accepted run of the entry is unfinished",
          "[firing][overlap]") {
  Cluster c;
  const Entry e = forbid_entry();
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + kPeriodMs);
  const OccurrenceId second = occ_of(e, kCreated + 2 * kPeriodMs);
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(first).size() == 1);
  // n3 takes no part from here: the test speaks for it.
  c.set_active("n3", false);
  const std::string r = accepting_replica(c, first, "n3");
  INFO("replica " << r << "\n" << c.dump());
  REQUIRE(!r.empty());
  c.run_until_t(c.t_at("n1", second.scheduled_utc_ms) + 100);

  c.inject("n3", r, claim_of(c, "n3", second, /*forbid_overlap=*/true));
  c.deliver_all();
  auto rs = replies(c, r, "n3", second);
  REQUIRE(rs.size() == 1);
  CHECK(rs.back().outcome == ClaimOutcome::kOverlap);
  CHECK(rs.back().retry_after_ms > 0);
  CHECK_FALSE(c.vote(r, second).has_value());  // a refusal writes no vote

  // The same claim without the flag: granted, as for overlap = allow.
  const OccurrenceId third = occ_of(e, kCreated + 3 * kPeriodMs);
  c.run_until_t(c.t_at("n1", third.scheduled_utc_ms) + 100);
  c.inject("n3", r, claim_of(c, "n3", third, /*forbid_overlap=*/false));
  c.deliver_all();
  rs = replies(c, r, "n3", third);
  REQUIRE(rs.size() == 1);
  CHECK(rs.back().outcome == ClaimOutcome::kGranted);

  // The first run ends and its completion reaches r: r no longer knows of an unfinished run
  // of `first`, but it holds the vote it just gave `third`, which nobody finished.  A forbid
  // claim of `second` is refused for that one; release it (as the claimant would) and ask
  // again: granted.
  const std::string worker = c.runs_of(first).front().node;
  REQUIRE(c.complete(worker) == 1);
  c.run_for(1'000);
  c.inject("n3", r, schedule::Release{kVolume, third, schedule::ProcessId{"n3", c.boot("n3")}});
  c.deliver_all();
  REQUIRE_FALSE(c.vote(r, third).has_value());
  c.inject("n3", r, claim_of(c, "n3", second, /*forbid_overlap=*/true));
  c.deliver_all();
  rs = replies(c, r, "n3", second);
  REQUIRE(rs.size() == 2);
  CHECK(rs.back().outcome == ClaimOutcome::kGranted);
}

// Rule (decider side): an occurrence due while the master knows the entry's previous run
// is running is skipped_overlap, recorded for every replica; the run goes on, nothing
// runs twice at once; the next occurrence due after the run ended runs.
TEST_CASE("firing overlap: an occurrence due while the previous run is running is skipped_overlap",
          "[firing][overlap]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  INFO("semantics " << schedule::to_string(semantics));
  Cluster c;
  Entry e = forbid_entry();
  e.semantics = semantics;
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + kPeriodMs);
  const OccurrenceId second = occ_of(e, kCreated + 2 * kPeriodMs);
  const OccurrenceId third = occ_of(e, kCreated + 3 * kPeriodMs);
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(first).size() == 1);
  c.run_until_t(c.t_at("n1", second.scheduled_utc_ms) + 1'000);
  INFO(c.dump());
  CHECK(c.runs_of(second).empty());
  const auto owners = c.owner_records("n2", second);
  REQUIRE(owners.size() == 1);
  CHECK(owners.begin()->second.outcome == OwnerOutcome::kSkippedOverlap);
  CHECK(c.sched("n1").counters().skipped_overlap == 1);
  CHECK(c.events(FireEvent::Kind::kSkippedOverlap, second).size() == 1);
  // The first run ends before the third is due: the third runs.
  REQUIRE(c.complete(c.runs_of(first).front().node) == 1);
  c.run_until_t(c.t_at("n1", third.scheduled_utc_ms) + 1'000);
  CHECK(c.runs_of(third).size() == 1);
}

// The same entry with overlap = allow: every occurrence runs, whatever is still running.
TEST_CASE("firing overlap: allow runs every occurrence while the previous one runs", "[firing][overlap]") {
  Cluster c;
  const Entry e = forbid_entry(schedule::OverlapPolicy::allow);
  c.make_master("n1");
  c.put_entry(e);
  c.run_until_t(c.t_at("n1", kCreated + 3 * kPeriodMs) + 1'000);
  for (int k = 1; k <= 3; ++k) CHECK(c.runs_of(occ_of(e, kCreated + k * kPeriodMs)).size() == 1);
  CHECK(c.sched("n1").counters().skipped_overlap == 0);
}

// The test switch breaks the replica rule, and the decider rule alone cannot see a run it
// has not heard of: with replication held, a second master of a moment runs the next
// occurrence while the first still runs.  Intact, the votes refuse it.
TEST_CASE("firing overlap: the vote rule is what stops a second run the decider cannot see", "[firing][overlap][safety]") {
  const bool broken = GENERATE(true, false);
  INFO("broken: " << broken);
  ClusterOptions o;
  o.scheduler.test_grant_ignores_overlap = broken;
  Cluster c(o);
  const Entry e = forbid_entry();
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + kPeriodMs);
  const OccurrenceId second = occ_of(e, kCreated + 2 * kPeriodMs);
  // No record travels: no node learns from the store that `first` runs.
  c.hold("*", "*", pushes());
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(first).size() == 1);
  // n2 becomes master instead: it never saw `first`'s records.
  c.set_master("n1", false);
  c.set_master("n2", true);
  c.run_until_t(c.t_at("n2", second.scheduled_utc_ms) + 3'000);
  INFO(c.dump());
  const bool first_running = !c.runs_of(first).front().finished;
  REQUIRE(first_running);
  if (broken) {
    CHECK(c.runs_of(second).size() == 1);
  } else {
    CHECK(c.runs_of(second).empty());
    CHECK(c.sched("n2").counters().overlap_refused + c.sched("n1").counters().overlap_refused +
              c.sched("n3").counters().overlap_refused >=
          1);
  }
}

// Rule (settling): an owner that loses o to a higher round while a new attempt of its is
// still proposing (accepted by its own replica only) never dispatches that attempt: the
// new owner revokes whatever it learns, and sends only its own.  Its replica settles its
// vote on the unsent attempt (Vote::ended), so that vote does not block the entry's next
// occurrences for its lifetime: with the third replica down, the old owner's grant is
// needed, and it gives it though no record of the new owner's run has reached it
// (tests/sim/regress_controls_seed_1962.toml).
TEST_CASE("firing overlap: an owner's own vote on an attempt it never sent does not block the entry",
          "[firing][overlap]") {
  Cluster c(at_instant());
  Entry e = every("settle", 60'000, 3, Semantics::at_most_once);
  e.created_utc_ms = kCreated;
  e.overlap = schedule::OverlapPolicy::forbid;
  e.retry.attempts = 2;
  e.retry.backoff_ms = 1'000;
  e.retry.max_backoff_ms = 1'000;
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + 60'000);
  const OccurrenceId second = occ_of(e, kCreated + 120'000);
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(first).size() == 1);
  // Run 1 fails; then n1 is cut off (what it sends waits) and proposes run 2 to itself only.
  REQUIRE(c.complete(c.runs_of(first).front().node, false) == 1);
  c.run_for(100);
  c.hold("n1", "n2");
  c.hold("n1", "n3");
  c.cut("n2", "n1");  // and nothing reaches n1 (no record of what follows, no vote)
  c.cut("n3", "n1");
  c.run_for(1'500);
  INFO(c.dump());
  auto mine = c.vote("n1", first);
  REQUIRE(mine.has_value());
  REQUIRE(mine->accepted.run == 2);
  CHECK_FALSE(mine->ended);
  // n2 takes o over in round 1 and runs run 2, which succeeds.
  c.suspect("n1");
  c.set_master("n2", true);
  c.run_for(30'000);
  REQUIRE(c.runs_of(first).size() == 2);
  REQUIRE(c.complete(c.runs_of(first).back().node, true) == 1);
  // n1's accepts arrive: refused for the higher round, n1 stands down and settles its vote.
  c.heal();
  c.hold("n2", "n1", pushes());
  c.hold("n3", "n1", pushes());
  c.recover("n1");
  c.set_master("n1", false);
  c.run_for(2'000);
  mine = c.vote("n1", first);
  REQUIRE(mine.has_value());
  INFO("n1's vote: promised " << mine->promised_round << " to " << mine->promised_by.node << ", accepted "
                              << mine->accepted.fire_id << " of " << mine->accepted_by.node);
  CHECK(mine->ended);
  // n3 goes down; n2 alone claims `second`, and needs n1's grant.
  c.crash("n3");
  c.declare_dead("n3");
  c.run_until_t(c.t_at("n2", second.scheduled_utc_ms) + 2'000);
  for (const auto& r : replies(c, "n1", "n2", second)) CHECK(r.outcome != ClaimOutcome::kOverlap);
  CHECK(c.runs_of(second).size() == 1);
}

// A claim's round-0 grant given under an earlier lease (the claim reached the replica late,
// after the claimant had renewed its lease) is not counted toward a majority, but the
// replica holds it, with the claimant's first attempt accepted.  When the claim stops
// without owning, the claimant hands that grant back too: otherwise the vote names an
// attempt nobody will send or end, and refuses every forbid claim of the entry until it
// expires (a real cluster: claims queued during a partition granted after the heal, the
// entry blocked for the occurrence retention; tests/sim/overlap_forbid_claims_after_heal.toml).
TEST_CASE("firing overlap: a stopping claim hands back grants given under an earlier lease", "[firing][overlap]") {
  Cluster c;
  Entry e = every("long", 10'000, 3, Semantics::at_most_once);
  e.created_utc_ms = kCreated;
  e.overlap = schedule::OverlapPolicy::forbid;
  e.misfire_window_ms = 3'000;
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + 10'000);
  const OccurrenceId second = occ_of(e, kCreated + 20'000);
  // n1's claims reach neither peer (n2: its claims only, so a release would pass).
  c.cut("n1", "n2", is<Claim>());
  c.cut("n1", "n3");
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 300);
  // One of n1's claims arrives late at n2, under a lease n1 has renewed since.
  const auto sent = c.sent("n1", "n2", is<Claim>());
  REQUIRE_FALSE(sent.empty());
  Claim late = *sent.front().as<Claim>();
  late.lease -= 1;
  c.heal();  // time stands still while it is delivered: n1 sends nothing new
  c.inject("n1", "n2", late);
  c.deliver_all();
  c.cut("n1", "n2", is<Claim>());
  c.cut("n1", "n3");
  INFO(c.dump());
  auto v = c.vote("n2", first);
  REQUIRE(v.has_value());
  REQUIRE(v->has_accepted);
  REQUIRE(v->accepted_by.node == "n1");
  // n1's claim stops at the close of the misfire window, never owned: n2's grant is handed back.
  c.run_for(e.misfire_window_ms + 1'000);
  REQUIRE(c.runs_of(first).empty());
  CHECK_FALSE(c.sent("n1", "n2", is<schedule::Release>()).empty());
  CHECK_FALSE(c.vote("n2", first).has_value());
  // So the next occurrence runs where it needs n2's grant (n3 down).
  c.heal();
  c.crash("n3");
  c.declare_dead("n3");
  c.run_until_t(c.t_at("n1", second.scheduled_utc_ms) + 2'000);
  for (const auto& r : replies(c, "n2", "n1", second)) CHECK(r.outcome != ClaimOutcome::kOverlap);
  CHECK(c.runs_of(second).size() == 1);
}

namespace {
// overlap = replace: an entry due every 5 s, three times, whose runs outlast the period.
Entry replace_entry(Semantics semantics) {
  Entry e = every("long", 5'000, 3, semantics);
  e.created_utc_ms = kCreated;
  e.overlap = schedule::OverlapPolicy::replace;
  return e;
}

// A replace entry of `semantics` on a cluster mastered by n1, run until 1 s after its
// second occurrence was due, the first having started.
struct ReplaceRun {
  Entry e;
  OccurrenceId first, second;
};
ReplaceRun run_into_second(Cluster& c, Semantics semantics) {
  ReplaceRun r{replace_entry(semantics), {}, {}};
  c.make_master("n1");
  c.put_entry(r.e);
  r.first = occ_of(r.e, kCreated + 5'000);
  r.second = occ_of(r.e, kCreated + 10'000);
  c.run_until_t(c.t_at("n1", r.first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(r.first).size() == 1);
  c.run_until_t(c.t_at("n1", r.second.scheduled_utc_ms) + 1'000);
  return r;
}
}  // namespace

// Rule (decider, worker, replica): the decider of the second occurrence asks the running
// first one to stop; at-most-once, the second starts only once the first is recorded over
// (the votes refuse it before), and the first is recorded replaced — never two at once.
TEST_CASE("firing overlap: replace stops the running run, and at-most-once starts the next only after it ended",
          "[firing][overlap][replace]") {
  Cluster c;
  const auto [e, first, second] = run_into_second(c, Semantics::at_most_once);
  const std::string worker = c.runs_of(first).front().node;
  INFO("worker " << worker << "\n" << c.dump());
  CHECK(c.runs_of(first).front().stop_requested);
  CHECK(c.runs_of(second).empty());  // asked to stop, not stopped yet: nothing beside it
  CHECK(c.sched("n1").counters().replace_asked == 1);
  REQUIRE(c.finish_stopped(worker) == 1);
  c.run_for(2'000);
  CHECK(c.runs_of(second).size() == 1);
  const auto records = c.worker_records(worker, first);
  REQUIRE(records.size() == 1);
  CHECK(records.begin()->second.state == WorkerState::kReplaced);
  CHECK(c.sched(worker).counters().replaced == 1);
  CHECK(c.duplicate_runs().empty());
  // The first occurrence's outcome stands as run (replaced), not missed.
  CHECK(c.events(FireEvent::Kind::kMissed, first).empty());
}

// At-least-once replace is best effort: the next run starts at once, the first is asked
// to stop beside it.
TEST_CASE("firing overlap: replace at-least-once runs the next at once and stops the previous",
          "[firing][overlap][replace]") {
  Cluster c;
  const auto [e, first, second] = run_into_second(c, Semantics::at_least_once);
  INFO(c.dump());
  CHECK(c.runs_of(first).front().stop_requested);
  CHECK(c.runs_of(second).size() == 1);
  CHECK_FALSE(c.runs_of(second).front().stop_requested);
}

// Without replace (forbid), nothing is ever asked to stop.
TEST_CASE("firing overlap: forbid never stops a running run", "[firing][overlap][replace]") {
  Cluster c;
  Entry e = replace_entry(Semantics::at_most_once);
  e.overlap = schedule::OverlapPolicy::forbid;
  c.make_master("n1");
  c.put_entry(e);
  c.run_until_t(c.t_at("n1", kCreated + 10'000) + 1'000);
  REQUIRE(c.runs_of(occ_of(e, kCreated + 5'000)).size() == 1);
  CHECK_FALSE(c.runs_of(occ_of(e, kCreated + 5'000)).front().stop_requested);
  CHECK(c.sched("n1").counters().replace_asked == 0);
}

// Preparing ahead, overlap is judged at the instant (docs/firing.md, Overlap): the second
// occurrence, due 2 s after the first and decided 5 s before its instant, finds the first
// in flight then.  It waits for its instant undecided — no claim goes out before it — and
// the first run ends before it: the second runs.  Judged when decided, it was skipped.
TEST_CASE("firing overlap: preparing ahead, an occurrence is judged at its instant, not when decided",
          "[firing][overlap][prepare]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  const schedule::OverlapPolicy overlap = GENERATE(schedule::OverlapPolicy::forbid, schedule::OverlapPolicy::replace);
  INFO("semantics " << schedule::to_string(semantics) << ", replace " << (overlap == schedule::OverlapPolicy::replace));
  ClusterOptions options;
  options.scheduler.prepare_ahead_ms = 5'000;
  Cluster c(options);
  Entry e = forbid_entry(overlap);
  e.semantics = semantics;
  c.make_master("n1");
  c.put_entry(e);
  const OccurrenceId first = occ_of(e, kCreated + kPeriodMs);
  const OccurrenceId second = occ_of(e, kCreated + 2 * kPeriodMs);
  c.run_until_t(c.t_at("n1", first.scheduled_utc_ms) + 500);
  REQUIRE(c.runs_of(first).size() == 1);
  INFO(c.dump());
  for (const Packet& p : c.sent("n1", "*", is<Claim>())) {
    if (p.as<Claim>()->occ == second) FAIL("second claimed before its instant");
  }
  CHECK(c.sched("n1").counters().skipped_overlap == 0);
  REQUIRE(c.complete(c.runs_of(first).front().node) == 1);
  c.run_until_t(c.t_at("n1", second.scheduled_utc_ms) + 1'000);
  CHECK(c.runs_of(second).size() == 1);
  CHECK(c.events(FireEvent::Kind::kSkippedOverlap, second).empty());
  CHECK(c.sched("n1").counters().replace_asked == 0);
  CHECK_FALSE(c.runs_of(first).front().stop_requested);
  CHECK(c.duplicate_runs().empty());
}
