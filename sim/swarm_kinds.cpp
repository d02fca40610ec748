// The swarm's fault kinds of issue 33, as explicit timeline faults and workload writes
// (SwarmOptions::issue33_kinds).  They draw from a random stream of their own, after the
// workload was derived, so every other choice of a seed stays what it was without them:
//
//   gray            a long one-way loss (1-4 minutes) from a volume's next master (the
//                   replica second by priority) to one or two other replicas: it still
//                   looks alive through relays, and cannot win a claim (class 1)
//   crash_at_due    the current master of a volume (its first replica by priority)
//                   crashes at a due instant of one of its cron entries and restarts with
//                   its disk 20 s to 2 min later; half the time together with `gray`
//   restart_backoff a replica down 15-90 s — long enough for its peers' reconnect
//                   back-off to reach its 5 s maximum — then restarted with its disk
//                   (class 3)
//   churn           a partition of 20-60 s during which one to three deletes and edits of
//                   workload entries are issued through random nodes, half of them with
//                   w = majority; a deleted entry is sometimes created again later
//   prepared_churn  (preparing ahead only) entries firing every 10 s, each deleted,
//                   paused (and resumed), edited off its instants or edited in place
//                   between prepare_ahead and 200 ms before one of its due instants —
//                   inside the window its run is prepared in — mostly with w = majority
#include <algorithm>

#include "node/core/cluster_config.h"
#include "node/core/node.h"
#include "schedule/entry_json.h"
#include "schedule/timing.h"
#include "sim/swarm.h"

namespace caesium::sim {
namespace {

// The volume's replicas, master first: the master rule (gossip/master.h) with the
// priority each node runs with (its configured one, or the node's default).
std::vector<std::string> by_priority(const Scenario& s, const VolumeSpec& v) {
  const node::NodeOptions defaults;
  const int64_t fallback = node::default_priority(defaults.capacity.cores, defaults.capacity.memory_mb);
  auto priority = [&](const std::string& id) {
    for (const auto& n : s.cluster.nodes) {
      if (n.id == id) return n.priority != 0 ? n.priority : fallback;
    }
    return fallback;
  };
  std::vector<std::string> out = v.replicas;
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    const int64_t pa = priority(a), pb = priority(b);
    return pa != pb ? pa > pb : a < b;
  });
  return out;
}

FaultSpec timeline(FaultSpec::Kind kind, int64_t at_ms) {
  FaultSpec f;
  f.kind = kind;
  f.at_ms = at_ms;
  f.where = "swarm";
  return f;
}

// One-way loss from `from` to one or two of `others` over [at_ms, until_ms).
void add_gray(Rng& rng, Scenario& s, const std::string& from, std::vector<std::string> others, int64_t at_ms,
              int64_t until_ms) {
  if (others.empty()) return;
  rng.shuffle(others.begin(), others.end());
  others.resize(std::min<size_t>(others.size(), 1 + rng.below(2)));
  FaultSpec loss = timeline(FaultSpec::Kind::kOneway, at_ms);
  FaultSpec heal = timeline(FaultSpec::Kind::kHeal, until_ms);
  for (const auto& to : others) {
    loss.pairs.emplace_back(from, to);
    heal.pairs.emplace_back(from, to);
  }
  s.faults.push_back(std::move(loss));
  s.faults.push_back(std::move(heal));
}

void gray(Rng& rng, Scenario& s, const VolumeSpec& v) {
  const auto order = by_priority(s, v);
  if (order.size() < 3 || s.duration_ms < 3 * kMsPerMinute) return;
  const int64_t at = rng.between(20, s.duration_ms / kMsPerSecond - 90) * kMsPerSecond;
  add_gray(rng, s, order[1], {order.begin() + 2, order.end()}, at,
           std::min(at + rng.between(60, 240) * kMsPerSecond, s.duration_ms - 1));
  s.swarm_kinds.insert("gray");
}

