// MembershipChecker: failure-detector figures from the processes' kMemberState
// observations, judged against the World's ground truth.
//
// Definitions (docs/simulator.md repeats them for readers of the report):
//   false suspicion  observer O marks subject S suspect while S was up, not slow, and
//                    O<->S were linked both ways during the whole preceding
//                    `suspect_window_ms` (so nothing real could have caused it).
//                    Loss does not excuse a suspicion: S was alive and reachable.
//                    A slow S is counted apart ("suspicions_of_slow"), not as false.
//   false death      the same for a transition to dead (or left, when S did not leave),
//                    with the longer `dead_window_ms` (suspicion timeouts are long).
//   detection        per crash of S: crash -> first suspect / first dead anywhere;
//                    crash -> dead in the views of 99.9% / all of the observers (nodes up
//                    at the crash and still up when the measurement closes: S restarts
//                    or the run ends).  Observers that never learn count as "undetected".
//   dissemination    first dead anywhere -> dead in 99.9% / all of the observers' views
//                    (the gossip spread of one update); restart of S -> S alive in
//                    every up node's view ("join"); leave -> left/dead everywhere.
//   convergence      a pair (O, S), O up, is "bad" when S is up and O's view of S is not
//                    alive, or S is down and O's view says alive or suspect.  After each
//                    heal / restart / end of slowness, the time until no pair is bad;
//                    a measurement interrupted by a new fault is dropped.
// A process must report every change of its view, including the first time it learns a
// member (as alive); a restarted process starts with an empty view.
#pragma once

#include <cstdint>
#include <vector>

#include "base/time.h"
#include "sim/checker.h"

namespace caesium::sim {

class MembershipChecker final : public Checker {
 public:
  struct Options {
    int64_t suspect_window_ms = 5 * kMsPerSecond;
    int64_t dead_window_ms = 30 * kMsPerSecond;
    // At the end of the run every pair must agree (swarm / heal_at_end runs); a
    // disagreement is the "membership_convergence" violation.  Ignored when the process
    // reports no membership observations at all.
    bool require_convergence_at_end = false;
  };
  MembershipChecker() : MembershipChecker(Options{}) {}
  explicit MembershipChecker(Options options) : options_(options) {}

  void on_start(const World& world) override;
  void on_observation(const World& world, uint32_t node, const Observation& obs) override;
  void on_fault(const World& world, const FaultRecord& fault) override;
  void finish(const World& world, Report& report) override;

  // Pairs whose view disagrees with ground truth right now (0 = converged).
  uint64_t bad_pairs() const { return bad_; }

 private:
  struct Detection {
    uint32_t subject = 0;
    int64_t crash_ms = 0;
    int64_t first_suspect_ms = -1;
    int64_t first_dead_ms = -1;
    std::vector<uint32_t> observers;      // up at the crash
    std::vector<int64_t> dead_seen_ms;    // per observer slot; -1 = not yet
  };
  struct Spread {  // join or leave dissemination
    uint32_t subject = 0;
    int64_t start_ms = 0;
    int target_state = 0;               // alive for join, left/dead for leave
    std::vector<uint32_t> observers;
    std::vector<int64_t> seen_ms;
  };

  int8_t& view(uint32_t o, uint32_t s) { return view_[static_cast<size_t>(o) * n_ + s]; }
  bool is_bad(const World& world, uint32_t o, uint32_t s) const;
  void set_view(const World& world, uint32_t o, uint32_t s, int8_t state);
  void node_changed(const World& world, uint32_t node, bool reset_row);
  void close_detection(const World& world, Detection& d);
  void close_spread(const World& world, Spread& sp, std::vector<int64_t>& out);
  void check_converged(const World& world);

  Options options_;
  size_t n_ = 0;
  std::vector<int8_t> view_;     // n_ x n_, -1 = unknown
  std::vector<uint8_t> up_;      // last known ground truth per node
  std::vector<uint8_t> left_;    // node left gracefully (its dead/left is not false)
  uint64_t bad_ = 0;
  bool any_observation_ = false;

  std::vector<Detection> open_detections_;
  std::vector<Spread> open_joins_, open_leaves_;
  int64_t converge_since_ms_ = -1;  // -1: not measuring
  bool startup_pending_ = true;     // the first convergence is the cluster forming

  uint64_t events_[4] = {0, 0, 0, 0};
  uint64_t false_suspicions_ = 0, false_deaths_ = 0, suspicions_of_slow_ = 0;
  uint64_t undetected_ = 0, convergence_interrupted_ = 0;
  std::vector<int64_t> since_ms_;  // per (observer, subject): when the view last changed
  std::vector<int64_t> first_suspect_, first_dead_, dead_999_, dead_all_, dissem_dead_,
      dissem_dead_999_;
  std::vector<int64_t> join_, leave_, converge_, startup_;
};

}  // namespace caesium::sim
