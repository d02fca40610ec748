// Running caps (docs/firing.md, Concurrency caps), rule by rule, through the hand-timed
// harness (tests/unit/firing_harness.h): a worker at its cap refuses a dispatch "busy"
// and never runs it; the owner sends the next attempt to another worker, or waits until
// one has a free slot; nothing is lost, and no node runs more than its cap at once.
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

constexpr int64_t kF = kBaseUtc + kStartT + 10'000;

// The runs of `node` going on now (harness runs end only by complete() or a crash).
size_t running_now(const Cluster& c, const std::string& node) {
  size_t n = 0;
  for (const Run& r : c.runs()) n += r.node == node && !r.finished && !r.crashed ? 1 : 0;
  return n;
}

// Four at-most-once one-shots due at F, all preferring n3 (prefer_origin).
std::vector<Entry> four_on_n3() {
  std::vector<Entry> out;
  for (int i = 0; i < 4; ++i) out.push_back(at_most_once_on("n3", "capped" + std::to_string(i), kF));
  return out;
}

}  // namespace

// Rule (worker): at its cap a worker refuses the dispatch "busy", durably, and never runs
// it. Rule (owner): the next attempt goes to another worker; the busy one is left alone
// for a retry interval.
TEST_CASE("firing caps: a worker at its cap refuses busy, and the owner runs the occurrence elsewhere",
          "[firing][caps]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  INFO("semantics " << schedule::to_string(semantics));
  ClusterOptions options;
  options.scheduler.running_cap = 1;
  Cluster c(options);
  c.make_master("n1");
  std::vector<OccurrenceId> occs;
  for (Entry e : four_on_n3()) {
    e.semantics = semantics;
    c.put_entry(e);
    occs.push_back(occ_of(e, kF));
  }
  c.run_until_t(c.t_at("n1", kF) + 3'000);
  INFO(c.dump());
  // Three nodes with one slot each: three run, one on each node; none twice.
  size_t running = 0;
  for (const auto& occ : occs) running += c.runs_of(occ).size();
  CHECK(running == 3);
  for (const auto& id : c.ids()) CHECK(running_now(c, id) == 1);
  CHECK(c.sched("n3").counters().busy_refused >= 1);
  CHECK(c.sched("n1").counters().busy_refusals_received >= 1);
  // A refused attempt's record says why.
  bool busy_record = false;
  for (const auto& occ : occs) {
    for (const auto& [fid, w] : c.worker_records("n1", occ)) {
      busy_record = busy_record || (w.state == WorkerState::kRefused && w.detail.rfind("busy: ", 0) == 0);
    }
  }
  CHECK(busy_record);

  // Rule (owner): every worker busy, the fourth waits — nothing is lost — and runs once a
  // slot frees, within its misfire window.
  REQUIRE(c.complete("n2") == 1);
  c.run_for(3'000);
  size_t ran = 0;
  for (const auto& occ : occs) ran += c.runs_of(occ).size() == 1 ? 1 : 0;
  CHECK(ran == 4);
  for (const auto& id : c.ids()) CHECK(running_now(c, id) <= 1);
  for (const auto& id : c.ids()) c.complete(id);
  c.run_for(60'000);
  for (const auto& occ : occs) CHECK(c.runs_of(occ).size() == 1);
  CHECK(c.duplicate_runs().empty());
}

// Rule (worker): a handler's cap counts the runs of that handler only; other handlers
// still run beside them.
TEST_CASE("firing caps: a handler's cap counts its own runs only", "[firing][caps]") {
  ClusterOptions options;
  options.scheduler.handler_caps = {{"slow", 1}};
  Cluster c(options);
  c.make_master("n1");
  std::vector<OccurrenceId> slow, fast;
  for (int i = 0; i < 2; ++i) {
    Entry s = at_most_once_on("n3", "slow" + std::to_string(i), kF);
    s.handler = "slow";
    c.put_entry(s);
    slow.push_back(occ_of(s, kF));
    Entry f = at_most_once_on("n3", "fast" + std::to_string(i), kF);
    c.put_entry(f);
    fast.push_back(occ_of(f, kF));
  }
  c.run_until_t(c.t_at("n1", kF) + 3'000);
  INFO(c.dump());
  // n3 runs both "log" entries and one "slow" one; the other "slow" one runs elsewhere.
  for (const auto& occ : fast) {
    REQUIRE(c.runs_of(occ).size() == 1);
    CHECK(c.runs_of(occ).front().node == "n3");
  }
  size_t slow_on_n3 = 0;
  for (const auto& occ : slow) {
    REQUIRE(c.runs_of(occ).size() == 1);
    slow_on_n3 += c.runs_of(occ).front().node == "n3" ? 1 : 0;
  }
  CHECK(slow_on_n3 == 1);
  CHECK(c.sched("n3").counters().busy_refused >= 1);
}
