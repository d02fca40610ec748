// The firing protocol's owners and workers (docs/firing.md, Running; Amnesia), rule by
// rule, through the hand-timed harness (tests/unit/firing_harness.h).  Takeovers by a new
// master: firing_protocol_takeover_test.cpp.
#include <catch2/catch.hpp>

#include <functional>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;  // a fire time 10 s after the cluster starts

// An entry whose attempts go to n3 whenever it can run there (prefer_origin), so a test
// knows the first worker without depending on how load is balanced.
Entry on_n3(const std::string& name, Semantics semantics) {
  Entry e = one_shot(name, kF, semantics);
  e.origin = "n3";
  e.prefer_origin = true;
  e.accept_timeout_ms = 2'000;
  return e;
}

std::vector<Packet> dispatches(const Cluster& c, const std::string& from = "*") {
  return c.sent(from, "*", is<Dispatch>());
}

}  // namespace

// Rule: a worker's acceptance is durable before the owner hears of it (the dispatch
// reply) and before the handler starts.
TEST_CASE("firing protocol: a worker accepts durably before it replies and runs", "[firing][owner]") {
  Cluster c(at_instant());
  const Entry e = on_n3("durable-accept", Semantics::at_most_once);
  const OccurrenceId occ = c.start_entry(e);
  c.hold("n1", "n3", is<Dispatch>());
  c.run_until_t(c.t_at("n1", kF) + 100);
  REQUIRE(c.in_flight("n1", "n3", is<Dispatch>()).size() >= 1);

  c.set_auto_flush("n3", false);
  c.deliver("n1", "n3", is<Dispatch>());
  const auto written = c.worker_records("n3", occ);
  REQUIRE(written.size() == 1);
  CHECK(written.begin()->second.state == WorkerState::kAccepted);
  CHECK(c.unflushed("n3") > 0);
  CHECK(c.in_flight("n3", "n1", is<DispatchReply>()).empty());
  CHECK(c.runs_of(occ).empty());

  c.flush("n3");
  const auto reply = c.in_flight("n3", "n1", is<DispatchReply>());
  REQUIRE(reply.size() >= 1);
  CHECK(reply[0].as<DispatchReply>()->outcome == DispatchOutcome::kAccepted);
  CHECK(reply[0].as<DispatchReply>()->worker_boot == c.boot("n3"));
  REQUIRE(c.runs_of(occ).size() == 1);
  CHECK(c.runs_of(occ)[0].node == "n3");
}

// Rule: an at-most-once dispatch that is not accepted within accept_timeout is revoked,
// and the owner runs the occurrence elsewhere only after the worker durably promised it
// never will (kRevoked); while the revoke goes unanswered nothing else is dispatched.
TEST_CASE("firing protocol: at-most-once redispatches only after the revoke is answered", "[firing][owner]") {
  Cluster c;
  const Entry e = on_n3("revoke-first", Semantics::at_most_once);
  const OccurrenceId occ = c.start_entry(e);
  c.cut("n1", "n3", is<Dispatch>());  // the dispatches are lost
  c.hold("n1", "n3", is<Revoke>());   // the revokes wait
  c.run_until_t(c.t_at("n1", kF) + 20'000);
  INFO(c.dump());
  const auto first = dispatches(c, "n1");
  REQUIRE_FALSE(first.empty());
  const std::string fid = first[0].as<Dispatch>()->fire_id;
  for (const auto& d : first) CHECK(d.as<Dispatch>()->fire_id == fid);  // retransmits only
  const auto revokes = c.sent("n1", "n3", is<Revoke>());
  REQUIRE_FALSE(revokes.empty());
  CHECK(revokes[0].as<Revoke>()->fire_id == fid);
  CHECK(revokes[0].sent_t - first[0].sent_t >= e.accept_timeout_ms);
  CHECK(c.runs_of(occ).empty());

  c.unhold();
  c.run_for(5'000);
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].node != "n3");
  CHECK(runs[0].inv.fire_id != fid);
  // The worker's promise, durable in its record, came before the new attempt.
  REQUIRE(c.worker_records("n3", occ).count(fid) == 1);
  CHECK(c.worker_records("n3", occ).at(fid).state == WorkerState::kRevoked);
  uint64_t revoked_at = 0, redispatched_at = 0;
  for (const auto& p : c.sent("n3", "n1", is<RevokeReply>())) {
    if (p.as<RevokeReply>()->outcome == RevokeOutcome::kRevoked && revoked_at == 0) revoked_at = p.id;
  }
  for (const auto& p : dispatches(c, "n1")) {
    if (p.as<Dispatch>()->fire_id != fid && redispatched_at == 0) redispatched_at = p.id;
  }
  REQUIRE(revoked_at != 0);
  REQUIRE(redispatched_at != 0);
  CHECK(revoked_at < redispatched_at);
}