void crash_at_due(Rng& rng, Scenario& s, const VolumeSpec& v) {
  std::vector<int64_t> dues;  // virtual instants due of the volume's cron entries
  for (const WorkloadEntry& w : s.workload) {
    if (w.volume != v.name || w.remove || !w.fields.contains("cron")) continue;
    auto entry = schedule::entry_from_json(w.fields, w.entity, w.name, s.world.epoch_utc_ms + w.at_ms, w.via);
    if (!entry) continue;
    int64_t cursor = s.world.epoch_utc_ms + w.at_ms + 30 * kMsPerSecond;
    for (int i = 0; i < 8; ++i) {
      auto next = schedule::next_occurrence(*entry, cursor);
      if (!next || *next - s.world.epoch_utc_ms > s.duration_ms - kMsPerMinute) break;
      dues.push_back(*next - s.world.epoch_utc_ms);
      cursor = *next + rng.between(0, 90) * kMsPerSecond;
    }
  }
  if (dues.empty()) return;
  const auto order = by_priority(s, v);
  const int64_t at = dues[rng.below(dues.size())];
  FaultSpec crash = timeline(FaultSpec::Kind::kCrash, at);
  crash.nodes = {order[0]};
  FaultSpec restart = timeline(FaultSpec::Kind::kRestart, std::min(at + rng.between(20, 120) * kMsPerSecond, s.duration_ms - 1));
  restart.nodes = {order[0]};
  s.faults.push_back(std::move(crash));
  s.faults.push_back(std::move(restart));
  s.swarm_kinds.insert("crash_at_due");
  if (order.size() >= 3 && rng.chance(0.5)) {
    add_gray(rng, s, order[1], {order.begin() + 2, order.end()}, std::max<int64_t>(1, at - 10 * kMsPerSecond),
             std::min(at + rng.between(60, 240) * kMsPerSecond, s.duration_ms - 1));
    s.swarm_kinds.insert("gray");
  }
}

void restart_backoff(Rng& rng, Scenario& s, const VolumeSpec& v) {
  if (s.duration_ms < 2 * kMsPerMinute) return;
  const std::string node = v.replicas[rng.below(v.replicas.size())];
  const int64_t at = rng.between(20, s.duration_ms / kMsPerSecond - 100) * kMsPerSecond;
  FaultSpec crash = timeline(FaultSpec::Kind::kCrash, at);
  crash.nodes = {node};
  FaultSpec restart = timeline(FaultSpec::Kind::kRestart, at + rng.between(15, 90) * kMsPerSecond);
  restart.nodes = {node};
  s.faults.push_back(std::move(crash));
  s.faults.push_back(std::move(restart));
  s.swarm_kinds.insert("restart_backoff");
}

void churn(Rng& rng, Scenario& s) {
  std::vector<size_t> entries;
  for (size_t i = 0; i < s.workload.size(); ++i) {
    if (!s.workload[i].remove) entries.push_back(i);
  }
  if (entries.empty() || s.cluster.nodes.size() < 2 || s.duration_ms < 2 * kMsPerMinute) return;
  const int64_t at = rng.between(30, s.duration_ms / kMsPerSecond - 70) * kMsPerSecond;
  const int64_t until = at + rng.between(20, 60) * kMsPerSecond;
  std::vector<std::string> ids;
  for (const auto& n : s.cluster.nodes) ids.push_back(n.id);
  rng.shuffle(ids.begin(), ids.end());
  FaultSpec split = timeline(FaultSpec::Kind::kPartition, at);
  const size_t cut = 1 + rng.below(ids.size() - 1);
  split.groups = {{ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut)}, {ids.begin() + static_cast<std::ptrdiff_t>(cut), ids.end()}};
  s.faults.push_back(std::move(split));
  s.faults.push_back(timeline(FaultSpec::Kind::kPartition, until));  // the split ends
  const int64_t writes = rng.between(1, 3);
  for (int64_t i = 0; i < writes; ++i) {
    const WorkloadEntry& base = s.workload[entries[rng.below(entries.size())]];
    WorkloadEntry w;
    w.at_ms = rng.between(at + 1, until - 1);
    w.volume = base.volume;
    for (const auto& v : s.cluster.volumes) {
      if (v.name == base.volume) w.via = v.replicas[rng.below(v.replicas.size())];
    }
    w.entity = base.entity;
    w.name = base.name;
    w.want_majority = rng.chance(0.5);
    w.where = "swarm churn";
    if (rng.chance(0.5)) {
      w.remove = true;
      if (rng.chance(0.3)) {  // created again after the split
        WorkloadEntry again = base;
        again.at_ms = until + rng.between(5, 60) * kMsPerSecond;
        again.where = "swarm churn";
        if (again.at_ms < s.duration_ms) s.workload.push_back(std::move(again));
      }
    } else {
      w.fields = base.fields;
      w.fields.erase("timer");
      w.fields["cron"] = "*/" + std::to_string(rng.between(5, 30)) + " * * * * *";
    }
    s.workload.push_back(std::move(w));
  }
  std::stable_sort(s.workload.begin(), s.workload.end(),
                   [](const WorkloadEntry& a, const WorkloadEntry& b) { return a.at_ms < b.at_ms; });
  s.swarm_kinds.insert("churn");
}

