// caesium-bench cluster: three real `caesium node` processes on loopback, N one-shot
// entries due within a short window, written through the HTTP API; what fired, where,
// how late, and what it cost.
//
//   caesium-bench cluster [--json] [--entries 100000] [--window-ms 1000]
//                         [--semantics both|at_least_once|at_most_once]
//                         [--connections 24] [--pipeline 16] [--bin PATH] [--dir DIR] [--keep]
//                         [--no-baseline]
//
// For each semantics a fresh cluster (new data directories) is started and formed;
// then:
//   1. calibration: 2,000 entries due in 2100 are written to learn the API write rate;
//   2. load: N entries `at` T0 + i·window/N (T0 far enough ahead for the load to finish
//      at the measured rate), over --connections keep-alive connections spread over
//      the three nodes, --pipeline requests in flight per connection; each answer
//      means "durable on the receiving replica" (docs/api.md).  API write throughput
//      = N / load time;
//   3. firing: the entries' handler is the builtin `log` (noop plus one log line per
//      run), which is how the benchmark sees every execution: the line's node, time
//      (the node's realtime clock, ms) and attempt.  Lateness = first execution -
//      scheduled instant.  Duplicates = occurrences executed more than once; misses =
//      occurrences never executed.  Occurrences per second = executed / (time of the
//      last first execution - T0), at most N / window: the offered load;
//   4. memory: resident set of each node before the load and after it (all three
//      replicas hold every entry): (after - before) / stored entries, per 1M.
//   5. CPU per occurrence: the user + system time the three nodes used from the end of
//      the load until every occurrence ran, divided by the occurrences executed.  The
//      firing path is CPU-bound on this machine, so this is the figure that moves when
//      the path gets cheaper.  It still moves with the machine's other tenants (cache
//      and memory contention), if less than occurrences/s; tests/sim/perf_burst_100k.toml
//      measures the node code's share deterministically.
//   6. baseline, measured in the same run after the clusters are stopped (skip it with
//      --no-baseline): the same N timers due in the same window, fired by one process
//      that only records each firing durably (bench/timer_floor.h).  Caesium's figures
//      are also printed as ratios to it, which move less with the machine than the
//      figures themselves.
//   7. the peer, with --anchor bullmq, measured in the same run after the baseline: the
//      same N jobs due in the same window as BullMQ delayed jobs on one throwaway Redis,
//      one worker process of --anchor-concurrency (bench/anchors/bullmq/: run.sh starts
//      and stops the Redis server, anchor.mjs measures; install.sh installs them on
//      request).  Caesium's figures are printed as ratios to its figures too.
// With --sustained RATE or --find-capacity it measures sustained load instead
// (bench/cluster_sustained.cpp).
// Nodes are stopped with SIGTERM (SIGKILL after 10 s) and die with the benchmark
// (PR_SET_PDEATHSIG).  Without --anchor no peer is measured, and no figure or ratio for
// one is printed: a figure the run did not measure is not printed.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cluster_harness.h"
#include "bench/registry.h"
#include "bench/timer_floor.h"
#include "node/cli/allocator.h"