// Rule: a worker that vanishes after accepting leaves an at-most-once occurrence `lost`
// (it may have run), never run again; an at-least-once one is redispatched elsewhere,
// flagged possible_duplicate.
TEST_CASE("firing protocol: a worker that dies while running: at-most-once lost, at-least-once rerun",
          "[firing][owner]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  Cluster c;
  const Entry e = on_n3("worker-dies", semantics);
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.runs_of(occ).size() == 1);
  REQUIRE(c.runs_of(occ)[0].node == "n3");
  c.crash("n3");
  c.declare_dead("n3");
  c.run_for(60'000);
  INFO(c.dump());
  const auto runs = c.runs_of(occ);
  if (semantics == Semantics::at_most_once) {
    CHECK(runs.size() == 1);
    CHECK(c.events(FireEvent::Kind::kLost, occ, "n1").size() == 1);
    REQUIRE(c.owner_records("n1", occ).count("n1") == 1);
    CHECK(c.owner_records("n1", occ).at("n1").outcome == OwnerOutcome::kLost);
    CHECK(dispatches(c, "n1").size() == 1);
  } else {
    REQUIRE(runs.size() == 2);
    CHECK(runs[1].node != "n3");
    CHECK(runs[1].inv.possible_duplicate);
    CHECK(c.events(FireEvent::Kind::kLost, occ).empty());
  }
}

// Rule: at-least-once, a dispatch not accepted within accept_timeout is abandoned and
// the occurrence redispatched elsewhere at once, flagged possible_duplicate (no revoke).
TEST_CASE("firing protocol: at-least-once redispatches after the accept timeout, flagged", "[firing][owner]") {
  Cluster c;
  const Entry e = on_n3("alo-timeout", Semantics::at_least_once);
  const OccurrenceId occ = c.start_entry(e);
  c.cut("n1", "n3", is<Dispatch>());
  c.run_until_t(c.t_at("n1", kF) + 10'000);
  INFO(c.dump());
  const auto sent = dispatches(c, "n1");
  REQUIRE(sent.size() >= 2);
  const Dispatch& first = *sent.front().as<Dispatch>();
  const Packet& second = *std::find_if(sent.begin(), sent.end(), [&](const Packet& p) {
    return p.as<Dispatch>()->fire_id != first.fire_id;
  });
  CHECK(second.sent_t - sent.front().sent_t >= e.accept_timeout_ms);
  CHECK(second.as<Dispatch>()->possible_duplicate);
  CHECK(c.sent("n1", "*", is<Revoke>()).empty());
  const auto runs = c.runs_of(occ);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].node != "n3");
  CHECK(runs[0].inv.possible_duplicate);
}

