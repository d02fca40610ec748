// ConvergenceChecker: after a run heals everything, every up node must come to agree —
// judged through the processes' introspection methods (sim/process.h):
//   - member_view(): every up node sees every other up node alive, and no down node as
//     alive or suspect;
//   - volume_digests(): all up replicas of a volume report the same digest.
//
// Stores keep changing while entries fire (occurrence state is volume state), so
// equality at one instant is luck, not convergence.  The runner therefore calls
// sample() every `sample_interval` from the final heal to the end; a volume (or the set
// of views) passes if it agreed at some sample, and the figures record how long after
// the heal that first happened.  Never agreeing is a violation when `enforce` is set:
// "view_convergence" / "store_convergence".  A process returning empty from a method is
// not judged on it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/checker.h"

namespace caesium::sim {

class ConvergenceChecker final : public Checker {
 public:
  // enforce = false: figures only, no violations (runs that end mid-fault).
  explicit ConvergenceChecker(bool enforce) : enforce_(enforce) {}

  // Marks the instant the final heal happened; samples measure from here.
  void healed(const World& world);
  // Looks at every up node's view and digests now.
  void sample(const World& world);
  void finish(const World& world, Report& report) override;

 private:
  struct VolumeState {
    int64_t agreed_ms = -1;  // first sample since the heal with one digest; -1 = never
    std::string last_split;  // how the replicas disagreed at the latest sample
  };

  bool enforce_;
  int64_t healed_ms_ = -1;
  uint64_t samples_ = 0;
  int64_t views_agreed_ms_ = -1;
  bool views_reported_ = false;  // some process implements member_view()
  std::string last_view_problem_;
  uint64_t last_view_problems_ = 0;
  std::map<std::string, VolumeState> volumes_;  // by name
};

}  // namespace caesium::sim
