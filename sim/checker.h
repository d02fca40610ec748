// Checkers watch a run and turn it into figures and invariant violations.
//
// The World calls every registered checker synchronously, at the virtual instant the
// thing happens, after the World's own state reflects it (a crashed node is already
// down when on_fault(crash) runs).  finish() is called once at the end; it writes
// figures and violations into the Report.  Checkers may query the World (it is const
// here) for ground truth: who is up, who can reach whom, and the histories of both.
//
// To add a checker (e.g. the firing checker: at-most-once / at-least-once / lateness),
// derive from Checker and hand it to the runner (ProcessKind::make_checkers in
// sim/registry.h) — no simulator file needs to change.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/process.h"

namespace caesium::sim {

class World;
struct Report;

// One handler run, as the simulator saw it.
struct Execution {
  int64_t start_ms = 0;        // virtual time the invocation was emitted
  int64_t start_utc_ms = 0;    // the executing node's realtime clock then
  uint32_t node = 0;           // executing node
  uint32_t generation = 0;     // process lifetime on that node
  Invocation invocation;       // everything the handler was given
  // kTimedOut: stopped at the entry's timeout (Invocation::timeout_ms), a hang included.
  // kReplaced: stopped by its node for a later occurrence (overlap = replace).
  enum class Outcome : uint8_t { kRunning = 0, kOk = 1, kFailed = 2, kAbandoned = 3, kHung = 4, kTimedOut = 5,
                                 kReplaced = 6 };
  Outcome outcome = Outcome::kRunning;  // kAbandoned: the node crashed first
  int64_t done_ms = -1;                 // when it completed (kOk/kFailed)
};

// One workload write (put or delete) as the World performed it: ground truth for when it
// was acknowledged (World::writes(), in issue order; id = index + 1).
struct WriteRecord {
  uint64_t id = 0;
  size_t workload = 0;      // index into Scenario::workload
  uint32_t node = 0;        // the node whose API took it
  bool remove = false;
  std::string volume, key;  // key: "<entity>/caesium/schedule/<name>"
  uint32_t want_acks = 1;   // replicas (the taking node included) it waited for
  int64_t issued_ms = -1;   // -1: never issued (the node was down)
  int64_t acked_ms = -1;    // durable on the taking node and on want_acks - 1 others; -1: never
};

enum class FaultKind : uint8_t {
  kCrash = 0,
  kRestart = 1,     // detail "wipe" when the disk was wiped
  kLeave = 2,       // graceful leave requested
  kStopped = 3,     // the process of a leaving node stopped
  kPartition = 4,
  kCut = 5,
  kOneway = 6,
  kHeal = 7,        // nodes empty: everything healed
  kSkew = 8,
  kSlow = 9,
  kSlowEnd = 10,
  kConfig = 11,     // a cluster config change applied on `nodes` (detail: volume and sets)
};

const char* fault_name(FaultKind kind);

struct FaultRecord {
  int64_t time_ms = 0;
  FaultKind kind = FaultKind::kCrash;
  std::vector<uint32_t> nodes;  // the nodes involved (for cut/oneway: from, to)
  std::string detail;
};

class Checker {
 public:
  virtual ~Checker() = default;
  // Before the first event; every node has been started.
  virtual void on_start(const World& world) { (void)world; }
  virtual void on_execution(const World& world, const Execution& execution) {
    (void)world, (void)execution;
  }
  // A handler run finished (ok or failed); `execution` is already updated.
  virtual void on_execution_done(const World& world, const Execution& execution) {
    (void)world, (void)execution;
  }
  virtual void on_observation(const World& world, uint32_t node, const Observation& obs) {
    (void)world, (void)node, (void)obs;
  }
  virtual void on_fault(const World& world, const FaultRecord& fault) { (void)world, (void)fault; }
  // The run is over (World::now_ms() is the end): write figures and violations.
  virtual void finish(const World& world, Report& report) = 0;
};

}  // namespace caesium::sim
