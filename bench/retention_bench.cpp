// caesium-bench retention: the longest pause a retention round puts into a node's event
// loop, with a store of N occurrence records (half of them past retention) and N grants.
//
//   caesium-bench retention [--json] [--records 2000000] [--step 4096] [--seed N]
//
// A node keeps occurrence records and grants for the occurrence retention (24 h by
// default), so at a sustained rate it holds rate x retention of each: N = 2,000,000 is
// ~23 occurrences/s for a day.  Measured in the same run:
//   store:  baseline = every occurrence record visited in one call, expired ones dropped
//           (what a maintenance round did until the sweep was bounded), against the
//           sweep of schedule/retention.h in steps of --step records (what a round does
//           now): the longest single step is the pause, and the total is the work.
//   grants: the scheduler's purge (every 5 s) with N grants of which none has expired:
//           baseline = a walk over a std::map of N (entry id, instant) keys in entry order
//           checking each one (what the purge did), against Scheduler::on_tick, which
//           keeps grants by instant and looks at the oldest only.
//   expiry: N grants of one-shot timers (an entry each), 60% of them expiring while the
//           scheduler ticks (every 5 ms of loop time, the clock standing still): the
//           longest on_tick and the total.
//           No baseline in this program: until 25ff0f4 the expiry ended in a compaction
//           of the interned entry table that renumbered every occurrence and vote in one
//           tick (the same measurement at 375fd2d, N = 2M: longest tick 388-432 ms, the
//           compaction renumbering the 800k grants left).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"
#include "bench/registry.h"
#include "schedule/occurrence.h"
#include "schedule/retention.h"
#include "schedule/scheduler.h"
#include "schedule/store.h"
#include "schedule/store_reading_host.h"

