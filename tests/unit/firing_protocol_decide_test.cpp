// The firing protocol's decision rules about someone else's work (docs/firing.md,
// Deciding, steps 1 and 2), rule by rule, through the hand-timed harness
// (tests/unit/firing_harness.h): a closed owner record is adopted; a live owner that
// shows no progress, and a live holder of grants that shows none, are deferred to for a
// bounded time and then taken over through a higher round.
#include <catch2/catch.hpp>

#include "schedule/marks.h"
#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

Entry on_n3(const std::string& name) { return at_most_once_on("n3", name, kF); }


Filter revoke_reply(const std::string& fid, RevokeOutcome outcome) {
  return [fid, outcome](const Packet& p) {
    return p.as<RevokeReply>() != nullptr && p.as<RevokeReply>()->fire_id == fid &&
           p.as<RevokeReply>()->outcome == outcome;
  };
}

// n2 becomes a master beside n1 and decides o for 20 s.  Its takeover round must begin
// after deferring `bound_ms` and within a second of it, having revoked the first
// attempt `fid` at n3, and o must run once, as a new attempt.  Returns that run.
Run takeover_after_deferral(Cluster& c, const OccurrenceId& occ, const std::string& fid, int64_t bound_ms) {
  c.set_master("n2", true);
  const int64_t deferring_from = c.now();
  c.run_for(20'000);
  INFO(c.dump());
  const auto prepares = c.sent("n2", "*", claims(ClaimKind::kPrepare));
  REQUIRE_FALSE(prepares.empty());
  CHECK(prepares.front().as<Claim>()->round >= 1);
  CHECK(prepares.front().sent_t >= deferring_from + bound_ms);
  CHECK(prepares.front().sent_t <= deferring_from + bound_ms + 1'000);
  CHECK_FALSE(c.sent("n3", "n2", revoke_reply(fid, RevokeOutcome::kRevoked)).empty());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].inv.fire_id != fid);
  return runs[0];
}

}  // namespace

// Rule (deciding, step 1): someone else's closed owner record (missed, lost, skipped) is
// adopted as this node's outcome.  Here n1, the master, withholds o (it sees no quorum)
// and then finishes it as skipped when a delete reaches it alone; n2, master after n1
// crashed, still holds the entry and a quorum and would run o, but the record is the
// decision: nothing is claimed, nothing runs.
TEST_CASE("firing decide: a closed owner record of another node is adopted, not decided again", "[firing][decide]") {
  Cluster c;
  const Entry e = on_n3("adopt-skipped");
  const OccurrenceId occ = occ_of(e, kF);
  c.make_master("n1");
  c.put_entry(e);
  for (const char* peer : {"n2", "n3"}) c.change_view("n1", peer, [](ObservedView& v) { v.reachable = false; });
  c.run_until_t(c.t_at("n1", kF) + 1'000);
  REQUIRE(c.sent("n1", "*", is<Claim>()).empty());  // withheld
  c.delete_entry_on(schedule::entry_key(e), {"n1"});  // a delete that reached n1 alone
  c.run_for(100);
  const auto records = c.owner_records("n2", occ);
  REQUIRE(records.count("n1") == 1);
  REQUIRE(records.at("n1").outcome == OwnerOutcome::kSkipped);
  REQUIRE(c.store_value("n2", schedule::entry_key(e)) == schedule::encode_entry(e));

  c.crash("n1");
  c.declare_dead("n1");
  c.make_master("n2");
  c.run_for(60'000);
  INFO(c.dump());
  CHECK(c.runs_of(occ).empty());
  CHECK(c.sent("n2", "*", is<Claim>()).empty());
  CHECK(c.sent("n2", "*", is<Dispatch>()).empty());
  CHECK(c.owner_records("n2", occ).count("n2") == 0);  // adopted: no decision of its own
}

// Rule (deciding, step 1, bounded deferral): an at-most-once occurrence whose owner is
// alive (not suspect) yet shows no progress — no live worker holds an accepted attempt —
// is deferred to for accept_timeout + claim_give_up, then taken over through a higher
// round, which resolves the owner's attempt (here: revoked, it never arrived) before it
// dispatches a new one.  The owner's late dispatch is refused; o runs once.
TEST_CASE("firing decide: a live owner without progress is taken over after a bounded deferral", "[firing][decide]") {
  MarksOn marks;
  Cluster c(at_instant());
  const Entry e = on_n3("owner-stalled");
  const OccurrenceId occ = occ_of(e, kF);
  c.make_master("n1");
  c.put_entry(e);
  c.hold("n1", "n3", is<Dispatch>());
  c.run_until_t(c.t_at("n1", kF) + 100);
  const auto held = c.in_flight("n1", "n3", is<Dispatch>());
  REQUIRE(held.size() == 1);
  const std::string fid = held[0].as<Dispatch>()->fire_id;
  REQUIRE(c.owner_records("n2", occ).count("n1") == 1);
  // n1 stays up and looks healthy to everyone, but nothing it sends other than its store
  // pushes arrives (its revoke of the lost attempt included): a stalled owner.
  c.hold("n1", "*", messages());
  takeover_after_deferral(c, occ, fid, e.accept_timeout_ms + SchedulerOptions{}.claim_give_up_ms);
  CHECK(schedule::mark_hits(schedule::Mark::kOwnerStalledTakeover) >= 1);
  CHECK(c.sched("n2").counters().owned_takeover == 1);

  c.unhold();  // the stalled owner's dispatch arrives at last
  c.run_for(10'000);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.duplicate_runs().empty());
}

// Rule (deciding, step 2, stalled holder): replicas granted an at-most-once occurrence to
// a live process that never shows progress (no owner record: here it cannot hear their
// grants).  The master defers to that holder for claim_give_up and then goes to a higher
// round — not to round 0, which would meet the same holds — resolves the holder's
// accepted attempt, and runs o once.
TEST_CASE("firing decide: a live holder of grants without progress is escalated to a higher round",
          "[firing][decide]") {
  MarksOn marks;
  Cluster c(at_instant());
  const Entry e = on_n3("holder-stalled");
  const OccurrenceId occ = occ_of(e, kF);
  c.make_master("n1");
  c.put_entry(e);
  c.cut("n2", "n1", messages());  // n1 never hears the replicas' answers
  c.cut("n3", "n1", messages());
  // Long enough for n1's claim to widen to every replica (silence widens it at a retry).
  c.run_until_t(c.t_at("n1", kF) + 2'000);
  REQUIRE(c.vote("n2", occ).has_value());
  REQUIRE(c.vote("n3", occ).has_value());
  const std::string fid = c.vote("n3", occ)->accepted.fire_id;  // the holder's attempt
  CHECK(c.owner_records("n2", occ).empty());
  CHECK(c.sent("n1", "*", is<Dispatch>()).empty());

  // n2 sees n1 busy: the holder's attempt revoked at n3, it runs the new one itself.
  c.change_view("n2", "n1", [](ObservedView& v) { v.load = 100; });
  const Run run = takeover_after_deferral(c, occ, fid, SchedulerOptions{}.claim_give_up_ms);
  CHECK(run.node == "n2");
  CHECK(c.sent("n2", "*", claims(ClaimKind::kClaim)).empty());  // never a round-0 claim of its own
  CHECK(schedule::mark_hits(schedule::Mark::kClaimHolderStalledTakeover) >= 1);

  c.heal();
  c.run_for(10'000);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.duplicate_runs().empty());
}
