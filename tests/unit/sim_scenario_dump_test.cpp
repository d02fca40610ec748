// --dump-scenario: a swarm seed written as TOML parses back to the same scenario, with the
// faults the run applied as its timeline, and replays the same run.
#include <catch2/catch.hpp>

#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/scenario_dump.h"
#include "sim/swarm.h"

using namespace caesium;
using namespace caesium::sim;

TEST_CASE("a dumped swarm seed parses back and replays the same run", "[sim]") {
  SwarmOptions o;
  o.duration_ms = 2 * kMsPerMinute;
  o.reconfig = true;
  const Scenario s = derive_swarm_scenario(21, o);
  std::vector<FaultSpec> applied;
  RunOptions ro;
  ro.seed = 21;
  ro.applied_faults = &applied;
  auto first = run_scenario(s, ro);
  REQUIRE(first.ok());
  REQUIRE_FALSE(applied.empty());

  const std::string text = dump_scenario(s, applied, "a comment\non two lines");
  CHECK(text.rfind("# a comment\n# on two lines\n", 0) == 0);
  auto parsed = parse_scenario(text, "dump.toml");
  INFO((parsed.ok() ? "" : parsed.error().message));
  REQUIRE(parsed.ok());
  const Scenario& d = parsed.value();
  CHECK(d.seed == 21);
  CHECK(d.duration_ms == s.duration_ms);
  CHECK(d.cluster.nodes.size() == s.cluster.nodes.size());
  CHECK(d.cluster.volumes.size() == s.cluster.volumes.size());
  CHECK(d.world.network.loss == s.world.network.loss);
  CHECK(d.world.handler.duration.base_ms == s.world.handler.duration.base_ms);
  REQUIRE(d.workload.size() == s.workload.size());
  CHECK(d.workload[0].fields == s.workload[0].fields);
  CHECK(d.faults.size() == applied.size());
  CHECK_FALSE(d.random.any());

  RunOptions again;
  again.seed = d.seed;
  auto second = run_scenario(d, again);
  REQUIRE(second.ok());
  // The random fault driver's own arrivals that changed nothing (a node already down, a
  // repair a later fault superseded) were events of the first run only.
  CHECK(second->events <= first->events);
  CHECK(first->events - second->events <= 5);
  for (const char* f : {"alo.due", "alo.executions", "amo.executions", "sim.faults", "net.stream.delivered",
                        "handler.executions", "sim.ticks"}) {
    INFO(f);
    CHECK(first->figures.at(f) == second->figures.at(f));
  }
}
