// Swarm mode (TigerBeetle VOPR style): every parameter of a run is derived from its seed
// — node count, volumes, latency shape, loss, duplication, corruption, disk and handler
// timing, which random fault processes run and how often, how long faults last, the
// length of the fault phase.  The fault phase injects only faults the protocol must
// survive (crashes of at most a minority at once, partitions of every kind, slowness,
// skew within the bound); then everything is healed (crashed nodes restart with their
// disk, partitions heal, slowness ends, skew stays within the bound), the cluster gets a
// settle period, and the convergence checkers must find every view and every volume
// store in agreement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/scenario.h"

namespace caesium::sim {

struct SwarmOptions {
  std::string process = "node";
  int64_t nodes = 0;        // 0 = derived from the seed in [3, 7]
  int64_t duration_ms = 0;  // fault phase; 0 = derived from the seed in [2m, 10m]
  int64_t settle_ms = 3 * kMsPerMinute;
  // Also change replica sets during the fault phase (`config` faults, drawn from a
  // stream of their own so that every seed's other choices stay what they are without
  // it): for 1-3 volumes, replace one replica by another node through a joint epoch,
  // then drop the previous replicas (tried at once, which the guards refuse, and again
  // later), or add or remove one replica in one step.
  bool reconfig = false;
  // The nodes' prepare_ahead (SchedulerOptions::prepare_ahead_ms); nullopt = the shipped
  // default (SchedulerOptions), 0 = off.
  std::optional<int64_t> prepare_ahead_ms;
  // The fault kinds of issue 33 (sim/swarm_kinds.cpp: gray, crash_at_due,
  // restart_backoff, churn), drawn from a stream of their own; --classic-faults turns
  // them off.
  bool issue33_kinds = true;
  // Run now (POST .../trigger): entries of their own, triggered at random through the node
  // that created them, some retried with the same Idempotency-Key (drawn from a stream of
  // their own, so every seed's other choices stay what they are without it).
  bool triggers = false;
  // Also entries with overlap = "forbid" or "replace" whose handler runs longer than their period
  // (add_overlap_workload, a stream of its own, so every seed's other choices stay what
  // they are without it): the overlap.forbid rule then has runs to judge.
  bool overlap = false;
  // Also entries that retry (retry.attempts 2..4, short back-offs) whose handler ("flaky")
  // fails often (add_retry_workload, a stream of its own): the retry rules then have
  // chains of runs to judge.
  bool retries = false;
  // Also a running cap on every node (max_running 1..3) and entries whose handler ("busy")
  // takes seconds (add_caps_workload, a stream of its own): workers refuse dispatches at
  // their cap, owners go elsewhere or wait, and cap.exceeded judges the runs.
  bool caps = false;
  // Also a cluster notify handler ("notify") and entries whose handler fails often, some with
  // an on_failure handler (add_notify_workload, a stream of its own): the notify rules
  // (sim/notify_checker.h) then have failures, misses and losses to judge.
  bool notify = false;
};

// A workload entry of `entity`/`name` on a volume drawn from `s` (first the volume, then the
// replica it is written through, from `rng`), for the workloads below.
WorkloadEntry workload_entry_on_a_volume(Rng& rng, const Scenario& s, std::string entity, std::string name);

// SwarmOptions::triggers: adds those entries and triggers to a derived scenario.
void add_trigger_workload(uint64_t seed, Scenario& s);

// SwarmOptions::triggers, after every other workload: one to three of the workload's
// entries paused at random instants and (mostly) resumed 10-60 s later, through the node
// that created them, half with w = majority.
void add_pause_workload(uint64_t seed, Scenario& s);

// SwarmOptions::overlap: adds the forbid entries and their long handler to a derived scenario.
void add_overlap_workload(uint64_t seed, Scenario& s);

// SwarmOptions::retries: adds the retrying entries and their flaky handler to a derived scenario.
void add_retry_workload(uint64_t seed, Scenario& s);

// SwarmOptions::caps: sets the nodes' running cap and adds the busy entries and handler.
void add_caps_workload(uint64_t seed, Scenario& s);

// SwarmOptions::notify: sets the nodes' notify handler and adds the failing entries.
void add_notify_workload(uint64_t seed, Scenario& s);

// SwarmOptions::issue33_kinds: adds those faults and writes to a derived scenario.
void add_issue33_faults(uint64_t seed, Scenario& s);

// SwarmOptions::prepare_ahead_ms (with issue33_kinds): entries changed inside the windows
// their runs are prepared in (deletes, pauses, edits), mostly with w = majority.
void add_prepared_churn(uint64_t seed, Scenario& s, int64_t prepare_ahead_ms);

// The scenario for one seed.  Deterministic: same seed and options, same scenario.
Scenario derive_swarm_scenario(uint64_t seed, const SwarmOptions& options);

// "caesium sim --swarm --seeds 17..17 [--nodes N] [--duration D] [--process K] [--reconfig]
//  [--prepare-ahead D] [--classic-faults] [--triggers] [--overlap] [--retries] [--caps] [--notify]"
std::string swarm_replay_command(uint64_t seed, const SwarmOptions& options);

// A short description of what the seed chose, for the per-seed line of the report.
std::string describe_swarm_scenario(const Scenario& s);

}  // namespace caesium::sim
