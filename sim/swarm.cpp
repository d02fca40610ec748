#include "sim/swarm.h"

#include <algorithm>
#include <cstdio>

#include "schedule/scheduler.h"
#include "sim/registry.h"

namespace caesium::sim {

namespace {

// Half the time zero, otherwise uniform in (0, max].
double sometimes(Rng& rng, double max) { return rng.chance(0.5) ? 0.0 : rng.unit() * max; }

FaultSpec config_fault(int64_t at_ms, const std::string& via, const std::string& volume,
                       std::vector<std::string> replicas, std::vector<std::string> previous) {
  FaultSpec f;
  f.kind = FaultSpec::Kind::kConfig;
  f.at_ms = at_ms;
  f.nodes = {via};
  f.volume = volume;
  f.replicas = std::move(replicas);
  f.previous_replicas = std::move(previous);
  f.where = "swarm";
  return f;
}

// SwarmOptions::reconfig.  Each volume's changes follow one another (a change is drawn
// against the sets the previous one asked for, whether or not it was applied).
void add_replica_changes(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0xC0F16EULL);
  // Moves (a replacement of a majority) and the cut-offs around them draw from a stream
  // of their own: every other draw of a seed stays what it was.
  Rng cut_rng(seed ^ 0xC17C0FFULL);
  std::vector<FaultSpec> cuts;
  const auto& nodes = s.cluster.nodes;
  auto random_node = [&] { return nodes[rng.below(nodes.size())].id; };
  for (const auto& v : s.cluster.volumes) {
    if (!rng.chance(0.6)) continue;
    std::vector<std::string> current = v.replicas;
    int64_t t = rng.between(20, 60) * kMsPerSecond;
    const int64_t changes = rng.between(1, 3);
    for (int64_t i = 0; i < changes && t < s.duration_ms; ++i) {
      std::vector<std::string> outside;
      for (const auto& n : nodes) {
        if (std::find(current.begin(), current.end(), n.id) == current.end()) outside.push_back(n.id);
      }
      std::vector<std::string> next = current;
      const uint64_t kind = rng.below(3);
      if (kind == 0 && !outside.empty()) {  // replace one: two epochs
        next[rng.below(next.size())] = outside[rng.below(outside.size())];
        // Or move a majority of the set to other nodes, and perhaps cut the nodes that
        // leave off from everyone else from just before the joint epoch until after the
        // final step: they stay a majority of the sets they hold, so the final step must
        // wait for them (tests/sim/config_stale_pair.toml; docs/firing.md, Replica changes).
        // A replacement of one keeps most of a cut majority in the new set, and the fill
        // check alone holds its final step back.
        std::vector<std::string> leaving;
        if (outside.size() >= current.size() / 2 + 1 && cut_rng.chance(0.4)) {
          leaving = current;
          cut_rng.shuffle(leaving.begin(), leaving.end());
          leaving.resize(current.size() / 2 + 1);
          std::vector<std::string> joining = outside;
          cut_rng.shuffle(joining.begin(), joining.end());
          next.clear();
          for (const auto& n : current) {
            if (std::find(leaving.begin(), leaving.end(), n) == leaving.end()) next.push_back(n);
          }
          next.insert(next.end(), joining.begin(), joining.begin() + static_cast<std::ptrdiff_t>(leaving.size()));
        }
        std::sort(next.begin(), next.end());
        s.faults.push_back(config_fault(t, random_node(), v.name, next, current));
        s.faults.push_back(config_fault(t + rng.between(0, 50), random_node(), v.name, next, {}));  // refused
        s.faults.push_back(config_fault(t + rng.between(10, 60) * kMsPerSecond, random_node(), v.name, next, {}));
        if (!leaving.empty() && cut_rng.chance(0.6)) {
          const std::vector<std::string>& cut = leaving;
          std::vector<std::string> rest;
          for (const auto& n : nodes) {
            if (std::find(cut.begin(), cut.end(), n.id) == cut.end()) rest.push_back(n.id);
          }
          if (!rest.empty()) {
            FaultSpec p;
            p.kind = FaultSpec::Kind::kPartition;
            p.at_ms = std::max<int64_t>(1, t - cut_rng.between(0, 5) * kMsPerSecond);
            p.groups = {cut, rest};
            p.where = "swarm";
            cuts.push_back(p);
            p.at_ms = s.faults.back().at_ms + cut_rng.between(5, 40) * kMsPerSecond;
            p.groups.clear();  // the partition ends (cuts and one-way links stay)
            cuts.push_back(p);
          }
        }
      } else if (kind == 1 && !outside.empty() && current.size() < 5) {  // add one
        next.push_back(outside[rng.below(outside.size())]);
        std::sort(next.begin(), next.end());
        s.faults.push_back(config_fault(t, random_node(), v.name, next, {}));
      } else if (current.size() > 2) {  // remove one (after the others filled)
        next.erase(next.begin() + static_cast<std::ptrdiff_t>(rng.below(next.size())));
        s.faults.push_back(config_fault(t, random_node(), v.name, next, {}));
      } else {
        continue;
      }
      current = std::move(next);
      t += rng.between(60, 120) * kMsPerSecond;
    }
  }
  for (auto& c : cuts) {
    c.at_ms = std::min(c.at_ms, s.duration_ms - 1);
    s.faults.push_back(std::move(c));
  }
  // Within the fault phase only: the settle period must see the sets stand still.
  std::erase_if(s.faults, [&](const FaultSpec& f) { return f.kind == FaultSpec::Kind::kConfig && f.at_ms >= s.duration_ms; });
  std::stable_sort(s.faults.begin(), s.faults.end(),
                   [](const FaultSpec& a, const FaultSpec& b) { return a.at_ms < b.at_ms; });
}

}  // namespace

