// Run now through the firing core (docs/firing.md, Run now): a manual occurrence, added
// to the entry by a write like any edit, is claimed, dispatched and run like a scheduled
// one — once — and the scheduled occurrences around it are unaffected.
#include <catch2/catch.hpp>

#include "tests/unit/firing_harness.h"

using namespace caesium;
using namespace caesium::firing_test;

namespace {

// The entry again with a trigger due at `at_utc` (as Node::trigger_entry writes it).
Entry with_trigger(Entry e, const std::string& id, int64_t at_utc) {
  e.triggers.push_back(schedule::Trigger{id, at_utc});
  return e;
}

}  // namespace

TEST_CASE("firing run now: a triggered occurrence runs once, between scheduled ones", "[firing][trigger]") {
  const Semantics semantics = GENERATE(Semantics::at_most_once, Semantics::at_least_once);
  Cluster c;
  c.make_master("n1");
  const Entry e = every("tick", 10'000, 6, semantics);
  c.put_entry(e);
  c.run_for(15'000);
  for (const auto& r : c.runs()) c.complete(r.node);
  REQUIRE(c.runs_of(occ_of(e, e.created_utc_ms + 10'000)).size() == 1);

  const int64_t at = kBaseUtc + c.now() + 500;
  const Entry triggered = with_trigger(e, "k0000000000000001", at);
  c.put_entry(triggered);
  c.run_for(2'000);
  INFO(c.dump());
  const OccurrenceId manual = occ_of(triggered, at);
  auto runs = c.runs_of(manual);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].start_utc >= at);
  CHECK_FALSE(runs[0].inv.possible_duplicate);
  c.complete(runs[0].node);

  // Later edits keep the trigger in the list; it runs no more, and the timing goes on.
  c.put_entry(with_trigger(triggered, "k0000000000000002", kBaseUtc + c.now() + 20'000));
  c.run_for(60'000);
  CHECK(c.runs_of(manual).size() == 1);
  for (int k = 2; k <= 6; ++k) CHECK(c.runs_of(occ_of(e, e.created_utc_ms + k * 10'000)).size() == 1);
  CHECK(c.duplicate_runs().empty());
}

// A replica whose clock runs ahead of the writer's has enumerated past the trigger's
// instant when the write reaches it; it goes back for it (Scheduler::upsert_entry), so a
// master ahead of the writer still decides the manual occurrence itself.
TEST_CASE("firing run now: a master whose clock is ahead goes back for the trigger", "[firing][trigger]") {
  Cluster c;
  c.set_skew("n1", 4'000);
  c.make_master("n1");
  const Entry e = every("tick", 1'000, 3'600, Semantics::at_most_once);
  c.put_entry(e);
  c.run_for(10'000);
  for (const auto& r : c.runs()) c.complete(r.node);

  // Written by an unskewed node: due by its clock, 4 s behind n1's cursor.
  const int64_t at = kBaseUtc + c.now() + 300;
  const Entry triggered = with_trigger(e, "t0000000000000001", at);
  c.put_entry(triggered);
  c.run_for(3'000);
  INFO(c.dump());
  const OccurrenceId manual = occ_of(triggered, at);
  REQUIRE(c.runs_of(manual).size() == 1);
  const auto owners = c.owner_records("n1", manual);
  CHECK(owners.count("n1") == 1);
  CHECK(c.duplicate_runs().empty());
}
