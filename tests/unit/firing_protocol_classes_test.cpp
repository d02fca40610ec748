// The three failure classes found from outside in the firing core, each as a hand-timed
// case through the harness (tests/unit/firing_harness.h), with the rule that closes it
// (docs/firing.md) and, where the rule is a setting, a twin case showing the failure
// without it.  Their scenarios are tests/sim/gray_failure_next_master.toml,
// misfire_open_claim_partition.toml and restart_stale_decision.toml.
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

// Five replicas.  n1, the master, crashes at the fire time; n2, next by priority and
// master in every view after it, loses everything it sends to n3 and n4 (it still looks
// alive to them: relays).  n3, n4 and n5 are up and connected: a majority.
OccurrenceId gray_failure(Cluster& c, uint32_t backup_ranks) {
  const Entry e = one_shot("gray", kF, Semantics::at_most_once);
  c.make_master("n1");
  c.put_entry(e);
  c.cut("n2", "n3");
  c.cut("n2", "n4");
  c.run_until_t(c.t_at("n1", kF) - 1);
  c.crash("n1");
  c.declare_dead("n1");
  c.make_master("n2");
  if (backup_ranks > 0) {
    c.set_backup_rank("n3", 1);
    c.set_backup_rank("n4", 2);
    c.set_backup_rank("n5", 3);
  }
  return occ_of(e, kF);
}

ClusterOptions five_nodes() {
  ClusterOptions o;
  o.nodes = 5;
  return o;
}

}  // namespace

