#include "sim/restart_checker.h"

#include <algorithm>

#include "base/time.h"
#include "sim/world.h"
#include "sim/write_checker.h"

namespace caesium::sim {

std::vector<Violation> judge_reruns(const RestartRules& rules) {
  std::vector<Violation> out;
  for (const RestartRules::Restart& r : rules.restarts) {
    std::set<RestartRules::Occ> reported;
    for (const RestartRules::Run& run : rules.runs) {
      if (run.start_ms < r.at_ms || !r.completed.count(run.occ) || reported.count(run.occ)) continue;
      const bool by_it = run.decided_by.empty() ? run.node == r.node
                                                : run.decided_by == r.node && run.decided_ms >= r.at_ms;
      if (!by_it || !run.decider_reaches_majority) continue;
      reported.insert(run.occ);
      const auto& [volume, key, scheduled] = run.occ;
      out.push_back({"restart.rerun",
                     volume + "/" + key + "@" + format_rfc3339_utc(scheduled) + " completed before " + r.node +
                         " restarted at " + format_duration_ms(r.at_ms) +
                         " (a majority of its replicas held the completion), and " + r.node + " ran it again on " +
                         run.node + " (fire id " + run.fire_id + (run.possible_duplicate ? ", flagged" : "") + ")",
                     run.start_ms, r.node});
    }
  }
  return out;
}

void RestartChecker::on_observation(const World& world, uint32_t node, const Observation& obs) {
  if (obs.kind == Observation::Kind::kEntry) {
    if (auto entry = entry_of_write(scenario_, world, node, obs)) entries_[{obs.volume, obs.key}] = std::move(*entry);
    return;
  }
  if (obs.kind == Observation::Kind::kFire && (obs.text == "dispatched" || obs.text == "redispatched")) {
    dispatched_by_[{obs.volume, obs.key, obs.scheduled_utc_ms, obs.attempt, obs.subject}] = {
        world.spec(node).id, world.now_ms(), reaches_majority(world, node, obs.volume, obs.key)};
  }
}

bool RestartChecker::reaches_majority(const World& world, uint32_t node, const std::string& volume,
                                      const std::string& key) const {
  auto entry = entries_.find({volume, key});
  if (entry == entries_.end()) return false;
  return decider_reaches_majority(world, node, entry->second, volume, last_link_change_ms_);
}

void RestartChecker::on_execution(const World& world, const Execution& e) {
  const auto& inv = e.invocation;
  RestartRules::Run run;
  run.occ = {inv.volume, schedule::entry_key(inv.entity, inv.entry), inv.scheduled_utc_ms};
  run.start_ms = e.start_ms;
  run.node = world.spec(e.node).id;
  run.fire_id = inv.fire_id;
  run.possible_duplicate = inv.possible_duplicate;
  auto found = dispatched_by_.find({inv.volume, std::get<1>(run.occ), inv.scheduled_utc_ms, inv.attempt, run.node});
  if (found != dispatched_by_.end()) {
    run.decided_by = found->second.owner;
    run.decided_ms = found->second.at_ms;
    run.decider_reaches_majority = found->second.reaches_majority;
  } else {
    run.decider_reaches_majority = reaches_majority(world, e.node, inv.volume, std::get<1>(run.occ));
  }
  rules_.runs.push_back(std::move(run));
}

// At a restart: which finished occurrences of the node's volumes a majority of their
// eligible replicas holds as finished, read from the replicas' stores.
void RestartChecker::on_fault(const World& world, const FaultRecord& fault) {
  if (changes_links(fault)) last_link_change_ms_ = world.now_ms();
  if (fault.kind != FaultKind::kRestart || fault.nodes.empty()) return;
  RestartRules::Restart r;
  r.node = world.spec(fault.nodes[0]).id;
  r.at_ms = world.now_ms();
  // Runs that failed definitely, per occurrence: an entry that retries owes the next run
  // while it has attempts left, so such a failure is not a completion.
  std::map<RestartRules::Occ, uint32_t> failed_runs;
  auto definite_failure = [](const Execution& e) {
    return e.outcome == Execution::Outcome::kFailed || e.outcome == Execution::Outcome::kTimedOut;
  };
  for (const Execution& e : world.executions()) {
    if (e.done_ms < 0 || e.done_ms > r.at_ms || !definite_failure(e)) continue;
    const auto& inv = e.invocation;
    ++failed_runs[{inv.volume, schedule::entry_key(inv.entity, inv.entry), inv.scheduled_utc_ms}];
  }
  for (const Execution& e : world.executions()) {
    if (e.done_ms < 0 || e.done_ms > r.at_ms) continue;
    const auto& inv = e.invocation;
    RestartRules::Occ occ{inv.volume, schedule::entry_key(inv.entity, inv.entry), inv.scheduled_utc_ms};
    if (r.completed.count(occ)) continue;
    auto entry = entries_.find({inv.volume, std::get<1>(occ)});
    if (entry == entries_.end()) continue;
    // A failure completes the occurrence only as its last run: the record of an earlier
    // run's failure says a retry is owed, whoever holds it (swarm --retries seed 2052: a
    // majority held run 1's failure, only the worker run 2's, and the restarted owner —
    // which reconciled with that majority — rightly ran run 2 again, flagged).
    if (definite_failure(e) && entry->second.retry.enabled() &&
        (failed_runs[occ] < entry->second.retry.attempts || inv.run < entry->second.retry.attempts)) {
      continue;
    }
    const auto& replicas = world.replicas_at(inv.volume, r.at_ms);
    if (std::find(replicas.begin(), replicas.end(), r.node) == replicas.end()) continue;
    const std::vector<std::string> elig = eligible_replicas(world, entry->second, replicas);
    size_t holders = 0;
    for (const auto& id : elig) {
      const int64_t idx = world.index_of(id);
      if (idx < 0 || !world.is_up(static_cast<uint32_t>(idx))) continue;
      const Process* p = world.process(static_cast<uint32_t>(idx));
      auto held = p ? p->holds_completion(inv.volume, std::get<1>(occ), inv.scheduled_utc_ms, inv.fire_id) : std::nullopt;
      holders += held.value_or(false) ? 1 : 0;
    }
    if (holders * 2 > elig.size()) r.completed.insert(std::move(occ));
  }
  if (!r.completed.empty()) rules_.restarts.push_back(std::move(r));
}

void RestartChecker::finish(const World& world, Report& report) {
  (void)world;
  for (Violation& v : judge_reruns(rules_)) report.violate(std::move(v));
  size_t held = 0;
  for (const auto& r : rules_.restarts) held += r.completed.size();
  report.set("restart.completed_before", static_cast<double>(held));
}

}  // namespace caesium::sim
