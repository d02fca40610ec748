// Runs one scenario with one seed: builds the World from the Scenario and the process
// kind, installs the checkers (membership, convergence, and the kind's own), schedules
// workload, faults and random faults, runs to the end, and returns the Report with the
// [expect] verdict and the command that replays it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace caesium::sim {

struct RunOptions {
  uint64_t seed = 1;
  std::string replay;  // the exact command line that replays this run (for the report)
  std::function<void(const std::string&)> trace;  // optional event trace
  // When set, receives every fault the run applied — the scenario's timeline and the
  // random faults with their repairs — in the order applied (sim/scenario_dump.h).
  std::vector<FaultSpec>* applied_faults = nullptr;
};

// Errors (exit 2 in the CLI): unknown process kind, node_options the kind rejects.
Result<Report> run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace caesium::sim
