// Process kinds: what a scenario's `process = "..."` names.
//
// A kind bundles the factory the World uses for every node, optional checkers that
// only make sense for it (the firing checker for "node"), an optional validation of the
// scenario's [node_options], and an optional swarm workload generator.
//
// The default kind is "node" — the real Node core behind sim/node_process.* (the lead's
// adapter registers it with register_process_kind).  Test kinds (`test_only`, e.g.
// "echo") exist for the simulator's own tests and benchmarks; they are never a default
// and the CLI labels them as such.
//
// Registration is explicit (no static initialisers in a static library: the linker would
// drop them).  register_builtin_process_kinds() registers the kinds that live in sim/.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/rng.h"
#include "sim/checker.h"
#include "sim/cluster.h"

namespace caesium::sim {

struct Scenario;

struct ProcessKind {
  std::string name;
  std::string summary;
  bool test_only = false;
  ProcessFactory factory;
  // Checkers added to every run of this kind (owned by the runner for the run).
  std::function<std::vector<std::unique_ptr<Checker>>(const Scenario&)> make_checkers;
  // Rejects bad [node_options] before the run (exit 2 from the CLI).  Optional.
  std::function<Status(const Scenario&)> validate;
  // Swarm: adds a workload (entries, node options) for a generated scenario.  Optional.
  std::function<void(Rng&, Scenario&)> swarm_workload;
};

// Adds or replaces a kind.
void register_process_kind(ProcessKind kind);
// Registers the kinds implemented in sim/ (currently the test kind "echo").  Idempotent.
void register_builtin_process_kinds();
// Null when no kind has that name.
const ProcessKind* find_process_kind(const std::string& name);
// Every registered name, sorted.
std::vector<std::string> process_kind_names();

}  // namespace caesium::sim
