// A scenario written back as TOML (tests/sim/README.md format): how a swarm seed becomes
// a frozen regression file (`caesium sim --swarm --seeds N..N --dump-scenario FILE`).
//
// The faults are written as an explicit timeline — the ones the run actually applied, in
// the order it applied them (RunOptions::applied_faults: the scenario's own timeline and
// the random fault driver's faults and repairs) — never as [random_faults] processes, so
// the file keeps testing the same fault sequence when the swarm's generator or the
// random-fault driver changes.  Everything else the seed chose is written as values: the
// cluster, network, disk, handler model, node options, workload and the seed (which
// seeds the World's own random streams: latency, loss, disk and handler timing).
#pragma once

#include <string>
#include <vector>

#include "sim/scenario.h"

namespace caesium::sim {

// The TOML text of `s` with `faults` as its timeline and no random fault processes.
// `comment` (may be several lines) opens the file as '#' lines.
std::string dump_scenario(const Scenario& s, const std::vector<FaultSpec>& faults, const std::string& comment);

}  // namespace caesium::sim
