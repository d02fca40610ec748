// The firing protocol's takeover rounds (docs/firing.md, Rounds), rule by rule, through
// the hand-timed harness (tests/unit/firing_harness.h).
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

Entry on_n3(const std::string& name) { return at_most_once_on("n3", name, kF); }

// The first packet (in send order) from `from` matching `what`; 0 when none.
uint64_t first_id(const Cluster& c, const std::string& from, const Filter& what) {
  const auto sent = c.sent(from, "*", what);
  return sent.empty() ? 0 : sent.front().id;
}

Filter revoke_of(const std::string& fid) {
  return [fid](const Packet& p) { return p.as<Revoke>() != nullptr && p.as<Revoke>()->fire_id == fid; };
}

// n1 owns the at-most-once occurrence of `e` and dispatched its first attempt to n3,
// which never arrives; then n1 crashes, its peers suspect it, and n2 is the master.
// Returns the first attempt's fire id.
std::string owner_vanishes_after_dispatch(Cluster& c, const Entry& e) {
  c.make_master("n1");
  c.put_entry(e);
  c.hold("n1", "n3", is<Dispatch>());
  c.run_until_t(c.t_at("n1", kF) + 100);
  const auto held = c.in_flight("n1", "n3", is<Dispatch>());
  if (held.empty()) throw HarnessError("n1 dispatched nothing");
  c.crash("n1");
  c.suspect("n1");  // suspect and silent from now: gone after owner_silence_ms
  c.set_master("n2", true);
  return held[0].as<Dispatch>()->fire_id;
}

}  // namespace