Scenario derive_swarm_scenario(uint64_t seed, const SwarmOptions& o) {
  Rng rng(seed ^ 0x5A4A4D5EEDULL);
  Scenario s;
  s.path = "swarm";
  s.name = "swarm seed " + std::to_string(seed);
  s.process = o.process;
  s.seed = seed;
  const int64_t n = o.nodes > 0 ? o.nodes : rng.between(3, 7);
  for (int64_t i = 1; i <= n; ++i) {
    NodeSpec node;
    node.id = "n" + std::to_string(i);
    node.gossip_addr = node.id + ":7946";
    node.stream_addr = node.id + ":7947";
    node.priority = rng.chance(0.5) ? rng.between(1, 10) : 0;
    s.cluster.nodes.push_back(std::move(node));
  }
  const int64_t volumes = rng.between(1, 3);
  for (int64_t v = 1; v <= volumes; ++v) {
    std::vector<uint32_t> order(static_cast<size_t>(n));
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    rng.shuffle(order.begin(), order.end());
    const int64_t replicas = std::min<int64_t>(n, rng.chance(0.7) ? 3 : 5);
    order.resize(static_cast<size_t>(replicas));
    std::sort(order.begin(), order.end());
    VolumeSpec vol;
    vol.name = "v" + std::to_string(v);
    for (uint32_t i : order) vol.replicas.push_back(s.cluster.nodes[i].id);
    s.cluster.volumes.push_back(std::move(vol));
  }
  NetworkParams& net = s.world.network;
  static const Distribution::Shape kShapes[] = {Distribution::Shape::kUniform,
                                                Distribution::Shape::kExponential,
                                                Distribution::Shape::kLognormal};
  net.latency.shape = kShapes[rng.below(3)];
  net.latency.base_ms = rng.between(0, 10);
  net.latency.jitter_ms = static_cast<double>(rng.between(0, 20));
  net.loss = sometimes(rng, 0.05);
  net.duplicate = sometimes(rng, 0.02);
  net.corrupt = sometimes(rng, 0.002);
  net.stream_corrupt = rng.chance(0.2) ? rng.unit() * 1e-4 : 0.0;
  s.world.disk_sync.base_ms = rng.between(0, 5);
  s.world.disk_sync.jitter_ms = static_cast<double>(rng.between(0, 20));
  s.world.handler.duration.shape = Distribution::Shape::kExponential;
  s.world.handler.duration.base_ms = rng.between(10, 500);
  s.world.handler.duration.jitter_ms = static_cast<double>(rng.between(0, 2000));
  s.world.handler.fail_probability = sometimes(rng, 0.1);
  s.duration_ms = o.duration_ms > 0 ? o.duration_ms : rng.between(2, 10) * kMsPerMinute;
  s.settle_ms = o.settle_ms;
  s.heal_at_end = true;

  RandomFaults& rf = s.random;
  do {
    rf.crash_rate = rng.chance(0.5) ? static_cast<double>(rng.between(2, 30)) : 0.0;
    rf.partition_rate = rng.chance(0.5) ? static_cast<double>(rng.between(2, 30)) : 0.0;
    rf.cut_rate = rng.chance(0.4) ? static_cast<double>(rng.between(2, 20)) : 0.0;
    rf.oneway_rate = rng.chance(0.4) ? static_cast<double>(rng.between(2, 20)) : 0.0;
    rf.slow_rate = rng.chance(0.3) ? static_cast<double>(rng.between(2, 20)) : 0.0;
    rf.skew_rate = rng.chance(0.3) ? static_cast<double>(rng.between(2, 20)) : 0.0;
  } while (!rf.any());
  rf.mean_duration_ms = rng.between(5, 60) * kMsPerSecond;
  rf.wipe_probability = sometimes(rng, 0.5);
  rf.slow_delay_ms = rng.between(500, 3000);
  rf.stop_ms = s.duration_ms;

  if (o.reconfig) add_replica_changes(seed, s);

  register_builtin_process_kinds();
  if (const ProcessKind* kind = find_process_kind(o.process); kind && kind->swarm_workload) {
    kind->swarm_workload(rng, s);
  }
  if (o.issue33_kinds) add_issue33_faults(seed, s);
  const int64_t prepare_ahead_ms = o.prepare_ahead_ms.value_or(schedule::SchedulerOptions{}.prepare_ahead_ms);
  if (o.issue33_kinds && prepare_ahead_ms > 0) add_prepared_churn(seed, s, prepare_ahead_ms);
  if (o.overlap) add_overlap_workload(seed, s);
  if (o.retries) add_retry_workload(seed, s);
  if (o.caps) add_caps_workload(seed, s);
  if (o.notify) add_notify_workload(seed, s);
  if (o.reconfig) s.swarm_kinds.insert("config");
  if (o.triggers && o.process == "node") {
    add_trigger_workload(seed, s);
    add_pause_workload(seed, s);
    s.swarm_kinds.insert("triggers");
  }
  if (o.prepare_ahead_ms) {
    auto options = std::make_shared<toml::table>(*s.node_options);
    options->insert_or_assign("prepare_ahead", std::to_string(*o.prepare_ahead_ms) + "ms");
    s.node_options = std::move(options);
  }
  return s;
}