// Rule (backup deciders): a replica that is not the master decides a due occurrence the
// master shows no progress on (no owner or worker record) after its rank times
// backup_step; a claim stuck behind a live holder without progress for claim_give_up goes
// to a higher round.  So the connected majority runs it, once, within a bound — and
// without backups nobody does (the class as it was found).
TEST_CASE("firing classes: a gray next master does not starve a connected majority", "[firing][classes]") {
  Cluster c(five_nodes());
  const OccurrenceId occ = gray_failure(c, 3);
  c.run_until_t(c.t_at("n3", kF) + 30'000);
  INFO(c.dump());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].node != "n1");
  CHECK(runs[0].start_utc >= kF);
  // The bound: the first backup after backup_step, a claim and a stalled holder's
  // claim_give_up, a round to take over, revoking what the stuck master's claim named.
  const SchedulerOptions defaults;
  CHECK(runs[0].start_t <= c.t_at("n3", kF) + defaults.backup_step_ms + 2 * defaults.claim_give_up_ms +
                               defaults.revoke_retry_ms + 2'000);
  c.run_for(60'000);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.duplicate_runs().empty());
}

TEST_CASE("firing classes: without backups the gray next master starves the majority", "[firing][classes]") {
  Cluster c(five_nodes());
  const OccurrenceId occ = gray_failure(c, 0);
  c.run_until_t(c.t_at("n3", kF) + 30'000);
  CHECK(c.runs_of(occ).empty());
}

// Rule (misfire at decision): the misfire policy judges an occurrence where its run is
// decided — when a claim wins — against its due time.  A claim that stayed open through
// an outage longer than the misfire threshold completes into `skipped` under `skip`
// (and into a run under `fire_all`): one outage, one outcome.
TEST_CASE("firing classes: a claim open through an outage does not bypass the misfire policy", "[firing][classes]") {
  for (const auto policy : {schedule::MisfirePolicy::skip, schedule::MisfirePolicy::fire_all}) {
    Cluster c;
    Entry e = one_shot("open-claim", kF, Semantics::at_most_once);
    e.misfire = policy;
    c.make_master("n1");
    c.put_entry(e);
    const OccurrenceId occ = occ_of(e, kF);
    // n1 is cut off from the moment it claims: its claims wait in the network.
    c.hold("n1", "n2");
    c.hold("n1", "n3");
    c.run_until_t(c.t_at("n1", kF) + 45'000);  // beyond the 30 s misfire threshold
    REQUIRE(c.runs_of(occ).empty());
    c.unhold();
    c.run_for(30'000);
    INFO("policy " << static_cast<int>(policy) << "\n" << c.dump());
    if (policy == schedule::MisfirePolicy::skip) {
      CHECK(c.runs_of(occ).empty());
      const auto owners = c.owner_records("n2", occ);
      REQUIRE(owners.count("n1") == 1);
      CHECK(owners.at("n1").outcome == OwnerOutcome::kSkipped);
    } else {
      CHECK(c.runs_of(occ).size() == 1);
    }
  }
}

// Rule (records decided on as a batch): what a reconciliation brings is applied whole
// before anything is decided.  n2 owned the occurrence and crashed; n3 ran it; n1, down
// meanwhile, comes back with neither record and gets both in one anti-entropy session.
// Fed one by one, n2's open owner record (gone owner: at-least-once takeover) was acted
// on before n3's completion, and n1 ran the occurrence again.
TEST_CASE("firing classes: a restarted node decides on what it reconciled as a whole", "[firing][classes]") {
  Cluster c;
  Entry e = one_shot("restart", kF, Semantics::at_least_once);
  e.origin = "n3";
  e.prefer_origin = true;
  c.make_master("n2");
  c.put_entry(e);
  const OccurrenceId occ = occ_of(e, kF);
  c.crash("n1");
  c.declare_dead("n1");
  c.run_until_t(c.t_at("n2", kF) + 1'000);
  REQUIRE(c.runs_of(occ).size() == 1);
  c.complete("n3");
  c.run_for(1'000);
  c.crash("n2");
  c.declare_dead("n2");
  c.restart("n1", Disk::kKeep, true);
  c.recover("n1");
  c.make_master("n1");
  c.resync("n1");
  c.run_for(30'000);
  INFO(c.dump());
  CHECK(c.runs_of(occ).size() == 1);
}

// Rule (deletes): a claim carries the entry's version; a replica holding a newer one
// (the delete's tombstone) refuses it, and a replica that granted the claim before the
// delete reached it holds back its acknowledgement of the delete for the claim lease.  A
// claimant dispatches only on grants of its current lease.  So once a majority has
// acknowledged the delete, no claim of the entry is dispatched.
TEST_CASE("firing classes: a delete acknowledged by a majority stops claims of the entry", "[firing][classes]") {
  for (const int64_t release_after_ms : {int64_t{1'000}, int64_t{3'000}}) {
    Cluster c(at_instant());
    const Entry e = one_shot("deleted", kF, Semantics::at_most_once);
    c.make_master("n1");
    c.put_entry(e);
    const OccurrenceId occ = occ_of(e, kF);
    c.hold("n2", "n1", is<ClaimReply>());  // n2 grants; n1 hears of it late
    c.hold("n1", "n3");                    // n1 is cut off from n3
    c.run_until_t(c.t_at("n1", kF) + 500);    // past the first retry: asked n2 too
    REQUIRE(c.vote("n2", occ).has_value());  // granted before the delete reached n2
    c.delete_entry_on(occ.entry_key, {"n2", "n3"});
    const int64_t deleted_t = c.now();
    const int64_t hold_until = c.sched("n2").ack_hold_until_mono(kVolume, occ.entry_key);
    CHECK(hold_until > deleted_t);  // n2 may not acknowledge the delete yet
    CHECK(c.sched("n3").ack_hold_until_mono(kVolume, occ.entry_key) <= deleted_t);  // n3 granted nothing
    c.advance(release_after_ms);
    c.unhold();
    c.run_for(20'000);
    INFO("released after " << release_after_ms << " ms\n" << c.dump());
    const auto dispatched = c.events(FireEvent::Kind::kDispatched, occ, "n1");
    if (release_after_ms < SchedulerOptions{}.claim_lease_ms) {
      // Within the lease: the grant counts and n1 dispatches — before n2's hold ends, so
      // before the delete could have been acknowledged by a majority (n2 and n3).
      REQUIRE(dispatched.size() == 1);
      CHECK(dispatched[0].t < hold_until);
    } else {
      // After the lease: n1 asks n2 again, n2 now holds the tombstone and refuses.
      CHECK(dispatched.empty());
      CHECK(c.runs_of(occ).empty());
      CHECK(c.sched("n2").counters().superseded_claims_refused >= 1);
    }
  }
}