// One change of `created` at `at_ms`, through a random replica of its volume: a delete
// (sometimes created again), a pause (resumed later), an edit that no longer has its
// 10 s instants, or an edit in place (a new payload).
void prepared_change(Rng& rng, Scenario& s, const WorkloadEntry& created, int64_t at_ms) {
  WorkloadEntry c = created;
  c.fields = nlohmann::json::object();
  c.at_ms = at_ms;
  c.where = "swarm prepared_churn";
  c.want_majority = rng.chance(0.8);
  for (const auto& v : s.cluster.volumes) {
    if (v.name == created.volume) c.via = v.replicas[rng.below(v.replicas.size())];
  }
  WorkloadEntry after = created;  // a re-creation or a resume, 15-40 s later
  after.at_ms = at_ms + rng.between(15, 40) * kMsPerSecond;
  after.where = c.where;
  bool follow = false;
  switch (rng.below(4)) {
    case 0:
      c.remove = true;
      follow = rng.chance(0.5);
      break;
    case 1:
      c.pause = true;
      after.fields = nlohmann::json::object();
      after.pause = false;
      follow = true;
      break;
    case 2:
      c.fields = created.fields;
      c.fields["cron"] = "3/7 * * * * *";  // never on a multiple of 10 s
      break;
    default:
      c.fields = created.fields;
      c.fields["payload"] = "changed at " + std::to_string(at_ms);
      break;
  }
  s.workload.push_back(std::move(c));
  if (follow && after.at_ms < s.duration_ms) s.workload.push_back(std::move(after));
}

}  // namespace

void add_prepared_churn(uint64_t seed, Scenario& s, int64_t prepare_ahead_ms) {
  Rng rng(seed ^ 0x9E9A2EULL);
  if (s.cluster.volumes.empty() || prepare_ahead_ms < 1000 || s.duration_ms < 2 * kMsPerMinute) return;
  const int64_t entries = rng.between(1, 3);
  for (int64_t i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "pc", "e" + std::to_string(i));
    w.at_ms = rng.between(5, 20) * kMsPerSecond;
    w.want_majority = true;
    w.where = "swarm prepared_churn";
    nlohmann::json f;
    f["handler"] = "noop";
    f["semantics"] = rng.chance(0.6) ? "at_most_once" : "at_least_once";
    f["cron"] = "*/10 * * * * *";  // the world starts on a whole minute: due at multiples of 10 s
    f["misfire_window"] = "1m";
    w.fields = std::move(f);
    const WorkloadEntry created = w;
    s.workload.push_back(std::move(w));
    const int64_t changes = rng.between(1, 2);
    for (int64_t k = 0; k < changes; ++k) {
      const int64_t due = (rng.between(created.at_ms + 20 * kMsPerSecond, s.duration_ms - 30 * kMsPerSecond) /
                               (10 * kMsPerSecond) + 1) * (10 * kMsPerSecond);
      prepared_change(rng, s, created, due - rng.between(200, prepare_ahead_ms - 200));
    }
  }
  std::stable_sort(s.workload.begin(), s.workload.end(),
                   [](const WorkloadEntry& a, const WorkloadEntry& b) { return a.at_ms < b.at_ms; });
  s.swarm_kinds.insert("prepared_churn");
}

