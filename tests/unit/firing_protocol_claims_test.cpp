// The firing protocol's claims and votes (docs/firing.md, Deciding), rule by rule,
// through the hand-timed harness (tests/unit/firing_harness.h).
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

bool any_outcome(const std::vector<ClaimReply>& rs, ClaimOutcome outcome) {
  return std::any_of(rs.begin(), rs.end(), [&](const ClaimReply& r) { return r.outcome == outcome; });
}

// Two masters of a moment, n1 and n2, claim a new at-most-once occurrence at its fire time.
// The (observer, peer) pairs are heard through relays only (which steers the thrifty
// claims), and every message to `held_to` ("*": to anyone) is held for the test to
// deliver by hand.
OccurrenceId two_masters_claim(Cluster& c, const std::string& name,
                               std::initializer_list<std::pair<const char*, const char*>> indirect,
                               const std::string& held_to) {
  c.set_master("n1", true);
  c.set_master("n2", true);
  for (const auto& [observer, peer] : indirect) c.set_indirect(observer, peer);
  c.hold("*", held_to, messages());
  const Entry e = one_shot(name, kF, Semantics::at_most_once);
  c.put_entry(e);
  c.advance_until_t(c.t_at("n1", kF));
  return occ_of(e, kF);
}

}  // namespace

