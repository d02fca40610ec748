#include "sim/convergence_checker.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/report.h"
#include "sim/world.h"

namespace caesium::sim {

void ConvergenceChecker::finish(const World& world, Report& report) {
  uint64_t views = 0, view_problems = 0;
  std::string first_problem;
  for (uint32_t o = 0; o < world.node_count(); ++o) {
    if (!world.is_up(o)) continue;
    const auto view = world.process(o)->member_view();
    if (view.empty()) continue;
    ++views;
    std::map<std::string, int> by_id(view.begin(), view.end());
    for (uint32_t s = 0; s < world.node_count(); ++s) {
      if (s == o) continue;
      auto it = by_id.find(world.spec(s).id);
      const int state = it == by_id.end() ? -1 : it->second;
      const bool ok = world.is_up(s) ? state == 0 : (state != 0 && state != 1);
      if (!ok) {
        ++view_problems;
        if (first_problem.empty()) {
          first_problem = world.spec(o).id + " sees " + world.spec(s).id + " as state " +
                          std::to_string(state) + " but it is " +
                          (world.is_up(s) ? "up" : "down");
        }
      }
    }
  }
  report.set("convergence.views_checked", static_cast<double>(views));
  report.set("convergence.view_disagreements", static_cast<double>(view_problems));
  if (enforce_ && view_problems > 0) {
    report.violate({"view_convergence",
                    std::to_string(view_problems) + " member views disagree after settling; first: " +
                        first_problem,
                    world.now_ms(), ""});
  }

  // Per volume: digest -> the up replicas reporting it.
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>> digests;
  for (uint32_t n = 0; n < world.node_count(); ++n) {
    if (!world.is_up(n)) continue;
    for (const auto& [volume, digest] : world.process(n)->volume_digests()) {
      digests[volume][digest].push_back(world.spec(n).id);
    }
  }
  uint64_t diverged = 0;
  for (const auto& [volume, by_digest] : digests) {
    if (by_digest.size() <= 1) continue;
    ++diverged;
    if (!enforce_) continue;
    std::string detail = "volume " + volume + " has " + std::to_string(by_digest.size()) +
                         " different digests among its up replicas:";
    for (const auto& [digest, nodes] : by_digest) {
      detail += " {";
      for (size_t i = 0; i < nodes.size(); ++i) detail += (i ? "," : "") + nodes[i];
      detail += "}";
    }
    report.violate({"store_convergence", detail, world.now_ms(), ""});
  }
  report.set("convergence.volumes_checked", static_cast<double>(digests.size()));
  report.set("convergence.volumes_diverged", static_cast<double>(diverged));
}

}  // namespace caesium::sim
