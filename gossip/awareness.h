// Awareness: Lifeguard's local health score (Lifeguard §IV-A, "Local Health Multiplier").
//
// The score estimates how badly *this* node is keeping up with the soft real-time work
// that failure detection needs.  0 is healthy; the score never leaves
// [0, max_multiplier - 1].  Membership raises it on evidence that we are slow (a probe
// whose relays' nacks did not arrive, a failed probe with no nack check, having to refute
// a suspicion about ourselves) and lowers it on every successful probe.  Timeouts are
// scaled by (score + 1), so a slow node waits longer before accusing anyone: it blames
// itself before it blames its peers.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace caesium::gossip {

class Awareness {
 public:
  // REQUIRES: max_multiplier >= 1 (1 means the score is pinned at 0: awareness off).
  explicit Awareness(int max_multiplier) : max_(max_multiplier) { assert(max_multiplier >= 1); }

  // Adds `delta` and clamps into [0, max_multiplier - 1].  Returns true if the score moved.
  bool apply(int delta) {
    const int before = score_;
    score_ = std::clamp(score_ + delta, 0, max_ - 1);
    return score_ != before;
  }

  int score() const { return score_; }
  int max_multiplier() const { return max_; }

  // `base_ms` stretched by the current health: base * (score + 1).
  int64_t scale(int64_t base_ms) const { return base_ms * (score_ + 1); }

  void check_invariants() const {
    assert(score_ >= 0);
    assert(score_ < max_);
  }

 private:
  int max_;
  int score_ = 0;
};

}  // namespace caesium::gossip
