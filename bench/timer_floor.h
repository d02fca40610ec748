// The cluster benchmark's same-run baseline: what firing N durable one-shot timers costs
// one process on this machine with nothing distributed about it.
//
// One libuv loop holds the N due instants in order (like a delayed-job queue's sorted
// set) and one timer for the earliest.  When timers fall due, each gets a "fired" record
// put into the same LMDB storage the nodes use (node/daemon/storage/lmdb_storage.h: group commit
// at the end of the loop iteration, one write transaction and one fsync per group, off
// the loop thread); an occurrence counts as fired when its record is durable.  No
// replicas, no claims, no handler process, no network: the floor under any scheduler
// that records its firings durably, measured beside the cluster so that the ratio
// between the two does not move with the machine's speed.
#pragma once

#include <cstdint>
#include <string>

namespace caesium::bench {

struct FloorFigures {
  int64_t due = 0;
  int64_t fired = 0;         // durable before the run ended
  double occ_per_s = 0;      // fired / (last durable firing - T0), at most due / window
  double late_p50 = 0, late_p99 = 0, late_max = 0;  // ms: durable - due instant
  double cpu_us_per_occurrence = 0;  // this process's user + system time while firing
  int64_t groups = 0;        // commits (fsyncs) that recorded firings
};

// Runs the baseline with the entries due T0 + i·window/N; data goes under `dir` (created,
// removed afterwards).  False with `error` set when storage cannot be opened or a commit
// fails.
bool run_timer_floor(int64_t entries, int64_t window_ms, const std::string& dir, FloorFigures& out,
                     std::string& error);

}  // namespace caesium::bench
