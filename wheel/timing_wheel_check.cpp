// TimingWheel::check_invariants: the full O(pending + slab) audit of I1-I5 from
// timing_wheel.h, kept apart from the hot paths.
#include <string>

#include "wheel/timing_wheel.h"

namespace caesium::wheel {

namespace {

Error violation(const std::string& what) { return Error("timing wheel invariant violated: " + what); }

}  // namespace

Status TimingWheel::check_invariants() const {
  if (in_poll_) return violation("check_invariants called from inside poll");
  if (elapsed_ != biased(now_ms_)) return violation("elapsed differs from now between polls");

  // I1 from the nodes' side, and I2.
  size_t pending_nodes = 0;
  for (uint32_t index = 0; index < high_water_; ++index) {
    const Node& n = node(index);
    if (n.bucket == kFreeBucket) continue;
    ++pending_nodes;
    auto who = [index] { return "node " + std::to_string(index); };
    if (n.bucket > kOverdue) return violation(who() + " has bucket id " + std::to_string(n.bucket));
    const detail::Bucket& b = buckets_[n.bucket];
    if (n.pos >= b.entries.size() || b.entries[n.pos] != index) {
      return violation(who() + " is not at its recorded position in bucket " + std::to_string(n.bucket));
    }
    if (n.bucket == kOverdue) {
      if (n.deadline_ms > now_ms_) return violation(who() + " is overdue but its deadline is in the future");
    } else {
      if (n.deadline_ms <= now_ms_) return violation(who() + " is due but not in the overdue bucket");
      if (bucket_for(biased(n.deadline_ms)) != n.bucket) {
        return violation(who() + " is in bucket " + std::to_string(n.bucket) + ", not where its deadline belongs");
      }
    }
    if (n.deadline_ms < b.min_deadline_ms) return violation(who() + " is below its bucket's minimum deadline");
  }
  if (pending_nodes != size_) return violation("size() disagrees with the slab");

  // I1 from the buckets' side, and I3.
  for (uint16_t id = 0; id <= kOverdue; ++id) {
    const detail::Bucket& b = buckets_[id];
    uint32_t live = 0;
    for (uint32_t i = 0; i < b.entries.size(); ++i) {
      const uint32_t index = b.entries[i];
      if (index == detail::kTombstone) continue;
      ++live;
      if (index >= high_water_ || node(index).bucket != id || node(index).pos != i) {
        return violation("bucket " + std::to_string(id) + " holds an entry that does not point back");
      }
    }
    if (live != b.live) return violation("bucket " + std::to_string(id) + " miscounts its live entries");
    if (b.live == 0 && b.entries.size() != 0) return violation("bucket " + std::to_string(id) + " is empty but not reset");
    if (id == kOverdue) continue;
    const int level = id / kSlotsPerLevel;
    const int slot = id % kSlotsPerLevel;
    const bool bit = (occupied_[level][slot / 64] >> (slot % 64)) & 1;
    if (bit != (b.live > 0)) return violation("occupancy bit of bucket " + std::to_string(id) + " is wrong");
  }
  for (int level = 0; level < kLevels; ++level) {
    const uint64_t* w = occupied_[level];
    const bool any = (w[0] | w[1] | w[2] | w[3]) != 0;
    if (any != (((level_mask_ >> level) & 1) != 0)) return violation("level mask is wrong at level " + std::to_string(level));
  }

  // I5: the free list holds exactly the free nodes, without cycles.
  size_t free_nodes = 0;
  for (uint32_t index = free_head_; index != kNil; index = node(index).pos) {
    if (index >= high_water_ || node(index).bucket != kFreeBucket) return violation("free list reaches a pending node");
    if (++free_nodes > high_water_) return violation("free list has a cycle");
  }
  if (free_nodes + size_ != high_water_) return violation("free list misses some free nodes");
  return Status::success();
}

}  // namespace caesium::wheel