// Rule (takeover): when an at-most-once owner vanishes (suspect and silent for
// owner_silence_ms) after dispatching, the next master prepares a higher round, learns
// the accepted attempt from the promises and resolves it at its worker (here: revoked,
// it never arrived) before it dispatches a new attempt; the occurrence runs once, and
// the old dispatch, arriving late, is refused.
TEST_CASE("firing protocol: a takeover revokes the vanished owner's attempt before a new one", "[firing][takeover]") {
  Cluster c(at_instant());
  const Entry e = on_n3("takeover-revoke");
  const OccurrenceId occ = occ_of(e, kF);
  const std::string fid = owner_vanishes_after_dispatch(c, e);
  const int64_t crashed_at = c.now();
  c.run_for(15'000);
  INFO(c.dump());
  const auto prepares = c.sent("n2", "*", claims(ClaimKind::kPrepare));
  REQUIRE_FALSE(prepares.empty());
  CHECK(prepares.front().as<Claim>()->round >= 1);
  CHECK(prepares.front().sent_t - crashed_at >= SchedulerOptions{}.owner_silence_ms);  // not while merely suspect
  const uint64_t revoke = first_id(c, "n2", revoke_of(fid));
  const uint64_t revoked = first_id(c, "n3", [&](const Packet& p) {
    return p.to == "n2" && p.as<RevokeReply>() && p.as<RevokeReply>()->fire_id == fid &&
           p.as<RevokeReply>()->outcome == RevokeOutcome::kRevoked;
  });
  const uint64_t dispatch = first_id(c, "n2", is<Dispatch>());
  REQUIRE(revoke != 0);
  REQUIRE(revoked != 0);
  REQUIRE(dispatch != 0);
  CHECK(revoke < dispatch);
  CHECK(revoked < dispatch);
  REQUIRE(c.runs_of(occ).size() == 1);
  CHECK(c.runs_of(occ)[0].inv.fire_id != fid);
  CHECK(c.sched("n2").counters().owned_takeover == 1);

  c.unhold();  // the vanished owner's dispatch arrives at last
  c.run_for(5'000);
  CHECK(c.runs_of(occ).size() == 1);
}

// Rule (takeover): a takeover that finds the vanished owner's attempt accepted and
// running on a live worker (its revoke answered kAccepted) waits for it, and one that
// meets a replica holding the record that it finished (refused: kRan) is done: neither
// runs a new attempt.
TEST_CASE("firing protocol: a takeover that finds the attempt running or finished runs nothing new",
          "[firing][takeover]") {
  const bool finished = GENERATE(false, true);
  Cluster c;
  const Entry e = on_n3("takeover-running");
  const OccurrenceId occ = c.start_entry(e);
  c.hold("n3", "n2", pushes());  // n2 does not see the worker's records
  c.run_until_t(c.t_at("n1", kF) + 100);
  REQUIRE(c.runs_of(occ).size() == 1);
  const std::string fid = c.runs_of(occ)[0].inv.fire_id;
  if (finished) c.complete("n3");
  c.crash("n1");
  c.suspect("n1");
  c.set_master("n2", true);
  c.run_for(15'000);
  INFO("finished " << finished << "\n" << c.dump());
  CHECK_FALSE(c.sent("n2", "*", claims(ClaimKind::kPrepare)).empty());
  bool answered = false;
  if (finished) {
    // n3 holds the record that o ran: it refuses the round itself (kRan), and n2 asks it
    // for the records instead of resolving the attempt.
    for (const auto& r : replies(c, "n3", "n2", occ)) answered = answered || r.outcome == ClaimOutcome::kRan;
  } else {
    for (const auto& p : c.sent("n3", "n2", is<RevokeReply>())) {
      answered = answered || (p.as<RevokeReply>()->fire_id == fid && p.as<RevokeReply>()->outcome == RevokeOutcome::kAccepted);
    }
  }
  CHECK(answered);
  CHECK(c.sent("n2", "*", is<Dispatch>()).empty());

  if (!finished) c.complete("n3");
  c.unhold();
  c.run_for(60'000);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.sent("n2", "*", is<Dispatch>()).empty());
  CHECK(c.worker_records("n2", occ).at(fid).state == WorkerState::kCompleted);
}

// Rule (takeover of a collided round 0): two claimants of a moment can each hold
// round-0 votes with their own attempt.  A takeover whose promises name both values
// resolves (revokes) both before it proposes a new attempt; the occurrence runs once.
TEST_CASE("firing protocol: a takeover resolves both values accepted in round 0 before running", "[firing][takeover]") {
  Cluster c(at_instant());
  const Entry e = on_n3("two-values");
  const OccurrenceId occ = occ_of(e, kF);
  c.set_master("n1", true);
  c.set_master("n2", true);
  c.set_indirect("n1", "n2");  // n1 claims from n1 and n3
  // n2 is cut off, in and out (its messages and pushes wait): it holds its own round-0
  // vote only.  (A claimant that learns of another's owner record stands down and hands
  // its grants back, so n1's record must not reach n2 either.)
  c.hold("n2", "*", any());
  c.hold("*", "n2", any());
  c.hold("n1", "n3", is<Dispatch>());  // n1's attempt never reaches its worker
  c.put_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 100);
  REQUIRE(c.vote("n2", occ).has_value());
  REQUIRE(c.vote("n3", occ).has_value());
  const std::string x = c.vote("n3", occ)->accepted.fire_id;  // n1's value
  const std::string y = c.vote("n2", occ)->accepted.fire_id;  // n2's value
  REQUIRE(x != y);
  REQUIRE(c.owner_records("n3", occ).count("n1") == 1);

  // n1 dies; n3, the new master, prepares round 1 and hears from n2 alone of the others.
  c.crash("n1");
  c.declare_dead("n1");
  c.set_master("n2", false);
  c.set_master("n3", true);
  c.advance(10);
  REQUIRE(c.deliver("n3", "n2", claims(ClaimKind::kPrepare)) == 1);
  REQUIRE(c.deliver("n2", "n3", [](const Packet& p) {
    return p.as<ClaimReply>() && p.as<ClaimReply>()->kind == ClaimKind::kPrepare;
  }) == 1);
  c.unhold();
  c.run_for(20'000);
  INFO("x " << x << " y " << y << "\n" << c.dump());
  const uint64_t dispatch = first_id(c, "n3", is<Dispatch>());
  const uint64_t revoke_x = first_id(c, "n3", revoke_of(x)), revoke_y = first_id(c, "n3", revoke_of(y));
  REQUIRE(dispatch != 0);
  REQUIRE(revoke_x != 0);
  REQUIRE(revoke_y != 0);
  CHECK(revoke_x < dispatch);
  CHECK(revoke_y < dispatch);
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].inv.fire_id != x);
  CHECK(runs[0].inv.fire_id != y);
}

// Rule (superseded owner): an owner whose accept of a new attempt is refused because a
// replica promised a higher round to another process stops: it dispatches nothing more,
// and the occurrence runs once (the new owner's attempt).
TEST_CASE("firing protocol: an owner superseded by a higher round stops", "[firing][takeover]") {
  Cluster c(at_instant());
  const Entry e = on_n3("superseded");
  const OccurrenceId occ = c.start_entry(e);
  c.cut("n1", "n3", is<Dispatch>());  // n1's attempt is lost; its revoke later is not
  c.run_until_t(c.t_at("n1", kF) + 100);
  const auto first = c.sent("n1", "n3", is<Dispatch>());
  REQUIRE_FALSE(first.empty());
  const std::string fid = first[0].as<Dispatch>()->fire_id;
  // n2 alone believes n1 dead, and takes over as a master of its own.
  c.change_view("n2", "n1", [&](ObservedView& v) {
    v.reachable = false;
    v.suspect = true;
    v.silent_since_t = c.now();
  });
  c.set_master("n2", true);
  c.run_for(30'000);
  INFO(c.dump());
  // n1 revoked its attempt after the accept timeout, proposed another in round 0, and met
  // the higher round.
  bool met_higher_round = false;
  for (const auto& p : c.sent("*", "n1", is<ClaimReply>())) {
    const ClaimReply& r = *p.as<ClaimReply>();
    met_higher_round = met_higher_round ||
                       (r.kind == ClaimKind::kAccept && r.outcome == ClaimOutcome::kHeld && r.promised_round >= 1);
  }
  CHECK_FALSE(c.sent("n1", "*", claims(ClaimKind::kAccept)).empty());
  CHECK(met_higher_round);
  for (const auto& d : c.sent("n1", "*", is<Dispatch>())) CHECK(d.as<Dispatch>()->fire_id == fid);
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].inv.fire_id != fid);
  CHECK(c.sched("n2").counters().owned_takeover == 1);
}

// Rule (dueling prepares): n1 and n2 are both masters of a moment and n3, the third
// replica, is cut off.  Their round-0 claims split (each grants itself, refuses the
// other); each, stuck behind a live holder, prepares round 1 at the same instant, and
// each replica refuses the other's round 1, having promised its own.  A prepare that the
// refusals and the unreachable replicas leave short of a majority backs off, spread by
// node and round, and prepares higher — rather than waiting for n3 until the misfire
// window closes: the connected majority n1 + n2 runs the occurrence, once
// (tests/sim/regress_plain_seed_19078.toml).
TEST_CASE("firing protocol: two prepares of the same round, the third replica cut off, fall apart and run once",
          "[firing][takeover]") {
  MarksOn marks;
  Cluster c;
  c.set_master("n1", true);
  c.set_master("n2", true);
  for (const char* n : {"n1", "n2"}) {
    c.cut(n, "n3");
    c.cut("n3", n);
    c.change_view(n, "n3", [&](ObservedView& v) {
      v.reachable = false;
      v.suspect = true;
      v.silent_since_t = c.now();
    });
  }
  const Entry e = one_shot("duel", kF, Semantics::at_most_once);
  c.put_entry(e);
  const OccurrenceId occ = occ_of(e, kF);
  c.run_until_t(c.t_at("n1", kF) + 60'000);
  INFO(c.dump());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(c.duplicate_runs().empty());
  // It went through the duel: both prepared, and one backed off to prepare higher.
  CHECK(schedule::mark_hits(schedule::Mark::kClaimHolderStalledTakeover) >= 2);
  CHECK(schedule::mark_hits(schedule::Mark::kPrepareDuelBackedOff) >= 1);
  CHECK(runs[0].start_t - c.t_at("n1", kF) < 30'000);
}
