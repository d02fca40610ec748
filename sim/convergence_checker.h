// ConvergenceChecker: at the end of a run that healed everything and settled, every up
// node must agree — through the processes' introspection methods (sim/process.h):
//   - member_view(): every up node sees every other up node alive, and no down node
//     as alive or suspect ("view_convergence");
//   - volume_digests(): all up replicas of each volume report the same digest
//     ("store_convergence").
// A process returning empty from a method is not judged on it.  Figures:
// "convergence.views_checked", "convergence.volumes_checked", "convergence.volumes_diverged".
#pragma once

#include "sim/checker.h"

namespace caesium::sim {

class ConvergenceChecker final : public Checker {
 public:
  // enforce = false: figures only, no violations (runs that end mid-fault).
  explicit ConvergenceChecker(bool enforce) : enforce_(enforce) {}
  void finish(const World& world, Report& report) override;

 private:
  bool enforce_;
};

}  // namespace caesium::sim
