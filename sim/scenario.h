// A scenario: the cluster, the network, the workload, a timeline of faults, random
// fault processes and the expected outcome — loaded from TOML (tests/sim/*.toml,
// format in tests/sim/README.md) or generated from a seed by the swarm (sim/swarm.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "base/result.h"
#include "base/time.h"
#include "sim/cluster.h"
#include "sim/distribution.h"
#include "sim/membership_checker.h"
#include "sim/world.h"

namespace caesium::sim {

struct FaultSpec {
  enum class Kind : uint8_t { kPartition, kHeal, kCut, kOneway, kCrash, kRestart, kLeave, kSkew, kSlow, kConfig };
  Kind kind = Kind::kCrash;
  int64_t at_ms = 0;
  std::vector<std::vector<std::string>> groups;               // partition
  std::vector<std::pair<std::string, std::string>> pairs;     // cut, oneway (from, to), heal
  std::vector<std::string> nodes;                             // crash, restart, leave, skew, slow; config: via
  bool wipe_disk = false;                                     // restart
  int64_t offset_ms = 0;                                      // skew
  double drift = 0;                                           // skew
  int64_t delay_ms = 0;                                       // slow
  int64_t for_ms = kNever;                                    // slow
  bool inbound_only = false;                                  // slow: timers stay on time
  std::string volume;                                         // config
  std::vector<std::string> replicas, previous_replicas;       // config
  std::string where;                                          // "file:line" for messages
};

struct WorkloadEntry {
  int64_t at_ms = 0;
  std::string via;  // node id receiving the API write
  std::string volume, entity, name;
  nlohmann::json fields = nlohmann::json::object();  // the entry itself, as for the HTTP API
  bool remove = false;        // op = "delete" (no fields); a put of an existing entry is an edit
  std::optional<bool> pause;  // op = "pause" (true) / "resume" (false): the stored entry, paused or not (no fields)
  bool trigger = false;       // op = "trigger": run now (POST .../trigger; no fields)
  std::string idempotency_key;  // op = "trigger", key = "...": its Idempotency-Key ("" = none)
  uint32_t want_acks = 1;     // w = N: wait for N replicas' durable acknowledgements (?w=N)
  bool want_majority = false; // w = "majority": a majority of the volume's replicas
  std::string where;          // "file:line" for messages
};

// Poisson fault processes over [start_ms, stop_ms); rates are events per hour for the
// whole cluster.  Each fault lasts an exponential time with mean `mean_duration_ms`,
// then heals itself (crashed nodes restart, wiping their disk with wipe_probability).
struct RandomFaults {
  double crash_rate = 0, partition_rate = 0, oneway_rate = 0, cut_rate = 0, slow_rate = 0,
         skew_rate = 0;
  int64_t mean_duration_ms = 30 * kMsPerSecond;
  double wipe_probability = 0;
  int64_t start_ms = 0;
  int64_t stop_ms = -1;       // -1 = the end of `duration`
  int64_t max_down = -1;      // nodes crashed at once; -1 = a minority, (n - 1) / 2
  int64_t slow_delay_ms = 2 * kMsPerSecond;
  bool any() const {
    return crash_rate > 0 || partition_rate > 0 || oneway_rate > 0 || cut_rate > 0 ||
           slow_rate > 0 || skew_rate > 0;
  }
};

struct Expectation {
  enum class Op : uint8_t { kEqual, kMin, kMax };
  std::string figure;
  Op op = Op::kEqual;
  double value = 0;
  std::string where;
};

struct Expect {
  std::optional<uint64_t> violations;        // exact number of violations expected
  std::vector<std::string> violation_kinds;  // each must occur; no other kind may
  std::vector<Expectation> checks;
};

struct Scenario {
  std::string path = "<generated>";
  std::string name;
  std::string process = "node";  // process kind (sim/registry.h)
  uint64_t seed = 1;
  int64_t duration_ms = 10 * kMsPerMinute;
  int64_t settle_ms = 0;
  bool heal_at_end = false;  // at `duration`: heal all, restart crashed nodes, end slowness
  ClusterSpec cluster;
  std::shared_ptr<const toml::table> node_options = std::make_shared<toml::table>();
  WorldOptions world;  // network, disk, handler model, epoch, skew bound (seed set by the runner)
  std::map<std::string, double> handler_slowness;  // node id -> multiplier
  MembershipChecker::Options membership;
  std::vector<WorkloadEntry> workload;
  std::vector<FaultSpec> faults;  // sorted by at_ms (stable)
  RandomFaults random;
  Expect expect;
  // Swarm only: the kinds of explicit faults it added (config, gray, crash_at_due,
  // restart_backoff, churn), for the per-seed line and the by-kind table.
  std::set<std::string> swarm_kinds;

  int64_t end_ms() const { return duration_ms + settle_ms; }
};

// Parses scenario TOML.  `path` is used in messages ("tests/sim/x.toml:12:3: ...").
// Unknown keys, wrong types, unknown node ids and out-of-range values are errors that
// name the key and its position.
Result<Scenario> parse_scenario(std::string_view text, const std::string& path);
Result<Scenario> load_scenario(const std::string& path);

// Checks cross-references (node ids, volumes, times).  parse_scenario calls it; the
// swarm calls it on what it generates.
Status validate_scenario(const Scenario& s);

}  // namespace caesium::sim
