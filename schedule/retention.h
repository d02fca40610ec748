// RetentionSweep: drops a volume store's occurrence records once they are past the
// occurrence retention, a bounded number of records at a time.
//
// Occurrence keys sort by entity and name before their instant (schedule/occurrence.h),
// so finding the expired ones means visiting every occurrence record.  At a sustained
// rate the store holds rate x retention of them (100 occurrences/s for 24 h: ~20 M
// records), and one pass over them all used to run inside one maintenance call: a stall
// of seconds in the event loop, long enough for peers to suspect the node.  A sweep
// remembers the last key it visited and goes on from there at the next step, so each
// step costs at most `max_visits` records, and the loop serves I/O between steps.
//
// A pass visits every record present when it starts (keys added behind the cursor during
// the pass wait for the next pass, and are at most one maintenance interval older than
// they would otherwise be when dropped: retention is a lower bound, not a deadline).
// Sans-IO; the caller owns the store and calls step() until it returns true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "schedule/store.h"

namespace caesium::schedule {

class RetentionSweep {
 public:
  // Starts a pass from the first occurrence record, unless one is running.
  void start() {
    if (running_) return;
    running_ = true;
    cursor_.clear();
  }
  bool running() const { return running_; }

  struct Step {
    size_t visited = 0;
    size_t dropped = 0;
    bool done = false;  // the pass reached the last occurrence record (running() is false)
  };
  // Visits at most max_visits (>= 1) occurrence records after the cursor and drops, without
  // tombstones, those scheduled before horizon_utc_ms and those whose key does not parse
  // (nobody can read them).  Does nothing and reports done when no pass is running.
  Step step(VolumeStore& store, int64_t horizon_utc_ms, size_t max_visits);

 private:
  bool running_ = false;
  std::string cursor_;  // the last key visited; empty: from the start
};

}  // namespace caesium::schedule