// Rule: a replica grants round 0 of an occurrence to the first claimant only, and
// durably: the vote is on its disk before the grant reply leaves.  A later claimant is
// answered "held", naming the holder; a restart that keeps the disk keeps the vote.
TEST_CASE("firing protocol: a replica grants round 0 once, durably, and names the holder after", "[firing][claims]") {
  Cluster c(at_instant());
  // Each sees the other only through relays, so both thrifty claims ask n3.
  const OccurrenceId occ = two_masters_claim(c, "once", {{"n1", "n2"}, {"n2", "n1"}}, "n3");
  REQUIRE(c.in_flight("n1", "n3", claims(ClaimKind::kClaim)).size() == 1);
  REQUIRE(c.in_flight("n2", "n3", claims(ClaimKind::kClaim)).size() == 1);
  const Packet n2_claim = c.in_flight("n2", "n3", claims(ClaimKind::kClaim)).front();

  // n1's claim first, with n3's storage slow: the vote is written, not yet durable,
  // and the grant waits for it.
  c.set_auto_flush("n3", false);
  REQUIRE(c.deliver("n1", "n3", claims(ClaimKind::kClaim)) == 1);
  REQUIRE(c.vote("n3", occ).has_value());
  CHECK(c.vote("n3", occ)->promised_by.node == "n1");
  CHECK_FALSE(c.vote("n3", occ, /*durable_only=*/true).has_value());
  CHECK(c.in_flight("n3", "n1", is<ClaimReply>()).empty());
  c.flush("n3");
  REQUIRE(c.vote("n3", occ, true).has_value());
  CHECK(c.vote("n3", occ, true)->promised_by == schedule::ProcessId{"n1", c.boot("n1")});
  auto grant = c.in_flight("n3", "n1", is<ClaimReply>());
  REQUIRE(grant.size() == 1);
  CHECK(grant[0].as<ClaimReply>()->outcome == ClaimOutcome::kGranted);
  c.set_auto_flush("n3", true);

  // n2's claim: held by n1.
  REQUIRE(c.deliver("n2", "n3", claims(ClaimKind::kClaim)) == 1);
  auto held = c.in_flight("n3", "n2", is<ClaimReply>());
  REQUIRE(held.size() == 1);
  CHECK(held[0].as<ClaimReply>()->outcome == ClaimOutcome::kHeld);
  CHECK(held[0].as<ClaimReply>()->holder == schedule::ProcessId{"n1", c.boot("n1")});

  // Restarted with its disk, n3 still refuses n2 (the same claim, replayed).
  c.crash("n3");
  c.restart("n3", Disk::kKeep);
  c.inject("n2", "n3", std::get<FireMessage>(n2_claim.body));
  REQUIRE(c.deliver("n2", "n3", claims(ClaimKind::kClaim)) == 1);
  const auto after = replies(c, "n3", "n2", occ);
  REQUIRE(after.size() == 2);
  CHECK(after.back().outcome == ClaimOutcome::kHeld);
  CHECK(after.back().holder.node == "n1");

  c.unhold();
  c.run_for(10'000);
  INFO(c.dump());
  REQUIRE(c.runs_of(occ).size() == 1);
  CHECK(c.owner_records("n3", occ).count("n1") == 1);
  CHECK(c.owner_records("n3", occ).count("n2") == 0);
  CHECK(c.sched("n3").counters().granted == 0);  // the restarted process granted nothing new
}

// Rule: a replica never grants before the occurrence is due by its own clock; it
// answers "not due" with the delay to wait, and the claimant asks again then and wins.
// So a master whose clock runs ahead cannot fire early on its own.
TEST_CASE("firing protocol: a replica whose clock is behind answers not-due, the claimant retries and wins",
          "[firing][claims]") {
  Cluster c;
  c.set_skew("n1", 2'000);  // the master's clock is 2 s ahead
  c.make_master("n1");
  const Entry e = one_shot("not-due", kF, Semantics::at_most_once);
  c.put_entry(e);
  const OccurrenceId occ = occ_of(e, kF);
  c.run_until_t(c.t_at("n1", kF) + 100);
  INFO(c.dump());
  std::vector<ClaimReply> not_due;
  for (const auto& peer : {"n2", "n3"}) {
    for (const auto& r : replies(c, peer, "n1", occ)) {
      if (r.outcome == ClaimOutcome::kNotDue) not_due.push_back(r);
    }
  }
  REQUIRE_FALSE(not_due.empty());
  for (const auto& r : not_due) {
    CHECK(r.retry_after_ms > 0);
    CHECK(r.retry_after_ms <= 2'000);
  }
  CHECK(c.runs_of(occ).empty());
  c.run_until_t(c.t_at("n2", kF) - 1);
  CHECK(c.runs_of(occ).empty());  // not before a majority of clocks read F
  c.run_for(2'000);
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].start_t >= c.t_at("n2", kF));
  CHECK(c.owner_records("n2", occ).count("n1") == 1);
}

// Rule: a claim that names older replica sets for the volume (an older config epoch) is
// answered "stale" by a replica with the newer config, which votes nothing; the claimant
// wins once the newer config reaches it.
TEST_CASE("firing protocol: a claim under an older config with other replica sets is refused as stale",
          "[firing][claims]") {
  Cluster c;
  Topology current = c.topology("n1");
  current.epoch = 2;
  Topology old = current;
  old.epoch = 1;
  old.volumes[kVolume].replicas = {"n1", "n2", "n3", "n4"};  // n1 missed the change that removed n4
  c.set_topology("n1", old);
  c.set_topology("n2", current);
  c.set_topology("n3", current);
  c.make_master("n1");
  const Entry e = one_shot("stale", kF, Semantics::at_most_once);
  c.put_entry(e);
  const OccurrenceId occ = occ_of(e, kF);
  c.run_until_t(c.t_at("n1", kF) + 3'000);
  INFO(c.dump());
  CHECK(any_outcome(replies(c, "n2", "n1", occ), ClaimOutcome::kStale));
  CHECK(c.sched("n2").counters().stale_claims_refused + c.sched("n3").counters().stale_claims_refused >= 1);
  CHECK(c.sched("n1").counters().stale_claims_sent >= 1);
  CHECK_FALSE(c.vote("n2", occ).has_value());
  CHECK_FALSE(c.vote("n3", occ).has_value());
  CHECK(c.sent("n1", "*", is<Dispatch>()).empty());
  CHECK(c.runs_of(occ).empty());

  c.set_topology("n1", current);
  c.run_for(3'000);
  CHECK(c.runs_of(occ).size() == 1);
  CHECK((c.vote("n2", occ).has_value() || c.vote("n3", occ).has_value()));  // voted under the new config
}

// Rule: a replica restarted without its disk abstains on every occurrence due at or
// before its amnesia horizon (start + 2 x max_clock_skew), storing no vote, and votes
// normally on later ones.
TEST_CASE("firing protocol: a wiped replica abstains up to its amnesia horizon and votes after it",
          "[firing][claims][amnesia]") {
  Cluster c(at_instant());
  c.make_master("n1");
  c.run_for(5'000);
  c.restart("n3", Disk::kWipe);
  const int64_t horizon = c.amnesia_horizon("n3");
  CHECK(horizon == c.clock("n3").utc_ms + 2 * SchedulerOptions{}.max_clock_skew_ms);
  c.crash("n2");
  c.declare_dead("n2");  // n1 needs n3's vote
  const Entry before = one_shot("before-horizon", horizon - 500, Semantics::at_most_once);
  const Entry after = one_shot("after-horizon", horizon + 5'000, Semantics::at_most_once);
  c.put_entry(before);
  c.put_entry(after);
  const OccurrenceId a = occ_of(before, horizon - 500), b = occ_of(after, horizon + 5'000);

  c.run_until_t(c.t_at("n1", horizon + 1'000));
  INFO(c.dump());
  CHECK(any_outcome(replies(c, "n3", "n1", a), ClaimOutcome::kAbstain));
  CHECK_FALSE(any_outcome(replies(c, "n3", "n1", a), ClaimOutcome::kGranted));
  CHECK_FALSE(c.vote("n3", a).has_value());
  CHECK(c.runs_of(a).empty());

  c.run_until_t(c.t_at("n1", horizon + 7'000));
  CHECK(any_outcome(replies(c, "n3", "n1", b), ClaimOutcome::kGranted));
  CHECK(c.vote("n3", b, /*durable_only=*/true).has_value());
  CHECK(c.runs_of(b).size() == 1);
  CHECK(c.runs_of(a).empty());
}

// Rule (split vote): two masters of a moment each hold half of a 4-replica volume.  The
// refusals make a majority impossible while each holds half, so neither can win: both
// release their grants and claim again after a backoff (not after claim_give_up), and
// the occurrence runs once.
TEST_CASE("firing protocol: a 2-2 split vote is released by both claimants and runs once", "[firing][claims]") {
  ClusterOptions o = at_instant();
  o.nodes = 4;
  Cluster c(o);
  // Neither claim can be thrifty (too few direct peers): each asks all four.
  const OccurrenceId occ = two_masters_claim(c, "split", {{"n1", "n2"}, {"n1", "n4"}, {"n2", "n1"}, {"n2", "n3"}}, "*");
  REQUIRE(c.in_flight("n1", "*", claims(ClaimKind::kClaim)).size() == 3);
  REQUIRE(c.in_flight("n2", "*", claims(ClaimKind::kClaim)).size() == 3);
  // n3 votes for n1 and n4 for n2 first; then every other claim meets a vote.
  c.deliver("n1", "n3", claims(ClaimKind::kClaim));
  c.deliver("n2", "n4", claims(ClaimKind::kClaim));
  c.deliver("*", "*", claims(ClaimKind::kClaim));
  c.deliver("*", "*", is<ClaimReply>());
  INFO(c.dump());
  CHECK_FALSE(c.sent("n1", "*", is<Release>()).empty());
  CHECK_FALSE(c.sent("n2", "*", is<Release>()).empty());
  CHECK(c.runs_of(occ).empty());

  c.unhold();
  c.run_for(20'000);
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].start_t - c.t_at("n1", kF) < SchedulerOptions{}.claim_give_up_ms);
  CHECK(c.sched("n1").counters().owned_quorum + c.sched("n2").counters().owned_quorum == 1);
}

// Rule (degraded path): an at-least-once occurrence without a reachable quorum is owned
// by the master alone and runs flagged possible_duplicate; so is one whose quorum looks
// reachable but never answers, after claim_give_up, and then on a worker that answered.
TEST_CASE("firing protocol: at-least-once without a quorum fires degraded, flagged", "[firing][claims]") {
  const bool one_way = GENERATE(false, true);
  Cluster c(at_instant());
  c.make_master("n1");
  if (one_way) {
    c.cut("n1", "n2");  // the view still says reachable: one-way links
    c.cut("n1", "n3");
  } else {
    c.declare_dead("n2");
    c.declare_dead("n3");
  }
  const Entry e = one_shot("degraded", kF, Semantics::at_least_once);
  c.put_entry(e);
  const OccurrenceId occ = occ_of(e, kF);
  c.run_until_t(c.t_at("n1", kF) + 10'000);
  INFO("one way: " << one_way << "\n" << c.dump());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].node == "n1");
  CHECK(runs[0].inv.possible_duplicate);
  const auto owners = c.owner_records("n1", occ);
  REQUIRE(owners.count("n1") == 1);
  CHECK(owners.at("n1").path == schedule::FirePath::kDegraded);
  CHECK(c.sched("n1").counters().owned_degraded == 1);
  if (one_way) {
    CHECK(runs[0].start_t - c.t_at("n1", kF) >= SchedulerOptions{}.claim_give_up_ms);
  } else {
    CHECK(c.sent("n1", "*", is<Claim>()).empty());
  }
}

// Rule (withhold): an at-most-once occurrence without a reachable quorum is withheld,
// not fired; it runs if a quorum returns within its misfire window, and is reported
// missed (owner record outcome missed, never run) once the window has passed.
TEST_CASE("firing protocol: at-most-once is withheld without quorum, then runs or is missed", "[firing][misfire]") {
  Cluster c;
  c.make_master("n1");
  c.declare_dead("n2");
  c.declare_dead("n3");
  Entry back = one_shot("quorum-back", kF, Semantics::at_most_once);
  Entry gone = one_shot("quorum-gone", kF + 40'000, Semantics::at_most_once);
  back.misfire_window_ms = gone.misfire_window_ms = 20'000;
  c.put_entry(back);
  c.put_entry(gone);
  const OccurrenceId a = occ_of(back, kF), b = occ_of(gone, kF + 40'000);

  c.run_until_t(c.t_at("n1", kF) + 5'000);
  INFO(c.dump());
  CHECK(c.events(FireEvent::Kind::kWithheld, a, "n1").size() == 1);
  CHECK(c.sent("n1", "*", is<Claim>()).empty());
  CHECK(c.runs_of(a).empty());
  c.recover("n2");
  c.recover("n3");
  c.run_for(2'000);
  REQUIRE(c.runs_of(a).size() == 1);

  c.declare_dead("n2");
  c.declare_dead("n3");
  c.run_until_t(c.t_at("n1", kF + 40'000) + 19'000);
  CHECK(c.events(FireEvent::Kind::kWithheld, b, "n1").size() == 1);
  CHECK(c.events(FireEvent::Kind::kMissed, b).empty());
  c.run_for(3'000);
  CHECK(c.events(FireEvent::Kind::kMissed, b, "n1").size() == 1);
  const auto owners = c.owner_records("n1", b);
  REQUIRE(owners.count("n1") == 1);
  CHECK(owners.at("n1").outcome == OwnerOutcome::kMissed);
  c.recover("n2");
  c.recover("n3");
  c.run_for(10'000);
  CHECK(c.runs_of(b).empty());
}

// Rule (misfire policies): occurrences found later than the misfire threshold when a
// master decides them run by the entry's policy: skip runs none of them, fire_once only
// the most recent, fire_all every one.
TEST_CASE("firing protocol: misfire policies skip, fire_once and fire_all on late occurrences", "[firing][misfire]") {
  const auto policy = GENERATE(schedule::MisfirePolicy::skip, schedule::MisfirePolicy::fire_once,
                               schedule::MisfirePolicy::fire_all);
  ClusterOptions o;
  o.scheduler.misfire_threshold_ms = 5'000;
  Cluster c(o);
  Entry e = every("late", 2'000, 5, Semantics::at_least_once);  // due at start + 2, 4, .. 10 s
  e.misfire = policy;
  c.put_entry(e);
  c.run_for(30'000);  // nobody is master: all five are due and undecided
  CHECK(c.runs().empty());
  c.make_master("n1");
  c.run_for(10'000);
  INFO("policy " << int(policy) << "\n" << c.dump());
  std::vector<int64_t> ran;
  for (const auto& r : c.runs()) ran.push_back(r.inv.scheduled_utc_ms);
  std::sort(ran.begin(), ran.end());
  const int64_t t0 = kBaseUtc + kStartT;
  switch (policy) {
    case schedule::MisfirePolicy::skip:
      CHECK(ran.empty());
      CHECK(c.sched("n1").counters().skipped == 5);
      break;
    case schedule::MisfirePolicy::fire_once:
      CHECK(ran == std::vector<int64_t>{t0 + 10'000});
      break;
    case schedule::MisfirePolicy::fire_all:
      CHECK(ran == std::vector<int64_t>{t0 + 2'000, t0 + 4'000, t0 + 6'000, t0 + 8'000, t0 + 10'000});
      break;
  }
}

// Rule (flow control): a master has at most max_claims_in_flight round-0 claims open; the
// occurrences it decides past that wait, in the order decided, and each claims once an
// earlier claim ends.  Every one runs, once, and no vote is asked twice for it.
TEST_CASE("firing protocol: a master keeps at most max_claims_in_flight claims open, the rest wait in order",
          "[firing][claims]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  ClusterOptions options = at_instant();
  options.scheduler.max_claims_in_flight = 2;
  Cluster c(options);
  c.make_master("n1");
  std::vector<OccurrenceId> occs;
  for (int i = 0; i < 10; ++i) {
    const Entry e = one_shot("flow-" + std::to_string(i), kF + i, semantics);
    c.put_entry(e);
    occs.push_back(occ_of(e, kF + i));
  }
  // Claimed occurrences, in the order their first claim left n1.
  auto claimed = [&] {
    std::vector<OccurrenceId> order;
    for (const auto& p : c.sent("n1", "*", claims(ClaimKind::kClaim))) {
      const OccurrenceId& occ = p.as<Claim>()->occ;
      if (std::find(order.begin(), order.end(), occ) == order.end()) order.push_back(occ);
    }
    return order;
  };

  // Every occurrence is due within 10 ms; no claim is answered within the first 1 ms.
  c.advance_until_t(c.t_at("n1", kF + 9));
  INFO(c.dump());
  CHECK(claimed().size() == 2);
  CHECK(c.sched("n1").counters().owned_quorum == 0);

  c.run_for(10'000);
  CHECK(claimed() == occs);  // in the order decided (here: of their fire times)
  for (const auto& occ : occs) CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.sched("n1").counters().owned_quorum == occs.size());
  // Thrifty claims, none asked twice: n1's own vote and one peer's, per occurrence.
  CHECK(c.sent("n1", "*", claims(ClaimKind::kClaim)).size() == 2 * occs.size());
}
