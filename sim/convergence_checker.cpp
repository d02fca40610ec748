#include "sim/convergence_checker.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/report.h"
#include "sim/world.h"

namespace caesium::sim {

void ConvergenceChecker::healed(const World& world) { healed_ms_ = world.now_ms(); }

void ConvergenceChecker::sample(const World& world) {
  ++samples_;
  const int64_t now = world.now_ms();
  // Views.
  uint64_t problems = 0;
  std::string first_problem;
  for (uint32_t o = 0; o < world.node_count(); ++o) {
    if (!world.is_up(o)) continue;
    const auto view = world.process(o)->member_view();
    if (view.empty()) continue;
    views_reported_ = true;
    std::map<std::string, int> by_id(view.begin(), view.end());
    for (uint32_t s = 0; s < world.node_count(); ++s) {
      if (s == o) continue;
      auto it = by_id.find(world.spec(s).id);
      const int state = it == by_id.end() ? -1 : it->second;
      const bool ok = world.is_up(s) ? state == 0 : (state != 0 && state != 1);
      if (ok) continue;
      if (++problems == 1) {
        first_problem = world.spec(o).id + " sees " + world.spec(s).id + " as state " +
                        std::to_string(state) + " but it is " + (world.is_up(s) ? "up" : "down");
      }
    }
  }
  last_view_problems_ = problems;
  last_view_problem_ = first_problem;
  if (views_reported_ && problems == 0 && views_agreed_ms_ < 0) views_agreed_ms_ = now;

  // Stores: per volume, digest -> the up replicas reporting it.
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>> digests;
  for (uint32_t n = 0; n < world.node_count(); ++n) {
    if (!world.is_up(n)) continue;
    for (const auto& [volume, digest] : world.process(n)->volume_digests()) {
      digests[volume][digest].push_back(world.spec(n).id);
    }
  }
  for (const auto& [volume, by_digest] : digests) {
    VolumeState& v = volumes_[volume];
    if (by_digest.size() == 1) {
      if (v.agreed_ms < 0) v.agreed_ms = now;
      v.last_split.clear();
      continue;
    }
    std::string split;
    for (const auto& [digest, nodes] : by_digest) {
      split += " {";
      for (size_t i = 0; i < nodes.size(); ++i) split += (i ? "," : "") + nodes[i];
      split += "}";
    }
    v.last_split = split;
  }
}

void ConvergenceChecker::finish(const World& world, Report& report) {
  if (healed_ms_ < 0) healed_ms_ = 0;
  sample(world);
  const int64_t now = world.now_ms();
  report.set("convergence.samples", static_cast<double>(samples_));
  report.set("convergence.view_disagreements_at_end", static_cast<double>(last_view_problems_));
  if (views_reported_) {
    report.add_summary("convergence.views_ms",
                       views_agreed_ms_ >= 0 ? std::vector<int64_t>{views_agreed_ms_ - healed_ms_}
                                             : std::vector<int64_t>{});
  }
  if (enforce_ && views_reported_ && views_agreed_ms_ < 0) {
    report.violate({"view_convergence",
                    "member views never all agreed in " + format_duration_ms(now - healed_ms_) +
                        " after healing (" + std::to_string(last_view_problems_) +
                        " disagreements at the end; first: " + last_view_problem_ + ")",
                    now, ""});
  }
  std::vector<int64_t> store_ms;
  uint64_t never = 0;
  for (const auto& [volume, v] : volumes_) {
    if (v.agreed_ms >= 0) {
      store_ms.push_back(v.agreed_ms - healed_ms_);
      continue;
    }
    ++never;
    if (enforce_) {
      report.violate({"store_convergence",
                      "volume " + volume + " never had one digest on all its up replicas in " +
                          format_duration_ms(now - healed_ms_) +
                          " after healing; at the end:" + v.last_split,
                      now, ""});
    }
  }
  // Cluster configs: the number of different ones the up nodes hold at the end (1:
  // converged).  Two of the same epoch are kept apart and never merge (docs/design.md §4), so
  // a run whose config faults came through two nodes at once, before either had heard of
  // the other's, ends with 2.  A figure, not a violation: it is the operator's conflict
  // to resolve with a higher epoch, which the swarm does not do (docs/simulator.md).
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::string>> configs;
  for (uint32_t n = 0; n < world.node_count(); ++n) {
    if (!world.is_up(n)) continue;
    if (auto id = world.process(n)->config_identity()) configs[*id].push_back(world.spec(n).id);
  }
  if (!configs.empty()) report.set("convergence.configs_at_end", static_cast<double>(configs.size()));
  report.set("convergence.volumes_checked", static_cast<double>(volumes_.size()));
  report.set("convergence.volumes_never_agreed", static_cast<double>(never));
  report.add_summary("convergence.store_ms", store_ms);
}

}  // namespace caesium::sim