void add_issue33_faults(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0x1553E33ULL);
  if (s.cluster.volumes.empty()) return;
  auto volume = [&]() -> const VolumeSpec& { return s.cluster.volumes[rng.below(s.cluster.volumes.size())]; };
  if (rng.chance(0.35)) gray(rng, s, volume());
  if (rng.chance(0.35)) crash_at_due(rng, s, volume());
  if (rng.chance(0.3)) restart_backoff(rng, s, volume());
  if (rng.chance(0.4)) churn(rng, s);
  std::stable_sort(s.faults.begin(), s.faults.end(),
                   [](const FaultSpec& a, const FaultSpec& b) { return a.at_ms < b.at_ms; });
}

// Entries of overlap = "forbid" whose handler ("long") runs longer than their period, most
// of them at-most-once (the guaranteed case), one perhaps at-least-once (best effort).
void add_overlap_workload(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0x0E71A9ULL);
  if (s.cluster.volumes.empty()) return;
  const int64_t run_ms = rng.between(6, 40) * kMsPerSecond;
  s.world.handler.fixed_duration_ms["long"] = run_ms;
  const int entries = static_cast<int>(rng.between(1, 3));
  // forbid or replace, from a stream of its own (the other draws stay what they were).
  Rng policy(seed ^ 0x2E91ACEULL);
  for (int i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "ov", "long" + std::to_string(i));
    // After the nodes' amnesia horizon (they start wiped): see docs/firing.md, Overlap.
    w.at_ms = rng.between(20, 40) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "long";
    // A timeout bounds how long a wiped replica abstains on the entry's claims.
    if (rng.chance(0.5)) f["timeout"] = std::to_string(run_ms / kMsPerSecond + 20) + "s";
    f["semantics"] = i == 0 || rng.chance(0.7) ? "at_most_once" : "at_least_once";
    f["overlap"] = policy.chance(0.4) ? "replace" : "forbid";
    if (rng.chance(0.5)) {
      f["cron"] = "*/" + std::to_string(rng.between(2, 10)) + " * * * * *";
    } else {
      f["timer"] = {{"interval", std::to_string(rng.between(2, 10)) + "s"},
                    {"repeat_for", std::to_string(rng.between(2, 20)) + "m"}};
    }
    f["misfire_window"] = rng.chance(0.5) ? "30m" : "20s";
    w.fields = std::move(f);
    s.workload.push_back(std::move(w));
  }
  s.swarm_kinds.insert("overlap");
}

// Entries that retry (retry.attempts 2..4, back-offs of 0.5..5 s, some with jitter) whose
// handler ("flaky") fails often, of both semantics, some of them forbid overlap too: the
// retry rules judge their chains of runs (sim/fire_checker.h).
void add_retry_workload(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0x4E7B1ULL);
  if (s.cluster.volumes.empty()) return;
  s.world.handler.fail_by_handler["flaky"] = 0.3 + 0.1 * static_cast<double>(rng.below(5));
  const int entries = static_cast<int>(rng.between(1, 4));
  for (int i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "rt", "flaky" + std::to_string(i));
    w.at_ms = rng.between(5, 40) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "flaky";
    f["semantics"] = i == 0 || rng.chance(0.6) ? "at_most_once" : "at_least_once";
    nlohmann::json retry;
    retry["attempts"] = rng.between(2, 4);
    retry["backoff"] = std::to_string(rng.between(500, 5000)) + "ms";
    retry["max_backoff"] = std::to_string(rng.between(5, 20)) + "s";
    if (rng.chance(0.5)) retry["jitter"] = 0.5;
    f["retry"] = std::move(retry);
    if (rng.chance(0.3)) f["overlap"] = "forbid";
    if (rng.chance(0.5)) {
      f["cron"] = "*/" + std::to_string(rng.between(10, 40)) + " * * * * *";
    } else {
      f["timer"] = {{"interval", std::to_string(rng.between(10, 40)) + "s"},
                    {"repeat_for", std::to_string(rng.between(2, 20)) + "m"}};
    }
    f["misfire_window"] = rng.chance(0.5) ? "30m" : "1m";
    w.fields = std::move(f);
    s.workload.push_back(std::move(w));
  }
  s.swarm_kinds.insert("retries");
}