// Rule: complete_time > 0 (at-least-once): an accepted attempt not completed in time is
// redispatched, flagged possible_duplicate; complete_time = 0: an accepted attempt is
// waited for indefinitely.
TEST_CASE("firing protocol: complete_time redispatches a slow at-least-once run, 0 waits for ever",
          "[firing][owner]") {
  const int64_t complete_time = GENERATE(0, 3'000);
  Cluster c;
  Entry e = on_n3("slow", Semantics::at_least_once);
  e.complete_time_ms = complete_time;
  const OccurrenceId occ = c.start_entry(e);
  c.run_until_t(c.t_at("n1", kF) + 500);
  REQUIRE(c.runs_of(occ).size() == 1);  // n3 runs it and never finishes
  c.run_for(60'000);
  INFO("complete_time " << complete_time << "\n" << c.dump());
  const auto runs = c.runs_of(occ);
  if (complete_time == 0) {
    CHECK(runs.size() == 1);
    CHECK(dispatches(c, "n1").size() == 1);
  } else {
    REQUIRE(runs.size() >= 2);
    CHECK(runs[1].node != "n3");
    CHECK(runs[1].inv.possible_duplicate);
    CHECK(runs[1].start_utc - runs[0].start_utc >= complete_time);
  }
}

// Rule (amnesia, worker side): a node restarted without its disk leaves unanswered an
// at-most-once dispatch issued before its horizon (a previous life may have run it) and
// writes nothing for it; the owner's revoke is answered kUnknown, and the occurrence is
// reported lost, never run.
TEST_CASE("firing protocol: a wiped worker ignores an old at-most-once dispatch and answers its revoke unknown",
          "[firing][owner][amnesia]") {
  Cluster c(at_instant());
  Entry e = on_n3("wiped-worker", Semantics::at_most_once);
  e.accept_timeout_ms = 3'000;
  const OccurrenceId occ = c.start_entry(e);
  c.hold("n1", "n3", is<Dispatch>());
  c.run_until_t(c.t_at("n1", kF) + 100);
  REQUIRE_FALSE(c.in_flight("n1", "n3", is<Dispatch>()).empty());
  const std::string fid = c.in_flight("n1", "n3", is<Dispatch>())[0].as<Dispatch>()->fire_id;
  c.restart("n3", Disk::kWipe);
  c.resync("n3");
  c.unhold();
  c.run_for(20'000);
  INFO(c.dump());
  CHECK(c.sched("n3").counters().dispatches_ignored_after_wipe >= 1);
  CHECK(c.sent("n3", "n1", is<DispatchReply>()).empty());
  CHECK(c.worker_records("n3", occ).count(fid) == 0);
  bool unknown = false;
  for (const auto& p : c.sent("n3", "n1", is<RevokeReply>())) {
    unknown = unknown || p.as<RevokeReply>()->outcome == RevokeOutcome::kUnknown;
  }
  CHECK(unknown);
  CHECK(c.events(FireEvent::Kind::kLost, occ, "n1").size() == 1);
  CHECK(c.runs_of(occ).empty());
}

// Rule: a new attempt goes out under the definition that stands on the owner, and an
// answer that a newer one governs o (a worker's or a replica's `superseded`) makes the
// owner decide o again under that one once its record is here — o is skipped only when
// the newer definition no longer schedules it.  (Each node of the real-process suite
// writes the config's static entries at its first start, so the nodes hold different
// versions of them for the first moments.)  For 0 and 5 s of preparing and both
// semantics: o is owned by n1 and its dispatch to n3 on its way when `change` reaches n2
// and n3 only; n3 refuses the dispatch, n2 and n3 refuse n1's next attempt, and 1 s after
// F nothing ran and nothing was skipped.  Then the record reaches n1 (resync) and `check`
// judges what happened by F + 20 s.
namespace {
void change_reaches_the_others_first(const std::string& name, const std::function<void(Cluster&, const Entry&)>& change,
                                     const std::function<void(Cluster&, const OccurrenceId&)>& check) {
  for (const int64_t prepare_ahead : {int64_t{0}, int64_t{5'000}}) {
    for (const Semantics semantics : {Semantics::at_least_once, Semantics::at_most_once}) {
      INFO("prepare_ahead " << prepare_ahead << " ms, " << schedule::to_string(semantics));
      ClusterOptions options;
      options.scheduler.prepare_ahead_ms = prepare_ahead;
      Cluster c(options);
      const Entry e = on_n3(name, semantics);
      const OccurrenceId occ = c.start_entry(e);
      c.hold("n1", "n3", is<Dispatch>());
      c.run_until_t(c.t_at("n1", kF - prepare_ahead) + 100);
      REQUIRE(c.in_flight("n1", "n3", is<Dispatch>()).size() >= 1);  // o is owned and dispatched
      change(c, e);
      c.unhold();
      c.run_until_t(c.t_at("n1", kF) + 1'000);
      INFO(c.dump());
      CHECK(c.runs_of(occ).empty());
      CHECK(c.events(FireEvent::Kind::kSkipped, occ).empty());  // waiting for the record
      c.resync("n1");
      c.run_until_t(c.t_at("n1", kF) + 20'000);
      check(c, occ);
    }
  }
}
}  // namespace

TEST_CASE("firing protocol: an edit the worker and the replicas hold before the owner runs o under it",
          "[firing][owner]") {
  change_reaches_the_others_first(
      "edited-elsewhere-first",
      [](Cluster& c, const Entry& e) {
        Entry edited = e;  // the same instant, another payload
        edited.payload = "edited";
        c.put_entry_on(edited, {"n2", "n3"});
      },
      [](Cluster& c, const OccurrenceId& occ) {
        const auto runs = c.runs_of(occ);
        REQUIRE(runs.size() == 1);
        CHECK(runs[0].inv.payload == "edited");
        CHECK(c.events(FireEvent::Kind::kSkipped, occ).empty());
      });
}

TEST_CASE("firing protocol: a delete the worker and the replicas hold before the owner skips o", "[firing][owner]") {
  change_reaches_the_others_first(
      "deleted-elsewhere-first",
      [](Cluster& c, const Entry& e) { c.delete_entry_on(schedule::entry_key(e), {"n2", "n3"}); },
      [](Cluster& c, const OccurrenceId& occ) {
        CHECK(c.runs_of(occ).empty());
        CHECK(c.events(FireEvent::Kind::kSkipped, occ, "n1").size() == 1);
      });
}
