// restart.rerun judged on hand-made records: it bites on a run the restarted node
// decided of an occurrence a majority held as completed, and spares the others.
#include <catch2/catch.hpp>

#include "sim/restart_checker.h"

using namespace caesium::sim;

namespace {

RestartRules rules(const std::string& decided_by, const std::string& ran_on, int64_t start_ms,
                   int64_t decided_ms = 177'010) {
  RestartRules r;
  const RestartRules::Occ occ{"v1", "e/caesium/schedule/x", 1767225680000};
  r.restarts.push_back({"n1", 177'000, {occ}});
  r.runs.push_back({occ, 95'000, "n2", "n2", "f0", false, true, 94'990});  // the original run, before
  r.runs.push_back({occ, start_ms, ran_on, decided_by, "f1", true, true, decided_by.empty() ? -1 : decided_ms});
  return r;
}

}  // namespace

TEST_CASE("restart.rerun bites on a run the restarted node decided", "[sim]") {
  auto v = judge_reruns(rules("n1", "n2", 177'022));
  REQUIRE(v.size() == 1);
  CHECK(v[0].invariant == "restart.rerun");
  CHECK(v[0].node == "n1");
  CHECK(v[0].detail.find("fire id f1, flagged") != std::string::npos);
  // Dispatch unknown: a run on the restarted node itself counts.
  CHECK(judge_reruns(rules("", "n1", 177'022)).size() == 1);
  // Decided by another node: not the restarted node's stale decision.
  CHECK(judge_reruns(rules("n3", "n1", 177'022)).empty());
  CHECK(judge_reruns(rules("", "n2", 177'022)).empty());
  // Before the restart: not a rerun by it.
  CHECK(judge_reruns(rules("n1", "n2", 176'000, 175'990)).empty());
  // Started after the restart, but dispatched by the node's previous life (a prepared run
  // its worker held): no decision from stale state.
  CHECK(judge_reruns(rules("n1", "n2", 180'704, 61'029)).empty());
  // Dispatched at the restart's instant: by the new process.
  CHECK(judge_reruns(rules("n1", "n2", 177'022, 177'000)).size() == 1);
  // An occurrence the majority did not hold as completed.
  auto open = rules("n1", "n2", 177'022);
  open.restarts[0].completed.clear();
  CHECK(judge_reruns(open).empty());
}
