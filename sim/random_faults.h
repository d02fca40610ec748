// RandomFaultDriver: the scenario's [random_faults] as Poisson processes on the World.
//
// Arrival times of each fault type are drawn up front from a dedicated Rng (forked from
// the run seed), so the plan depends only on the seed.  Each arrival, when it comes due,
// checks the World (is the node already down?  would this exceed max_down?) and either
// applies the fault and schedules its own repair after an exponential duration, or
// skips (counted).  Repairs undo only what that fault did:
//   crash     -> restart (disk wiped with wipe_probability)
//   partition -> a random split into two groups; cleared unless a newer one replaced it
//   cut       -> a random pair cut both ways; that pair healed
//   oneway    -> a random direction dropped; that pair healed
//   slow      -> a random node slowed by slow_delay for the duration
//   skew      -> a random node's clock offset uniformly within +-max_skew, drift
//                within +-100 ppm; skew is never repaired (it is within the bound)
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "base/rng.h"
#include "sim/scenario.h"
#include "sim/world.h"

namespace caesium::sim {

class RandomFaultDriver {
 public:
  RandomFaultDriver(World& world, const RandomFaults& spec, int64_t default_stop_ms, uint64_t seed);
  // Schedules every arrival on the World.  Call once, before running.
  void schedule();
  // Figures: "random_faults.<kind>" applied and "random_faults.skipped".
  void write_figures(Report& report) const;
  // Appends every fault and repair this driver applies, as the timeline fault that does
  // the same, when it applies it (for --dump-scenario).  Null: no log.
  void set_log(std::vector<FaultSpec>* log) { log_ = log; }

 private:
  void plan(const char* kind, double rate_per_hour, void (RandomFaultDriver::*apply)());
  void crash();
  void partition();
  void cut();
  void oneway();
  void slow();
  void skew();
  int64_t hold_ms() { return 1 + static_cast<int64_t>(-std::log1p(-rng_.unit()) * static_cast<double>(spec_.mean_duration_ms)); }
  size_t down_count() const;
  // Two different random nodes.  REQUIRES: at least two nodes.
  std::pair<uint32_t, uint32_t> random_pair();
  void count(const char* kind) { ++applied_[kind]; }
  void log(FaultSpec::Kind kind, std::vector<uint32_t> nodes, const std::function<void(FaultSpec&)>& fill = {});

  World& world_;
  RandomFaults spec_;
  int64_t stop_ms_;
  Rng rng_;
  uint64_t partition_token_ = 0;
  std::map<std::string, uint64_t> applied_;
  uint64_t skipped_ = 0;
  std::vector<FaultSpec>* log_ = nullptr;
};

}  // namespace caesium::sim