namespace caesium::bench {
namespace {

namespace fs = std::filesystem;
using namespace harness;

struct Figures {
  std::string semantics;
  int64_t due = 0;
  int64_t executed = 0;      // occurrences executed at least once
  int64_t executions = 0;
  int64_t duplicates = 0;    // occurrences executed more than once
  int64_t misses = 0;        // occurrences never executed
  int64_t flagged = 0;       // executions flagged possible_duplicate
  int64_t early = 0;
  double occ_per_s = 0;
  double late_p50 = 0, late_p99 = 0, late_max = 0;
  double api_writes_per_s = 0;
  double api_seconds = 0;
  double rss_mib_per_1m = 0;
  int64_t rss_before = 0, rss_after = 0, rss_end = 0;  // summed over the nodes, bytes
  int64_t anon_before = 0, anon_after = 0;
  double anon_mib_per_1m = 0;  // the anonymous part (heap): without LMDB's mapped pages
  std::vector<int64_t> executions_by_node;
  // CPU the three nodes used from the end of the load until every occurrence ran, per
  // occurrence executed: what the firing path costs (see the header comment, step 5).
  double cpu_us_per_occurrence = 0;
  std::vector<double> cpu_s_by_node;
};

bool run_one(const std::string& binary, const std::string& dir, const std::string& semantics, int64_t entries,
             int64_t window_ms, int connections, int pipeline, std::optional<int64_t> prepare_ahead_ms, Figures& f,
             std::string& error) {
  Cluster cluster(binary, dir, prepare_ahead_ms);
  if (!cluster.start(error)) return false;
  f.semantics = semantics;
  f.due = entries;
  sleep_ms(1000);  // let the first syncs settle before measuring memory
  f.rss_before = rss_sum(cluster);
  f.anon_before = rss_sum(cluster, "RssAnon");

  constexpr int64_t kCalibration = 2000;
  const int64_t far = 4'102'444'800'000;  // 2100-01-01
  auto calib = load(cluster, "calib", "c", kCalibration, semantics, [&](int64_t i) { return far + i * 1000; },
                    connections, pipeline);
  if (calib.failed > 0) {
    error = "calibration writes failed: " + calib.first_error;
    return false;
  }
  const double rate = static_cast<double>(kCalibration) / calib.seconds;
  // Preparing ahead starts prepare_ahead before the window: after the load, not during it.
  const int64_t lead_ms = 3000 + effective_prepare_ahead(prepare_ahead_ms) + static_cast<int64_t>(1500.0 * static_cast<double>(entries) / rate);
  const int64_t t0 = (wall_ms() + lead_ms) / 1000 * 1000 + 1000;
  auto due = [&](int64_t i) { return t0 + i * window_ms / entries; };
  auto loaded = load(cluster, "bench", "e", entries, semantics, due, connections, pipeline);
  if (loaded.failed > 0) {
    error = std::to_string(loaded.failed) + " writes failed: " + loaded.first_error;
    return false;
  }
  if (wall_ms() > t0 - 200) {
    error = "loading took " + std::to_string(loaded.seconds) + " s, longer than the lead (" +
            std::to_string(lead_ms) + " ms from a calibrated " + std::to_string(static_cast<int64_t>(rate)) + " writes/s)";
    return false;
  }
  f.api_seconds = loaded.seconds;
  f.api_writes_per_s = static_cast<double>(entries) / loaded.seconds;
  f.rss_after = rss_sum(cluster);
  f.anon_after = rss_sum(cluster, "RssAnon");
  const int64_t stored = entries + kCalibration;
  f.anon_mib_per_1m = static_cast<double>(f.anon_after - f.anon_before) / 3.0 / static_cast<double>(stored) * 1e6 /
                      (1024.0 * 1024.0);
  f.rss_mib_per_1m = static_cast<double>(f.rss_after - f.rss_before) / 3.0 / static_cast<double>(stored) * 1e6 /
                     (1024.0 * 1024.0);

  const std::vector<int64_t> cpu_before = cpu_by_node(cluster);
  // Wait for the window to pass, then until every occurrence ran or 30 s more went by.
  sleep_ms(t0 + window_ms + 2000 - wall_ms());
  std::unordered_map<int64_t, std::vector<Execution>> runs;
  const int64_t give_up = wall_ms() + 30'000;
  for (;;) {
    runs = read_executions(cluster, "bench", "e");
    if (static_cast<int64_t>(runs.size()) >= entries || wall_ms() > give_up) break;
    sleep_ms(1000);
  }
  const std::vector<int64_t> cpu_after = cpu_by_node(cluster);
  int64_t cpu_total = 0;
  for (size_t i = 0; i < cpu_after.size(); ++i) {
    cpu_total += cpu_after[i] - cpu_before[i];
    f.cpu_s_by_node.push_back(static_cast<double>(cpu_after[i] - cpu_before[i]) / 1e6);
  }
  sleep_ms(1000);  // late duplicates, if any, get a chance to show
  runs = read_executions(cluster, "bench", "e");
  f.rss_end = rss_sum(cluster);
  for (const auto& n : cluster.nodes()) {  // kept with --keep, for a look at where time went
    std::string body;
    if (cluster.get(n, "/metrics", body)) std::ofstream(n.dir + "/metrics.txt") << body;
  }
  cluster.stop();

  std::vector<int64_t> late;
  int64_t last_first = t0;
  f.executions_by_node.assign(3, 0);
  for (int64_t i = 0; i < entries; ++i) {
    auto it = runs.find(i);
    if (it == runs.end() || it->second.empty()) {
      ++f.misses;
      continue;
    }
    auto& ex = it->second;
    ++f.executed;
    f.executions += static_cast<int64_t>(ex.size());
    if (ex.size() > 1) ++f.duplicates;
    int64_t first = ex[0].at_ms;
    for (const auto& e : ex) {
      first = std::min(first, e.at_ms);
      f.flagged += e.flagged;
      ++f.executions_by_node[static_cast<size_t>(e.node)];
      if (e.at_ms < due(i)) ++f.early;
    }
    late.push_back(first - due(i));
    last_first = std::max(last_first, first);
  }
  f.late_p50 = pct(late, 0.50);
  f.late_p99 = pct(late, 0.99);
  f.late_max = late.empty() ? 0 : static_cast<double>(late.back());
  const double span_s = static_cast<double>(std::max<int64_t>(window_ms, last_first - t0)) / 1000.0;
  f.occ_per_s = static_cast<double>(f.executed) / span_s;
  if (f.executed > 0) f.cpu_us_per_occurrence = static_cast<double>(cpu_total) / static_cast<double>(f.executed);
  return true;
}

// The peer's figures, as its runner printed them (bench/anchors/<name>/run.sh: one JSON
// object on its last line of output).
struct AnchorFigures {
  nlohmann::json raw;
  double occ_per_s = 0, late_p99 = 0, cpu_us_per_occurrence = 0;
  int64_t duplicates = 0, misses = 0, early = 0;
};

bool run_anchor(const std::string& dir, const std::string& name, int64_t entries, int64_t window_ms, int concurrency,
                AnchorFigures& out, std::string& error) {
  const std::string args = "--jobs " + std::to_string(entries) + " --window-ms " + std::to_string(window_ms) +
                           " --concurrency " + std::to_string(concurrency);
  if (!run_anchor_runner(dir, name, args, out.raw, error)) return false;
  try {
    out.occ_per_s = out.raw.at("occurrences_per_s").get<double>();
    out.late_p99 = out.raw.at("lateness_p99_ms").get<double>();
    out.cpu_us_per_occurrence = out.raw.at("cpu_us_per_occurrence").get<double>();
    out.duplicates = out.raw.at("duplicates").get<int64_t>();
    out.misses = out.raw.at("misses").get<int64_t>();
    out.early = out.raw.at("early").get<int64_t>();
  } catch (const std::exception& e) {
    error = "the " + name + " anchor printed no figures (" + e.what() + "): " + out.raw.dump();
    return false;
  }
  return true;
}

int run_cluster(const Args& args) {
  if (args.has("sustained") || args.has("find-capacity")) return run_cluster_sustained(args);
  const int64_t entries = args.get_int("entries", 100'000);
  const int64_t window_ms = args.get_int("window-ms", 1000);
  const int connections = static_cast<int>(args.get_int("connections", 24));
  const int pipeline = static_cast<int>(args.get_int("pipeline", 16));
  const std::optional<int64_t> prepare_ahead_given = prepare_ahead_arg(args);
  const int64_t prepare_ahead_ms = effective_prepare_ahead(prepare_ahead_given);
  const std::string which = args.get("semantics", "both");
  const std::string binary = args.get("bin", default_binary());
  // The nodes' allocator (their binary's `caesium version`) and the baseline's (this one's).
  const std::string node_allocator = binary_allocator(binary);
  const std::string floor_allocator = cli::allocator_name();
  const std::string base = args.get("dir", fs::temp_directory_path().string());
  const std::string anchor = args.get("anchor", "");
  const std::string anchor_dir = args.get("anchor-dir", CAESIUM_BENCH_ANCHORS_DIR);
  const int anchor_concurrency = static_cast<int>(args.get_int("anchor-concurrency", 200));
  if (!anchor.empty() && anchor != "bullmq") {
    std::fprintf(stderr, "cluster: --anchor is bullmq (the one peer built in: bench/anchors/)\n");
    return 2;
  }
  if (entries < 1 || window_ms < 1 || connections < 1 || pipeline < 1 || prepare_ahead_ms < 0 ||
      anchor_concurrency < 1) {
    std::fprintf(stderr, "cluster: --entries, --window-ms, --connections and --pipeline must be positive, "
                         "--prepare-ahead-ms not negative\n");
    return 2;
  }
  const std::vector<std::string> semantics = semantics_of(which);
  if (semantics.empty()) return 2;
  std::vector<Figures> all;
  for (const auto& s : semantics) {
    const std::string dir = base + "/caesium-cluster-bench-" + std::to_string(::getpid()) + "-" + s;
    fs::remove_all(dir);
    Figures f;
    std::string error;
    if (!run_one(binary, dir, s, entries, window_ms, connections, pipeline, prepare_ahead_given, f, error)) {
      std::fprintf(stderr, "cluster (%s): %s\n", s.c_str(), error.c_str());
      return 1;
    }
    if (!args.has("keep")) fs::remove_all(dir);
    all.push_back(f);
  }

  // The same-run baseline (bench/timer_floor.h): the same timers fired by one process that
  // only records each firing durably.  Run after the clusters are gone, so it has the
  // machine to itself as they did.
  FloorFigures floor;
  const bool with_floor = !args.has("no-baseline");
  if (with_floor) {
    std::string error;
    const std::string dir = base + "/caesium-cluster-bench-" + std::to_string(::getpid()) + "-floor";
    if (!run_timer_floor(entries, window_ms, dir, floor, error)) {
      std::fprintf(stderr, "cluster (baseline): %s\n", error.c_str());
      return 1;
    }
  }
  // The peer, last, with the machine to itself as the others had it.
  AnchorFigures peer;
  const bool with_anchor = !anchor.empty();
  if (with_anchor) {
    std::string error;
    if (!run_anchor(anchor_dir, anchor, entries, window_ms, anchor_concurrency, peer, error)) {
      std::fprintf(stderr, "cluster (anchor): %s\n", error.c_str());
      return 1;
    }
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };

  bool clean = true;
  for (const auto& f : all) clean &= f.duplicates == 0 && f.misses == 0 && f.early == 0;
  if (args.json) {
    nlohmann::json j;
    j["benchmark"] = "cluster";
    j["entries"] = entries;
    j["window_ms"] = window_ms;
    j["nodes"] = 3;
    j["prepare_ahead_ms"] = prepare_ahead_ms;
    j["allocator"] = {{"nodes", node_allocator}, {"baseline", floor_allocator}};
    j["anchor"] = with_anchor ? peer.raw : nlohmann::json(nullptr);  // null: no peer measured in this run
    if (with_floor) {
      j["baseline"] = {{"system", "one process, durable firing records, no replicas (timer-floor)"},
                       {"fired", floor.fired}, {"occurrences_per_s", floor.occ_per_s},
                       {"lateness_p50_ms", floor.late_p50}, {"lateness_p99_ms", floor.late_p99},
                       {"lateness_max_ms", floor.late_max}, {"cpu_us_per_occurrence", floor.cpu_us_per_occurrence}};
    }
    for (const auto& f : all) {
      j["results"].push_back({{"semantics", f.semantics}, {"due", f.due}, {"executed", f.executed},
                              {"executions", f.executions}, {"duplicates", f.duplicates}, {"misses", f.misses},
                              {"early", f.early}, {"flagged_possible_duplicate", f.flagged},
                              {"occurrences_per_s", f.occ_per_s}, {"lateness_p50_ms", f.late_p50},
                              {"lateness_p99_ms", f.late_p99}, {"lateness_max_ms", f.late_max},
                              {"api_writes_per_s", f.api_writes_per_s}, {"rss_mib_per_1m_entries", f.rss_mib_per_1m},
                              {"rss_anon_mib_per_1m_entries", f.anon_mib_per_1m},
                              {"executions_by_node", f.executions_by_node},
                              {"cpu_us_per_occurrence", f.cpu_us_per_occurrence},
                              {"cpu_s_by_node", f.cpu_s_by_node}});
      if (with_floor) {
        j["results"].back()["vs_baseline_rate"] = ratio(f.occ_per_s, floor.occ_per_s);
        j["results"].back()["cpu_vs_baseline"] = ratio(f.cpu_us_per_occurrence, floor.cpu_us_per_occurrence);
      }
      if (with_anchor) {
        j["results"].back()["vs_anchor_rate"] = ratio(f.occ_per_s, peer.occ_per_s);
        j["results"].back()["lateness_p99_vs_anchor"] = ratio(f.late_p99, peer.late_p99);
        j["results"].back()["cpu_vs_anchor"] = ratio(f.cpu_us_per_occurrence, peer.cpu_us_per_occurrence);
      }
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("cluster: 3 nodes on loopback, %lld one-shot entries due within %lld ms, handler log (noop + a line), "
                "prepare_ahead %lld ms; allocator: nodes %s, baseline %s\n\n",
                static_cast<long long>(entries), static_cast<long long>(window_ms),
                static_cast<long long>(prepare_ahead_ms), node_allocator.c_str(), floor_allocator.c_str());
    std::printf("%-14s %9s %6s %7s %9s %9s %9s %11s %12s\n", "semantics", "occ/s", "dups", "misses", "late p50",
                "late p99", "late max", "API puts/s", "MiB/1M ent.");
    for (const auto& f : all) {
      std::printf("%-14s %9.0f %6lld %7lld %7.0fms %7.0fms %7.0fms %11.0f %12.0f\n", f.semantics.c_str(), f.occ_per_s,
                  static_cast<long long>(f.duplicates), static_cast<long long>(f.misses), f.late_p50, f.late_p99,
                  f.late_max, f.api_writes_per_s, f.rss_mib_per_1m);
    }
    if (with_floor) {
      std::printf("%-14s %9.0f %6s %7s %7.0fms %7.0fms %7.0fms\n", "baseline", floor.occ_per_s, "-", "-",
                  floor.late_p50, floor.late_p99, floor.late_max);
    }
    if (with_anchor) {
      std::printf("%-14s %9.0f %6lld %7lld %7.0fms %7.0fms %7.0fms\n", "bullmq", peer.occ_per_s,
                  static_cast<long long>(peer.duplicates), static_cast<long long>(peer.misses),
                  peer.raw.value("lateness_p50_ms", 0.0), peer.late_p99, peer.raw.value("lateness_max_ms", 0.0));
      std::printf("\npeer (same run, --anchor bullmq): %s, concurrency %d: early %lld, CPU %.1f us per occurrence "
                  "(worker process + Redis server)\n",
                  peer.raw.value("system", std::string("BullMQ")).c_str(), anchor_concurrency,
                  static_cast<long long>(peer.early), peer.cpu_us_per_occurrence);
      for (const auto& f : all) {
        std::printf("%s vs BullMQ: rate %.2fx, lateness p99 %.2fx, CPU per occurrence %.2fx\n", f.semantics.c_str(),
                    ratio(f.occ_per_s, peer.occ_per_s), ratio(f.late_p99, peer.late_p99),
                    ratio(f.cpu_us_per_occurrence, peer.cpu_us_per_occurrence));
      }
    } else {
      std::printf("\npeer: none measured in this run (--anchor bullmq measures BullMQ beside it)\n");
    }
    if (with_floor) {
      std::printf("baseline (same run, `caesium-bench timer-floor`): one process fires the same timers, each "
                  "recorded durably in LMDB (group commit, fsync), no replicas, no agreement, no network: "
                  "%lld/%lld fired, CPU %.2f us per occurrence\n",
                  static_cast<long long>(floor.fired), static_cast<long long>(floor.due), floor.cpu_us_per_occurrence);
      for (const auto& f : all) {
        std::printf("%s vs baseline: rate %.2fx, CPU per occurrence %.1fx\n", f.semantics.c_str(),
                    ratio(f.occ_per_s, floor.occ_per_s), ratio(f.cpu_us_per_occurrence, floor.cpu_us_per_occurrence));
      }
    }
    for (const auto& f : all) {
      std::printf("%s: RSS per 1M entries %.0f MiB, of which anonymous (heap) %.0f MiB and file pages (LMDB map) %.0f MiB\n",
                  f.semantics.c_str(), f.rss_mib_per_1m, f.anon_mib_per_1m, f.rss_mib_per_1m - f.anon_mib_per_1m);
      std::printf("%s: executions by node n1/n2/n3 = %lld/%lld/%lld, flagged possible_duplicate %lld, early %lld\n",
                  f.semantics.c_str(), static_cast<long long>(f.executions_by_node[0]),
                  static_cast<long long>(f.executions_by_node[1]), static_cast<long long>(f.executions_by_node[2]),
                  static_cast<long long>(f.flagged), static_cast<long long>(f.early));
      std::printf("%s: CPU per occurrence %.0f us (all three nodes, end of load to last run); n1/n2/n3 used "
                  "%.1f/%.1f/%.1f s\n",
                  f.semantics.c_str(), f.cpu_us_per_occurrence, f.cpu_s_by_node.at(0), f.cpu_s_by_node.at(1),
                  f.cpu_s_by_node.at(2));
    }
  }
  return clean ? 0 : 1;
}

CAESIUM_BENCH("cluster", "three real nodes: 100k one-shot entries due within 1 s, per semantics", run_cluster,
              {"entries", "N", "one-shot entries to load (default 100000)"},
              {"window-ms", "MS", "due within this window (default 1000)"},
              {"connections", "N", "API connections that load entries (default 24)"},
              {"pipeline", "N", "requests in flight per connection (default 16)"},
              {"semantics", "S", "both, at_least_once or at_most_once (default both)"},
              {"prepare-ahead-ms", "MS", "the nodes' [scheduler] prepare_ahead (default: the shipped default, 0: off)"},
              {"bin", "PATH", "the caesium binary (default: the one built beside this program)"},
              {"dir", "DIR", "where the nodes' data directories go (default: the temp directory)"},
              {"keep", "", "keep the nodes' data directories"},
              {"no-baseline", "", "skip the same-run baseline (timer-floor)"},
              {"anchor", "NAME", "also measure the peer in the same run: bullmq (bench/anchors/bullmq/install.sh first)"},
              {"anchor-concurrency", "N", "the peer worker's concurrency (default 200)"},
              {"anchor-dir", "DIR", "where the anchors are (default: bench/anchors of the source tree)"},
              {"sustained", "N", "sustained load instead of the burst: N entries due every second", 1, 10'000'000},
              {"duration", "D", "how long --sustained and each --find-capacity trial last (default 60s)"},
              {"find-capacity", "", "the highest sustained rate with lateness p99 <= --max-p99-ms"},
              {"start-rate", "N", "--find-capacity's first rate, doubled while trials pass (default 1000)", 1, 10'000'000},
              {"refine", "N", "--find-capacity's halvings between the last pass and the first fail (default 3)", 0, 10},
              {"max-p99-ms", "MS", "--find-capacity's bound on lateness p99 (default 50)", 1, 3'600'000});

}  // namespace
}  // namespace caesium::bench