namespace caesium::bench {
namespace {

using namespace caesium::schedule;

constexpr int64_t kNow = 1'790'000'000'000;
constexpr int64_t kRetention = kMsPerHour;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

OccurrenceId occ_of(uint64_t i, int64_t scheduled) {
  return OccurrenceId{"e" + std::to_string(i % 1000) + "/caesium/schedule/timer-" + std::to_string(i), scheduled};
}

// N owner records, instants uniform over the two hours before kNow: half are older than
// the one-hour retention.
void fill(VolumeStore& store, uint64_t n, uint64_t seed) {
  Rng rng(seed);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t t = kNow - 2 * kRetention + static_cast<int64_t>(rng.below(2 * kRetention));
    (void)store.put(owner_record_key(occ_of(i, t), "n1"), "owner-record", kNow);
  }
}

struct Figures {
  uint64_t records = 0, step = 0;
  double baseline_pause_ms = 0;
  double sweep_max_step_ms = 0, sweep_total_ms = 0;
  uint64_t sweep_steps = 0, dropped = 0, baseline_dropped = 0;
  double baseline_grant_walk_ms = 0, grant_purge_ms = 0;
  double expiry_max_tick_ms = 0, expiry_total_ms = 0;
  uint64_t expiry_ticks = 0, expiry_left = 0;
};

// A scheduler of node n1 for volume "v" (one-hour retention) that loads grants.
struct GrantHolder {
  GrantHolder() : host(empty) {
    SchedulerOptions options;
    options.occurrence_retention_ms = kRetention;
    sched = std::make_unique<Scheduler>(ProcessId{"n1", 1}, options, host, 0, kNow);
    Topology topology;
    topology.volumes["v"].replicas = {"n1", "n2", "n3"};
    sched->set_topology(topology, Clock{0, kNow});
    vote.promised_by = ProcessId{"n2", 7};
    encoded = encode(vote);
  }
  void grant(const OccurrenceId& occ) { sched->on_local_record(grant_key("v", occ), encoded); }
  VolumeStore empty{"v", "n1"};
  StoreReadingHost host;
  std::unique_ptr<Scheduler> sched;
  Vote vote;
  std::string encoded;
};

int run_retention(const Args& args) {
  Figures f;
  f.records = static_cast<uint64_t>(std::max<int64_t>(1, args.get_int("records", 2'000'000)));
  f.step = static_cast<uint64_t>(std::max<int64_t>(1, args.get_int("step", 4096)));
  const uint64_t seed = static_cast<uint64_t>(args.get_int("seed", 1));
  const int64_t horizon = kNow - kRetention;

  {  // baseline: one call visits them all
    VolumeStore store("v", "n1");
    fill(store, f.records, seed);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> expired;
    store.scan(kOccPrefix, {}, SIZE_MAX, [&](const RecordView& r) {
      const auto parsed = split_occ_key(r.key);
      if (!parsed || parsed->scheduled_utc_ms < horizon) expired.emplace_back(r.key);
    }, true);
    for (const auto& k : expired) f.baseline_dropped += store.remove_local(k) ? 1 : 0;
    f.baseline_pause_ms = ms_since(t0);
  }
  {  // the bounded sweep
    VolumeStore store("v", "n1");
    fill(store, f.records, seed);
    RetentionSweep sweep;
    sweep.start();
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      const RetentionSweep::Step s = sweep.step(store, horizon, f.step);
      const double ms = ms_since(t0);
      f.sweep_total_ms += ms;
      f.sweep_max_step_ms = std::max(f.sweep_max_step_ms, ms);
      f.dropped += s.dropped;
      ++f.sweep_steps;
      if (s.done) break;
    }
  }
  {  // grants
    Rng rng(seed);
    std::map<std::pair<uint32_t, int64_t>, Vote> by_entry;
    GrantHolder g;
    Scheduler& sched = *g.sched;
    for (uint64_t i = 0; i < f.records; ++i) {
      const int64_t t = kNow - kRetention / 2 + static_cast<int64_t>(rng.below(kRetention / 2));  // none expired
      g.grant(occ_of(i, t));
      by_entry.emplace(std::make_pair(static_cast<uint32_t>(i), t), g.vote);
    }
    auto t0 = std::chrono::steady_clock::now();
    uint64_t expired = 0;
    for (const auto& [k, v] : by_entry) expired += k.second < horizon ? 1 : 0;
    f.baseline_grant_walk_ms = ms_since(t0);
    if (expired != 0) std::fprintf(stderr, "unexpected: %llu grants expired\n", static_cast<unsigned long long>(expired));
    t0 = std::chrono::steady_clock::now();
    sched.on_tick(Clock{1, kNow});  // the first tick purges
    f.grant_purge_ms = ms_since(t0);
    if (sched.grant_count() != f.records) std::fprintf(stderr, "unexpected: grants were dropped\n");
  }
  {  // one-shot timers' grants expiring
    GrantHolder g;
    Scheduler& sched = *g.sched;
    for (uint64_t i = 0; i < f.records; ++i) g.grant(occ_of(i, kNow + static_cast<int64_t>(i)));
    // The clock stands where the first 60% have expired; the loop turns every 5 ms.
    const int64_t utc = kNow + kRetention + static_cast<int64_t>(f.records * 6 / 10);
    int64_t mono = kRetention;
    for (uint64_t k = 0; k < 100'000 && (sched.grant_count() > f.records - f.records * 6 / 10 || f.expiry_ticks < 3'000); ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      sched.on_tick(Clock{mono, utc});
      const double ms = ms_since(t0);
      f.expiry_max_tick_ms = std::max(f.expiry_max_tick_ms, ms);
      f.expiry_total_ms += ms;
      ++f.expiry_ticks;
      mono += 5;
    }
    f.expiry_left = sched.grant_count();
  }
  if (f.dropped != f.baseline_dropped) {
    std::fprintf(stderr, "the sweep dropped %llu records, the baseline %llu\n", static_cast<unsigned long long>(f.dropped),
                 static_cast<unsigned long long>(f.baseline_dropped));
    return 1;
  }

  if (args.json) {
    std::printf("{\"benchmark\":\"retention\",\"records\":%llu,\"step\":%llu,\"dropped\":%llu,"
                "\"baseline_pause_ms\":%.2f,\"sweep_max_step_ms\":%.3f,\"sweep_total_ms\":%.2f,\"sweep_steps\":%llu,"
                "\"pause_ratio\":%.1f,\"baseline_grant_walk_ms\":%.2f,\"grant_purge_ms\":%.3f,"
                "\"expiry_max_tick_ms\":%.2f,\"expiry_total_ms\":%.1f,\"expiry_ticks\":%llu,\"expiry_left\":%llu}\n",
                static_cast<unsigned long long>(f.records), static_cast<unsigned long long>(f.step),
                static_cast<unsigned long long>(f.dropped), f.baseline_pause_ms, f.sweep_max_step_ms, f.sweep_total_ms,
                static_cast<unsigned long long>(f.sweep_steps), f.baseline_pause_ms / f.sweep_max_step_ms,
                f.baseline_grant_walk_ms, f.grant_purge_ms, f.expiry_max_tick_ms, f.expiry_total_ms,
                static_cast<unsigned long long>(f.expiry_ticks), static_cast<unsigned long long>(f.expiry_left));
    return 0;
  }
  std::printf("retention: %llu occurrence records (%llu past retention) and %llu grants\n\n",
              static_cast<unsigned long long>(f.records), static_cast<unsigned long long>(f.dropped),
              static_cast<unsigned long long>(f.records));
  std::printf("%-44s %14s %14s %9s\n", "", "one call", "bounded", "ratio");
  std::printf("%-44s %11.1f ms %11.3f ms %8.0fx\n", "store sweep: longest pause of the event loop", f.baseline_pause_ms,
              f.sweep_max_step_ms, f.baseline_pause_ms / f.sweep_max_step_ms);
  std::printf("%-44s %11.1f ms %11.1f ms %8.2fx\n", "store sweep: total work", f.baseline_pause_ms, f.sweep_total_ms,
              f.sweep_total_ms / f.baseline_pause_ms);
  std::printf("%-44s %14s %14llu\n", "store sweep: steps", "1", static_cast<unsigned long long>(f.sweep_steps));
  std::printf("%-44s %11.1f ms %11.3f ms\n", "grant purge, none expired (every 5 s)", f.baseline_grant_walk_ms,
              f.grant_purge_ms);
  std::printf("%-44s %14s %11.1f ms  (%llu ticks, %.0f ms in all; %llu grants left)\n",
              "60% of the grants expire: longest tick", "-", f.expiry_max_tick_ms,
              static_cast<unsigned long long>(f.expiry_ticks), f.expiry_total_ms,
              static_cast<unsigned long long>(f.expiry_left));
  return 0;
}

CAESIUM_BENCH("retention", "longest event-loop pause of a retention round: one pass vs bounded steps", run_retention,
              {"records", "N", "occurrence records and grants (default 2000000)"},
              {"step", "N", "records per sweep step (default 4096, the node's default)"},
              {"seed", "N", "PRNG seed (default 1)"});

}  // namespace
}  // namespace caesium::bench