// Entries "t/run<i>" of both semantics, created through one replica, then triggered
// through it at random (a trigger of an entry goes through the node that wrote it: a
// trigger is a read-modify-write of the entry, and two through different nodes at once
// keep only one, as for any two edits).  A keyed trigger is retried once or twice with
// its key, w = majority, so a retry sees the first (trigger.key).
WorkloadEntry workload_entry_on_a_volume(Rng& rng, const Scenario& s, std::string entity, std::string name) {
  WorkloadEntry w;
  const VolumeSpec& v = s.cluster.volumes[rng.below(s.cluster.volumes.size())];
  w.volume = v.name;
  w.via = v.replicas[rng.below(v.replicas.size())];
  w.entity = std::move(entity);
  w.name = std::move(name);
  return w;
}

void add_trigger_workload(uint64_t seed, Scenario& s) {
  if (s.cluster.volumes.empty()) return;
  Rng rng(seed ^ 0x7219E5ULL);
  const int64_t entries = rng.between(1, 3);
  const int64_t end_ms = std::max<int64_t>(s.duration_ms, kMsPerMinute);
  for (int64_t i = 0; i < entries; ++i) {
    WorkloadEntry w = workload_entry_on_a_volume(rng, s, "t", "run" + std::to_string(i));
    w.at_ms = rng.between(5, 20) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "noop";
    f["semantics"] = rng.chance(0.5) ? "at_most_once" : "at_least_once";
    if (rng.chance(0.5)) f["cron"] = "*/" + std::to_string(rng.between(10, 40)) + " * * * * *";
    else f["timer"] = {{"after", "5s"}};  // one pop, then only what is triggered
    f["misfire_window"] = "30m";
    w.fields = std::move(f);
    const WorkloadEntry created = w;
    s.workload.push_back(std::move(w));
    const int64_t triggers = rng.between(1, 6);
    for (int64_t k = 0; k < triggers; ++k) {
      WorkloadEntry t = created;
      t.fields = nlohmann::json::object();
      t.trigger = true;
      t.at_ms = rng.between(created.at_ms / kMsPerSecond + 5, end_ms / kMsPerSecond) * kMsPerSecond + rng.between(0, 999);
      const bool keyed = rng.chance(0.6);
      if (keyed) {
        t.idempotency_key = "seed" + std::to_string(seed) + "-" + std::to_string(i) + "-" + std::to_string(k);
        t.want_majority = true;
      }
      s.workload.push_back(t);
      const int64_t retries = keyed ? rng.between(0, 2) : 0;
      for (int64_t r = 0; r < retries; ++r) {
        t.at_ms += rng.between(1, 30) * kMsPerSecond;
        s.workload.push_back(t);
      }
    }
  }
}

