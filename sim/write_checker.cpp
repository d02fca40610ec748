#include "sim/write_checker.h"

#include <algorithm>
#include <set>

#include "base/time.h"
#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"
#include "schedule/occurrence.h"
#include "schedule/timing.h"
#include "sim/world.h"

namespace caesium::sim {

std::vector<std::string> eligible_replicas(const World& world, const schedule::Entry& entry,
                                           const std::vector<std::string>& replicas) {
  std::vector<std::string> out;
  for (const auto& r : replicas) {
    const int64_t idx = world.index_of(r);
    if (idx < 0) continue;
    bool match = entry.bind.empty();
    for (const auto& b : entry.bind) {
      if (b.rfind("tag:", 0) == 0) {
        const auto& tags = world.spec(static_cast<uint32_t>(idx)).tags;
        if (std::binary_search(tags.begin(), tags.end(), b.substr(4))) match = true;
      } else if (b == r) {
        match = true;
      }
    }
    if (match) out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool reaches_majority(const World& world, uint32_t node, const std::vector<std::string>& eligible) {
  size_t reach = 0;
  for (const auto& r : eligible) {
    const int64_t ri = world.index_of(r);
    if (ri < 0) continue;
    const auto rn = static_cast<uint32_t>(ri);
    if (rn == node || (world.is_up(rn) && world.now_ms() - world.up_since_ms(rn) >= kViewSettleMs &&
                       world.links().can_send(node, rn) && world.links().can_send(rn, node))) {
      ++reach;
    }
  }
  return reach * 2 > eligible.size();
}

bool decider_reaches_majority(const World& world, uint32_t node, const schedule::Entry& entry,
                              const std::string& volume, int64_t last_link_change_ms) {
  if (world.now_ms() - last_link_change_ms < kViewSettleMs) return false;
  const auto& previous = world.previous_replicas_at(volume, world.now_ms());
  return reaches_majority(world, node, eligible_replicas(world, entry, world.replicas_at(volume, world.now_ms()))) &&
         (previous.empty() || reaches_majority(world, node, eligible_replicas(world, entry, previous)));
}

bool changes_links(const FaultRecord& fault) {
  return fault.kind == FaultKind::kPartition || fault.kind == FaultKind::kCut || fault.kind == FaultKind::kOneway ||
         fault.kind == FaultKind::kHeal;
}

bool schedules(const schedule::Entry& entry, int64_t scheduled_utc_ms) {
  auto next = schedule::next_occurrence(entry, scheduled_utc_ms - 1);
  return next && *next == scheduled_utc_ms;
}

std::optional<schedule::Entry> entry_of_write(const Scenario& scenario, const World& world, uint32_t node,
                                              const Observation& obs) {
  if (obs.text == "trigger") {
    // Run now: the definition the node wrote, with the new manual occurrence.
    auto entry = schedule::decode_entry(obs.detail);
    if (!entry) return std::nullopt;
    return std::move(*entry);
  }
  if (obs.text != "put" && !obs.text.empty()) return std::nullopt;
  if (obs.write_id < 1 || obs.write_id > world.writes().size()) return std::nullopt;
  const WorkloadEntry& w = scenario.workload[world.writes()[obs.write_id - 1].workload];
  auto entry = schedule::entry_from_json(w.fields, w.entity, w.name, obs.at_utc_ms, world.spec(node).id);
  if (!entry) return std::nullopt;
  return std::move(*entry);
}

namespace {

std::string occ_name(const std::string& volume, const std::string& key, int64_t scheduled_utc_ms) {
  return volume + "/" + key + "@" + format_rfc3339_utc(scheduled_utc_ms);
}

// The dispatch that sent `run`'s attempt: to its node with its attempt number, else any
// dispatch of that attempt.  Null when no node reported one.
const WriteRules::Dispatch* dispatch_of(const WriteRules::Key& k, const WriteRules::Run& run) {
  auto found = k.dispatches.find(run.scheduled_utc_ms);
  if (found == k.dispatches.end()) return nullptr;
  const WriteRules::Dispatch* best = nullptr;
  for (const auto& d : found->second) {
    if (d.attempt != run.attempt) continue;
    const bool to_it = d.worker == run.node;
    if (best == nullptr || (to_it && best->worker != run.node) ||
        (to_it == (best->worker == run.node) && d.at_ms < best->at_ms)) {
      best = &d;
    }
  }
  return best;
}

}  // namespace

std::vector<Violation> judge_writes(const WriteRules& rules) {
  std::vector<Violation> out;
  for (const WriteRules::Key& k : rules.keys) {
    for (size_t i = 1; i < k.versions.size(); ++i) {
      const WriteRules::Version& w = k.versions[i];
      const WriteRules::Version& before = k.versions[i - 1];
      // Nothing ran under a deleted entry; a write never acknowledged by a majority
      // promises nothing.
      if (before.deleted || !before.entry || before.entry->paused || w.acked_ms < 0 || !w.majority_acked) continue;
      int64_t until_ms = kNever;  // the first of the higher versions to be issued
      for (size_t later = i + 1; later < k.versions.size(); ++later) until_ms = std::min(until_ms, k.versions[later].issued_ms);
      const bool amo = before.entry->semantics == schedule::Semantics::at_most_once;
      // A pause stops everything not dispatched, as a delete does.
      const bool paused = !w.deleted && w.entry && w.entry->paused;
      const char* what = w.deleted ? "delete" : paused ? "pause" : "edit";
      const std::string rule = std::string(what) + ".run_after_ack";
      for (const WriteRules::Run& run : k.runs) {
        const int64_t fire_utc_ms = schedule::fire_time(*before.entry, run.scheduled_utc_ms);
        if (!w.deleted && !paused) {
          // An edit removes only what falls due after it and the new definition lacks.
          // "After it" is by the edit's version, the clock of the node that took it: the
          // only time every replica can judge alike (ground truth differs by its skew).
          if (fire_utc_ms < w.hlc.physical_ms || (w.entry && schedules(*w.entry, run.scheduled_utc_ms))) continue;
        }
        const WriteRules::Dispatch* d = dispatch_of(k, run);
        const int64_t dispatched_ms = d != nullptr ? d->at_ms : run.start_ms;
        if (dispatched_ms >= until_ms) continue;
        // At-least-once: only an owner that could reach a majority should have known.
        if (!amo && (d == nullptr || !d->owner_reaches_majority)) continue;
        if (dispatched_ms <= w.acked_ms) {
          // Dispatched before the acknowledgement — prepared ahead, before o's instant.  A
          // run that starts after an acknowledgement that came before that instant (ground
          // truth) is one the change should have stopped.
          const int64_t due_ms = fire_utc_ms - rules.epoch_utc_ms;
          if (run.start_ms <= w.acked_ms || w.acked_ms >= due_ms || run.start_ms >= until_ms) continue;
          out.push_back({std::string(what) + ".prepared_run",
                         occ_name(k.volume, k.key, run.scheduled_utc_ms) + " (" +
                             (amo ? "at-most-once" : "at-least-once") + ") ran on " + run.node + " (fire id " +
                             run.fire_id + ") at " + format_duration_ms(run.start_ms) + ", prepared at " +
                             format_duration_ms(dispatched_ms) + ", though the " + what + " (write " +
                             std::to_string(w.write_id) + ") was acknowledged by a majority at " +
                             format_duration_ms(w.acked_ms) + ", before its instant " + format_duration_ms(due_ms),
                         run.start_ms, run.node});
          continue;
        }
        out.push_back({rule,
                       occ_name(k.volume, k.key, run.scheduled_utc_ms) + " (" +
                           (amo ? "at-most-once" : "at-least-once") + ") ran on " + run.node + " (fire id " +
                           run.fire_id + ", attempt " + std::to_string(run.attempt) + "), dispatched at " +
                           format_duration_ms(dispatched_ms) + (d ? " by " + d->owner : std::string()) + ", after the " +
                           what + " (write " + std::to_string(w.write_id) +
                           ") was acknowledged by a majority at " + format_duration_ms(w.acked_ms),
                       dispatched_ms, run.node});
      }
    }
  }
  return out;
}

WriteRules::Key& WriteChecker::key(const std::string& volume, const std::string& key) {
  WriteRules::Key& k = keys_[{volume, key}];
  k.volume = volume;
  k.key = key;
  return k;
}

void WriteChecker::on_observation(const World& world, uint32_t node, const Observation& obs) {
  if (obs.kind == Observation::Kind::kEntry) {
    WriteRules::Version v;
    v.write_id = obs.write_id;
    v.issued_ms = world.now_ms();
    v.deleted = obs.text == "delete";
    v.hlc = obs.version;
    auto& versions = key(obs.volume, obs.key).versions;
    const auto at = std::upper_bound(versions.begin(), versions.end(), v.hlc,
                                     [](const schedule::Version& h, const WriteRules::Version& x) { return h < x.hlc; });
    if (obs.text == "pause" || obs.text == "resume") {
      // The definition the node wrote: its stored one, paused or not (which may be one
      // the write before it in version order, a delete, had not reached yet).
      auto entry = schedule::decode_entry(obs.detail);
      if (entry) v.entry = std::move(*entry);
    } else {
      v.entry = entry_of_write(scenario_, world, node, obs);
    }
    if (!v.deleted && !v.entry) return;  // refused
    versions.insert(at, std::move(v));
    return;
  }
  if (obs.kind != Observation::Kind::kFire || (obs.text != "dispatched" && obs.text != "redispatched")) return;
  auto found = keys_.find({obs.volume, obs.key});
  if (found == keys_.end()) return;
  WriteRules::Key& k = found->second;
  // Whether the owner could ask a majority of the eligible replicas, now (see
  // decider_reaches_majority).
  const schedule::Entry* entry = nullptr;
  for (const auto& v : k.versions) entry = v.entry ? &*v.entry : entry;
  const bool reaches = entry != nullptr && decider_reaches_majority(world, node, *entry, obs.volume, last_link_change_ms_);
  k.dispatches[obs.scheduled_utc_ms].push_back({world.now_ms(), world.spec(node).id, obs.subject, obs.attempt, reaches});
}

void WriteChecker::on_fault(const World& world, const FaultRecord& fault) {
  if (changes_links(fault)) last_link_change_ms_ = world.now_ms();
}

void WriteChecker::finish(const World& world, Report& report) {
  WriteRules rules;
  rules.epoch_utc_ms = scenario_.world.epoch_utc_ms;
  for (const Execution& e : world.executions()) {
    auto found = keys_.find({e.invocation.volume, schedule::entry_key(e.invocation.entity, e.invocation.entry)});
    if (found == keys_.end()) continue;
    found->second.runs.push_back({e.start_ms, world.spec(e.node).id, e.invocation.fire_id, e.invocation.attempt,
                                  e.invocation.scheduled_utc_ms});
  }
  uint64_t deletes = 0, edits = 0, pauses = 0;
  for (auto& [name, k] : keys_) {
    for (size_t i = 0; i < k.versions.size(); ++i) {
      WriteRules::Version& v = k.versions[i];
      if (v.write_id < 1 || v.write_id > world.writes().size()) continue;
      const WriteRecord& rec = world.writes()[v.write_id - 1];
      v.acked_ms = rec.acked_ms;
      if (i == 0 || v.acked_ms < 0) continue;
      ++(v.deleted ? deletes : edits);
      if (!v.deleted && v.entry && v.entry->paused) ++pauses;
      // A majority of the eligible replicas of the version it replaces — of each replica
      // set in force (both, during a change) — even if every other replica of either set
      // acknowledged too.
      const WriteRules::Version& before = k.versions[i - 1];
      if (!before.entry) continue;
      const auto& replicas = world.replicas_at(k.volume, v.acked_ms);
      const auto& previous = world.previous_replicas_at(k.volume, v.acked_ms);
      std::set<std::string> all(replicas.begin(), replicas.end());
      all.insert(previous.begin(), previous.end());
      v.majority_acked = true;
      for (const auto* set : {&replicas, &previous}) {
        if (set->empty()) continue;
        const size_t elig = eligible_replicas(world, *before.entry, *set).size();
        v.majority_acked = v.majority_acked && rec.want_acks >= all.size() - elig + elig / 2 + 1;
      }
    }
    rules.keys.push_back(std::move(k));
  }
  for (Violation& v : judge_writes(rules)) report.violate(std::move(v));
  report.set("writes.deletes_acked", static_cast<double>(deletes));
  report.set("writes.edits_acked", static_cast<double>(edits));  // pauses and resumes included
  report.set("writes.pauses_acked", static_cast<double>(pauses));
}

}  // namespace caesium::sim
