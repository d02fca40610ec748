#include "sim/swarm.h"

#include <algorithm>
#include <cstdio>

#include "sim/registry.h"

namespace caesium::sim {

namespace {

// Half the time zero, otherwise uniform in (0, max].
double sometimes(Rng& rng, double max) { return rng.chance(0.5) ? 0.0 : rng.unit() * max; }

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

  register_builtin_process_kinds();
  if (const ProcessKind* kind = find_process_kind(o.process); kind && kind->swarm_workload) {
    kind->swarm_workload(rng, s);
  }
  return s;
}

std::string swarm_replay_command(uint64_t seed, const SwarmOptions& o) {
  std::string cmd = "caesium sim --swarm --seeds " + std::to_string(seed) + ".." + std::to_string(seed);
  if (o.nodes > 0) cmd += " --nodes " + std::to_string(o.nodes);
  if (o.duration_ms > 0) cmd += " --duration " + format_duration_ms(o.duration_ms);
  if (o.process != "node") cmd += " --process " + o.process;
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
  return buf;
}

}  // namespace caesium::sim
