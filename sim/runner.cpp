#include "sim/runner.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "sim/convergence_checker.h"
#include "sim/expect.h"
#include "sim/membership_checker.h"
#include "sim/random_faults.h"
#include "sim/registry.h"
#include "sim/world.h"

namespace caesium::sim {

namespace {

std::vector<uint32_t> indices(const World& w, const std::vector<std::string>& ids) {
  std::vector<uint32_t> out;
  for (const auto& id : ids) out.push_back(static_cast<uint32_t>(w.index_of(id)));
  return out;
}

// Applies one timeline fault.  Ids were validated by validate_scenario.
void apply(World& w, const FaultSpec& f) {
  switch (f.kind) {
    case FaultSpec::Kind::kPartition: {
      std::vector<std::vector<uint32_t>> groups;
      for (const auto& g : f.groups) groups.push_back(indices(w, g));
      w.partition(groups);
      break;
    }
    case FaultSpec::Kind::kHeal:
      if (f.pairs.empty()) {
        w.heal_all();
      } else {
        for (const auto& [a, b] : f.pairs) {
          w.heal_pair(static_cast<uint32_t>(w.index_of(a)), static_cast<uint32_t>(w.index_of(b)));
        }
      }
      break;
    case FaultSpec::Kind::kCut:
      for (const auto& [a, b] : f.pairs) {
        w.cut(static_cast<uint32_t>(w.index_of(a)), static_cast<uint32_t>(w.index_of(b)));
      }
      break;
    case FaultSpec::Kind::kOneway:
      for (const auto& [a, b] : f.pairs) {
        w.oneway(static_cast<uint32_t>(w.index_of(a)), static_cast<uint32_t>(w.index_of(b)));
      }
      break;
    case FaultSpec::Kind::kCrash:
      for (uint32_t n : indices(w, f.nodes)) w.crash(n);
      break;
    case FaultSpec::Kind::kRestart:
      for (uint32_t n : indices(w, f.nodes)) w.restart(n, f.wipe_disk);
      break;
    case FaultSpec::Kind::kLeave:
      for (uint32_t n : indices(w, f.nodes)) w.leave(n);
      break;
    case FaultSpec::Kind::kSkew:
      for (uint32_t n : indices(w, f.nodes)) w.set_skew(n, f.offset_ms, f.drift);
      break;
    case FaultSpec::Kind::kSlow:
      for (uint32_t n : indices(w, f.nodes)) w.set_slow(n, f.delay_ms, f.for_ms, f.inbound_only);
      break;
    case FaultSpec::Kind::kConfig:
      w.reconfigure(static_cast<uint32_t>(w.index_of(f.nodes.at(0))), f.volume, f.replicas, f.previous_replicas);
      break;
  }
}

// The end of the fault phase: everything the protocol must recover from is undone.
void heal_everything(World& w) {
  w.heal_all();
  w.heal_slowness();
  for (uint32_t i = 0; i < w.node_count(); ++i) {
    if (!w.is_up(i)) w.restart(i, false);
  }
}

}  // namespace

Result<Report> run_scenario(const Scenario& s, const RunOptions& options) {
  register_builtin_process_kinds();
  const ProcessKind* kind = find_process_kind(s.process);
  if (!kind) {
    std::string known;
    for (const auto& name : process_kind_names()) known += (known.empty() ? "" : ", ") + name;
    return Error(s.path + ": process kind '" + s.process + "' is not available (registered: " +
                     known + ")" +
                     (s.process == "node" ? "; the real node process is not built into this binary yet" : ""),
                 "process");
  }
  if (kind->validate) {
    Status st = kind->validate(s);
    if (!st.ok()) return st.error();
  }
  WorldOptions wo = s.world;
  wo.seed = options.seed;
  wo.node_options = s.node_options;
  wo.handler.slowness.assign(s.cluster.nodes.size(), 1.0);
  for (size_t i = 0; i < s.cluster.nodes.size(); ++i) {
    auto it = s.handler_slowness.find(s.cluster.nodes[i].id);
    if (it != s.handler_slowness.end()) wo.handler.slowness[i] = it->second;
  }
  // A generous cap on the whole run, so a livelock in which virtual time still creeps
  // forward ends too: steady runs take tens of events per node per virtual second,
  // bursts a few thousand.
  const uint64_t node_seconds = s.cluster.nodes.size() * static_cast<uint64_t>(s.end_ms() / kMsPerSecond + 1);
  wo.max_events = std::max<uint64_t>(100'000'000, 20'000 * node_seconds);
  World world(s.cluster, wo, kind->factory);
  if (options.trace) world.set_trace_sink(options.trace);

  MembershipChecker::Options mo = s.membership;
  mo.require_convergence_at_end = s.heal_at_end && s.settle_ms > 0;
  MembershipChecker membership(mo);
  ConvergenceChecker convergence(s.heal_at_end && s.settle_ms > 0);
  world.add_checker(&membership);
  world.add_checker(&convergence);
  std::vector<std::unique_ptr<Checker>> extra;
  if (kind->make_checkers) extra = kind->make_checkers(s);
  for (auto& c : extra) world.add_checker(c.get());

  world.start();
  for (size_t i = 0; i < s.workload.size(); ++i) {
    const WorkloadEntry& e = s.workload[i];
    const auto via = static_cast<uint32_t>(world.index_of(e.via));
    EntryWrite write;
    write.remove = e.remove;
    write.pause = e.pause;
    write.trigger = e.trigger;
    write.idempotency_key = e.idempotency_key;
    write.volume = e.volume;
    write.entity = e.entity;
    write.name = e.name;
    if (!e.remove && !e.pause && !e.trigger) write.json = e.fields.dump();
    write.want_acks = e.want_acks;
    world.at(e.at_ms, [&world, &e, i, via, write] { world.write_entry(via, i, write, e.want_majority); });
  }
  std::vector<FaultSpec>* log = options.applied_faults;
  for (const FaultSpec& f : s.faults) {
    world.at(f.at_ms, [&world, &f, log] {
      apply(world, f);
      if (log) log->push_back(f);
    });
  }
  RandomFaultDriver random(world, s.random, s.duration_ms, Rng(options.seed ^ 0xFA017ULL).next_u64());
  random.set_log(log);
  random.schedule();
  if (s.heal_at_end) {
    world.at(s.duration_ms, [&world, &convergence] {
      heal_everything(world);
      convergence.healed(world);
    });
    // Convergence is judged on samples through the settle period (see
    // convergence_checker.h): once a second, after the heal's own events.
    for (int64_t t = s.duration_ms + kMsPerSecond; t < s.end_ms(); t += kMsPerSecond) {
      world.at(t, [&world, &convergence] { convergence.sample(world); });
    }
  }

  world.run_until(s.end_ms());

  Report report;
  report.scenario = s.path;
  report.seed = options.seed;
  report.replay = options.replay;
  world.finish(report);
  if (s.random.any()) random.write_figures(report);
  evaluate_expect(s.expect, report);
  return report;
}

}  // namespace caesium::sim