// A running cap on every node (node option max_running: 2..3) and entries whose handler
// ("busy") runs 1..2 s every 5..10 s, of both semantics: together with the seed's other
// entries (about one slot's worth) they keep the workers at their cap at times, so
// dispatches are refused busy and owners go elsewhere or wait.  The demand stays within
// what the nodes left up by the seed's faults can run — a cap makes work late, and past
// the capacity the backlog would outgrow the run (which the liveness rules would report
// as runs missing); tests/sim/caps_busy.toml drives the cap harder, without faults.
void add_caps_workload(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0xCA95ULL);
  if (s.cluster.volumes.empty()) return;
  auto options = std::make_shared<toml::table>(*s.node_options);
  options->insert_or_assign("max_running", rng.between(2, 3));
  s.node_options = std::move(options);
  s.world.handler.fixed_duration_ms["busy"] = rng.between(1, 2) * kMsPerSecond;
  const int entries = static_cast<int>(rng.between(2, 3));
  for (int i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "cap", "busy" + std::to_string(i));
    w.at_ms = rng.between(5, 40) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "busy";
    f["semantics"] = rng.chance(0.6) ? "at_most_once" : "at_least_once";
    f["timer"] = {{"interval", std::to_string(rng.between(5, 10)) + "s"},
                  {"repeat_for", std::to_string(rng.between(2, 20)) + "m"}};
    f["misfire_window"] = rng.chance(0.5) ? "30m" : "1m";
    w.fields = std::move(f);
    s.workload.push_back(std::move(w));
  }
  s.swarm_kinds.insert("caps");
}

// A cluster notify handler ("notify", told of failed, missed, lost and withheld) on every
// node, and entries whose handler ("fails") fails half the time, of both semantics, some
// with an on_failure handler ("on-fail") and some that retry: every last run that fails
// is then notified, once (sim/notify_checker.h), and the misses, losses and withholdings
// the seed's faults cause are notified too (judged once each).
void add_notify_workload(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0x40F1ULL);
  if (s.cluster.volumes.empty()) return;
  auto options = std::make_shared<toml::table>(*s.node_options);
  options->insert_or_assign("notify_handler", "notify");
  options->insert_or_assign("notify_withheld_after", std::to_string(rng.between(10, 60)) + "s");
  s.node_options = std::move(options);
  s.world.handler.fail_by_handler["fails"] = 0.5;
  const int entries = static_cast<int>(rng.between(1, 3));
  for (int i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "nt", "fails" + std::to_string(i));
    w.at_ms = rng.between(5, 40) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "fails";
    f["semantics"] = rng.chance(0.6) ? "at_most_once" : "at_least_once";
    if (i == 0 || rng.chance(0.5)) f["on_failure"] = "on-fail";
    if (rng.chance(0.4)) f["retry"] = {{"attempts", rng.between(2, 3)}, {"backoff", "1s"}};
    f["timer"] = {{"interval", std::to_string(rng.between(10, 40)) + "s"},
                  {"repeat_for", std::to_string(rng.between(2, 10)) + "m"}};
    f["misfire_window"] = rng.chance(0.5) ? "30m" : "1m";
    w.fields = std::move(f);
    s.workload.push_back(std::move(w));
  }
  s.swarm_kinds.insert("notify");
}

}  // namespace caesium::sim