void add_pause_workload(uint64_t seed, Scenario& s) {
  Rng rng(seed ^ 0x9A05EULL);
  std::vector<size_t> created;
  for (size_t i = 0; i < s.workload.size(); ++i) {
    const WorkloadEntry& w = s.workload[i];
    if (!w.remove && !w.pause && !w.trigger && !w.fields.empty()) created.push_back(i);
  }
  if (created.empty() || s.duration_ms < kMsPerMinute) return;
  const int64_t pauses = rng.between(1, 3);
  for (int64_t k = 0; k < pauses; ++k) {
    const WorkloadEntry& base = s.workload[created[rng.below(created.size())]];
    WorkloadEntry p;
    p.volume = base.volume;
    p.via = base.via;  // a pause rewrites the stored entry: through the node that wrote it
    p.entity = base.entity;
    p.name = base.name;
    p.where = "swarm pauses";
    p.pause = true;
    p.want_majority = rng.chance(0.5);
    p.at_ms = rng.between(base.at_ms / kMsPerSecond + 5, std::max(base.at_ms / kMsPerSecond + 6, s.duration_ms / kMsPerSecond)) *
              kMsPerSecond + rng.between(0, 999);
    WorkloadEntry r = p;
    r.pause = false;
    r.at_ms = p.at_ms + rng.between(10, 60) * kMsPerSecond;
    s.workload.push_back(std::move(p));
    if (rng.chance(0.8) && r.at_ms < s.duration_ms) s.workload.push_back(std::move(r));
  }
  std::stable_sort(s.workload.begin(), s.workload.end(),
                   [](const WorkloadEntry& a, const WorkloadEntry& b) { return a.at_ms < b.at_ms; });
  s.swarm_kinds.insert("pauses");
}

std::string swarm_replay_command(uint64_t seed, const SwarmOptions& o) {
  std::string cmd = "caesium sim --swarm --seeds " + std::to_string(seed) + ".." + std::to_string(seed);
  if (o.nodes > 0) cmd += " --nodes " + std::to_string(o.nodes);
  if (o.duration_ms > 0) cmd += " --duration " + format_duration_ms(o.duration_ms);
  if (o.process != "node") cmd += " --process " + o.process;
  if (o.reconfig) cmd += " --reconfig";
  if (o.prepare_ahead_ms) cmd += " --prepare-ahead " + format_duration_ms(*o.prepare_ahead_ms);
  if (!o.issue33_kinds) cmd += " --classic-faults";
  if (o.triggers) cmd += " --triggers";
  if (o.overlap) cmd += " --overlap";
  if (o.retries) cmd += " --retries";
  if (o.caps) cmd += " --caps";
  if (o.notify) cmd += " --notify";
  return cmd;
}

std::string describe_swarm_scenario(const Scenario& s) {
  char buf[256];
  const RandomFaults& r = s.random;
  std::snprintf(buf, sizeof buf,
                "nodes=%zu volumes=%zu run=%s loss=%.3f dup=%.3f corrupt=%.4f "
                "rates/h crash=%g part=%g cut=%g oneway=%g slow=%g skew=%g",
                s.cluster.nodes.size(), s.cluster.volumes.size(),
                format_duration_ms(s.duration_ms).c_str(), s.world.network.loss,
                s.world.network.duplicate, s.world.network.corrupt, r.crash_rate,
                r.partition_rate, r.cut_rate, r.oneway_rate, r.slow_rate, r.skew_rate);
  std::string out = buf;
  std::string kinds;
  for (const auto& k : s.swarm_kinds) kinds += (kinds.empty() ? "" : ",") + k;
  if (!kinds.empty()) out += " +" + kinds;
  return out;
}

}  // namespace caesium::sim
