// caesium-bench cluster --sustained RATE [--duration 60s]: RATE one-shot entries fall due
// every second for the duration, written ahead continuously through the API while the
// earlier ones fire; and --find-capacity: the highest such rate whose lateness p99 stays
// within --max-p99-ms (default 50).
//
// One trial (a fresh three-node cluster, as the burst's: bench/cluster_harness.h):
//   1. T0 is a whole second a few seconds ahead.  Entry i is due at T0 + (i / RATE) s +
//      (i % RATE) · 1000 / RATE ms: RATE entries spread evenly over each second.
//   2. The writer writes second k's RATE entries starting 1 s + lead before that second
//      begins (lead = 2 s + prepare_ahead), over --connections keep-alive connections;
//      each answer means durable on the receiving replica.  A second whose writes end
//      after its own lead point makes the writer late: its lag is how far past; a trial
//      whose writer lagged is "writer-bound" (its lateness may be the writer's).
//   3. After the last due instant plus 2 s, the benchmark waits until every entry ran (or
//      30 s more), then reads the executions from the nodes' logs (the `log` handler).
//   Figures: fired/s = first executions within [T0, T0 + duration) / duration (= RATE when
//   the cluster keeps up); lateness p50/p99/max = first execution - due; duplicates,
//   misses, early; CPU per occurrence = the three nodes' user + system time from the
//   first write to the last run, over the occurrences executed — writes included, as the
//   sustained load is both; RSS = the three nodes' resident sets at the end, summed.
//
// --find-capacity: trials at --start-rate, doubling while a trial passes (no duplicate,
// miss or early run, p99 within the bound, the writer on time), then halving the gap
// between the last rate that passed and the first that failed, --refine times.  The
// capacity is the highest rate that passed.  With --anchor bullmq the peer is measured
// the same way in the same run (anchor.mjs --rate: the same jobs, added ahead by a
// producer in the same worker process), and its capacity printed beside; the ratio is
// Caesium's capacity over the peer's.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "bench/cluster_harness.h"
#include "bench/registry.h"

namespace caesium::bench::harness {
namespace {

namespace fs = std::filesystem;

struct Trial {
  std::string system;  // "caesium" or the anchor's name
  std::string semantics;
  int64_t rate = 0, duration_s = 0, due = 0;
  int64_t executed = 0, duplicates = 0, misses = 0, early = 0, flagged = 0;
  double fired_per_s = 0, late_p50 = 0, late_p99 = 0, late_max = 0;
  double cpu_us_per_occurrence = 0;
  int64_t rss_end_bytes = 0;  // Caesium: the three nodes; the peer does not report it
  int64_t writer_lag_ms = 0;  // the writer's worst lateness against its own schedule
  bool passed = false;
  std::string why;  // why it did not pass
};

struct SustainedSetup {
  std::string binary, base;
  int connections = 24, pipeline = 16;
  std::optional<int64_t> prepare_ahead_ms;  // nullopt: the shipped default
  int64_t max_p99_ms = 50;
  std::string anchor, anchor_dir;
  int anchor_concurrency = 200;
};

void judge(Trial& t, int64_t max_p99_ms) {
  t.passed = false;
  if (t.duplicates > 0 || t.misses > 0 || t.early > 0) {
    t.why = "duplicates, misses or early runs";
  } else if (t.writer_lag_ms > 0) {
    t.why = "writer-bound: the writes fell behind by " + std::to_string(t.writer_lag_ms) + " ms";
  } else if (t.late_p99 > static_cast<double>(max_p99_ms)) {
    t.why = "lateness p99 " + std::to_string(static_cast<int64_t>(t.late_p99)) + " ms over " +
            std::to_string(max_p99_ms) + " ms";
  } else {
    t.passed = true;
    t.why.clear();
  }
}

// Lateness, duplicates, misses and fired/s from the executions read back.
void tally(Trial& t, const std::unordered_map<int64_t, std::vector<Execution>>& runs,
           const std::function<int64_t(int64_t)>& due, int64_t t0) {
  std::vector<int64_t> late;
  int64_t in_window = 0;
  const int64_t window_end = t0 + t.duration_s * 1000;
  for (int64_t i = 0; i < t.due; ++i) {
    auto it = runs.find(i);
    if (it == runs.end() || it->second.empty()) {
      ++t.misses;
      continue;
    }
    ++t.executed;
    if (it->second.size() > 1) ++t.duplicates;
    int64_t first = it->second[0].at_ms;
    for (const auto& e : it->second) {
      first = std::min(first, e.at_ms);
      t.flagged += e.flagged;
      if (e.at_ms < due(i)) ++t.early;
    }
    late.push_back(first - due(i));
    if (first < window_end) ++in_window;
  }
  t.late_p50 = pct(late, 0.50);
  t.late_p99 = pct(late, 0.99);
  t.late_max = late.empty() ? 0 : static_cast<double>(late.back());
  t.fired_per_s = static_cast<double>(in_window) / static_cast<double>(t.duration_s);
}

bool caesium_trial(const SustainedSetup& s, const std::string& semantics, int64_t rate, int64_t duration_s,
                   Trial& t, std::string& error) {
  const std::string dir = s.base + "/caesium-sustained-" + std::to_string(::getpid()) + "-" + semantics + "-" +
                          std::to_string(rate);
  fs::remove_all(dir);
  t = Trial{};
  t.system = "caesium";
  t.semantics = semantics;
  t.rate = rate;
  t.duration_s = duration_s;
  t.due = rate * duration_s;
  bool ok = false;
  {
    Cluster cluster(s.binary, dir, s.prepare_ahead_ms);
    if (!cluster.start(error)) return false;
    sleep_ms(1000);
    const int64_t lead_ms = 2000 + effective_prepare_ahead(s.prepare_ahead_ms);
    const int64_t t0 = (wall_ms() + lead_ms + 2000) / 1000 * 1000 + 1000;
    const std::function<int64_t(int64_t)> due = [&](int64_t i) { return t0 + (i / rate) * 1000 + (i % rate) * 1000 / rate; };
    const std::vector<int64_t> cpu_before = cpu_by_node(cluster);
    for (int64_t k = 0; k < duration_s; ++k) {
      const int64_t deadline = t0 + k * 1000 - lead_ms;  // second k written by then
      sleep_ms(deadline - 1000 - wall_ms());
      const LoadResult r = load(cluster, "sus", "e", rate, semantics, due, s.connections, s.pipeline, k * rate);
      if (r.failed > 0) {
        error = std::to_string(r.failed) + " writes failed: " + r.first_error;
        return false;
      }
      t.writer_lag_ms = std::max(t.writer_lag_ms, wall_ms() - deadline);
    }
    sleep_ms(t0 + duration_s * 1000 + 2000 - wall_ms());
    std::unordered_map<int64_t, std::vector<Execution>> runs;
    const int64_t give_up = wall_ms() + 30'000;
    for (;;) {
      runs = read_executions(cluster, "sus", "e");
      if (static_cast<int64_t>(runs.size()) >= t.due || wall_ms() > give_up) break;
      sleep_ms(1000);
    }
    const std::vector<int64_t> cpu_after = cpu_by_node(cluster);
    int64_t cpu_total = 0;
    for (size_t i = 0; i < cpu_after.size(); ++i) cpu_total += cpu_after[i] - cpu_before[i];
    sleep_ms(1000);  // late duplicates, if any, get a chance to show
    runs = read_executions(cluster, "sus", "e");
    t.rss_end_bytes = rss_sum(cluster);
    cluster.stop();
    tally(t, runs, due, t0);
    if (t.executed > 0) t.cpu_us_per_occurrence = static_cast<double>(cpu_total) / static_cast<double>(t.executed);
    ok = true;
  }
  fs::remove_all(dir);
  judge(t, s.max_p99_ms);
  return ok;
}

bool anchor_trial(const SustainedSetup& s, int64_t rate, int64_t duration_s, Trial& t, std::string& error) {
  t = Trial{};
  t.system = s.anchor;
  t.rate = rate;
  t.duration_s = duration_s;
  t.due = rate * duration_s;
  nlohmann::json j;
  const std::string args = "--rate " + std::to_string(rate) + " --duration-ms " + std::to_string(duration_s * 1000) +
                           " --concurrency " + std::to_string(s.anchor_concurrency);
  if (!run_anchor_runner(s.anchor_dir, s.anchor, args, j, error)) return false;
  try {
    t.semantics = "-";
    t.executed = j.at("executed").get<int64_t>();
    t.duplicates = j.at("duplicates").get<int64_t>();
    t.misses = j.at("misses").get<int64_t>();
    t.early = j.at("early").get<int64_t>();
    t.fired_per_s = j.at("fired_per_s").get<double>();
    t.late_p50 = j.at("lateness_p50_ms").get<double>();
    t.late_p99 = j.at("lateness_p99_ms").get<double>();
    t.late_max = j.at("lateness_max_ms").get<double>();
    t.cpu_us_per_occurrence = j.at("cpu_us_per_occurrence").get<double>();
    t.writer_lag_ms = j.at("writer_lag_ms").get<int64_t>();
  } catch (const std::exception& e) {
    error = "the " + s.anchor + " anchor printed no sustained figures (" + e.what() + "): " + j.dump();
    return false;
  }
  judge(t, s.max_p99_ms);
  return true;
}

// Doubling from `start` while trials pass, then `refine` halvings of the gap.  Every
// trial run is appended to `trials`; the answer is the highest rate that passed (0: none).
template <class RunTrial>
bool find_capacity(int64_t start, int refine, RunTrial run, std::vector<Trial>& trials, int64_t& capacity,
                   std::string& error) {
  capacity = 0;
  // One trial, kept and reported as it ends (a search runs for minutes).
  auto trial = [&](int64_t rate, Trial& t) {
    if (!run(rate, t, error)) return false;
    trials.push_back(t);
    std::fprintf(stderr, "  %s %s %lld/s: %s\n", t.system.c_str(), t.semantics.c_str(), static_cast<long long>(rate),
                 t.passed ? "passed" : t.why.c_str());
    return true;
  };
  int64_t failed_at = 0;
  for (int64_t rate = start; failed_at == 0 && rate <= 10'000'000; rate *= 2) {
    Trial t;
    if (!trial(rate, t)) return false;
    if (t.passed) {
      capacity = rate;
    } else {
      failed_at = rate;
    }
  }
  int64_t lo = capacity, hi = failed_at;
  for (int i = 0; i < refine && hi - lo > std::max<int64_t>(1, lo / 20); ++i) {
    const int64_t mid = lo + (hi - lo) / 2;
    Trial t;
    if (!trial(mid, t)) return false;
    (t.passed ? lo : hi) = mid;
  }
  capacity = lo;
  return true;
}

nlohmann::json to_json(const Trial& t) {
  nlohmann::json j = {{"system", t.system}, {"rate", t.rate}, {"duration_s", t.duration_s}, {"due", t.due},
                      {"executed", t.executed}, {"duplicates", t.duplicates}, {"misses", t.misses},
                      {"early", t.early}, {"fired_per_s", t.fired_per_s}, {"lateness_p50_ms", t.late_p50},
                      {"lateness_p99_ms", t.late_p99}, {"lateness_max_ms", t.late_max},
                      {"cpu_us_per_occurrence", t.cpu_us_per_occurrence}, {"writer_lag_ms", t.writer_lag_ms},
                      {"passed", t.passed}};
  if (t.system == "caesium") {
    j["semantics"] = t.semantics;
    j["flagged_possible_duplicate"] = t.flagged;
    j["rss_end_mib"] = static_cast<double>(t.rss_end_bytes) / (1024.0 * 1024.0);
  }
  if (!t.passed) j["why"] = t.why;
  return j;
}

void print_trial(const Trial& t) {
  std::printf("%-8s %-14s %8lld %9.0f %5lld %6lld %5lld %7.0fms %7.0fms %7.0fms %8.1f %8s %7lldms  %s\n",
              t.system.c_str(), t.semantics.c_str(), static_cast<long long>(t.rate), t.fired_per_s,
              static_cast<long long>(t.duplicates), static_cast<long long>(t.misses), static_cast<long long>(t.early),
              t.late_p50, t.late_p99, t.late_max, t.cpu_us_per_occurrence,
              t.system == "caesium" ? std::to_string(t.rss_end_bytes / (1024 * 1024)).c_str() : "-",
              static_cast<long long>(t.writer_lag_ms), t.passed ? "pass" : t.why.c_str());
}

}  // namespace

int run_cluster_sustained(const Args& args) {
  SustainedSetup s;
  s.binary = args.get("bin", default_binary());
  s.base = args.get("dir", fs::temp_directory_path().string());
  s.connections = static_cast<int>(args.get_int("connections", 24));
  s.pipeline = static_cast<int>(args.get_int("pipeline", 16));
  s.prepare_ahead_ms = prepare_ahead_arg(args);
  s.max_p99_ms = args.get_int("max-p99-ms", 50);
  s.anchor = args.get("anchor", "");
  s.anchor_dir = args.get("anchor-dir", CAESIUM_BENCH_ANCHORS_DIR);
  s.anchor_concurrency = static_cast<int>(args.get_int("anchor-concurrency", 200));
  const bool find = args.has("find-capacity");
  const int64_t rate = args.get_int("sustained", 0);
  const int64_t start = args.get_int("start-rate", 1000);
  const int refine = static_cast<int>(args.get_int("refine", 3));
  auto duration = parse_duration_ms(args.get("duration", "60s"));
  if (!duration || *duration < 1000 || *duration % 1000 != 0) {
    std::fprintf(stderr, "cluster: --duration is a whole number of seconds, at least 1s (\"60s\", \"2m\")\n");
    return 2;
  }
  const int64_t duration_s = *duration / 1000;
  if (find == (rate > 0)) {
    std::fprintf(stderr, "cluster: give one of --sustained RATE and --find-capacity\n");
    return 2;
  }
  if (s.prepare_ahead_ms && *s.prepare_ahead_ms < 0) {
    std::fprintf(stderr, "cluster: --prepare-ahead-ms is not negative\n");
    return 2;
  }
  if (!s.anchor.empty() && s.anchor != "bullmq") {
    std::fprintf(stderr, "cluster: --anchor is bullmq (the one peer built in: bench/anchors/)\n");
    return 2;
  }
  const std::vector<std::string> semantics = semantics_of(args.get("semantics", "both"));
  if (semantics.empty()) return 2;

  std::vector<Trial> trials;
  std::vector<std::pair<std::string, int64_t>> capacities;  // (system/semantics, rate)
  std::string error;
  for (const auto& sem : semantics) {
    auto run = [&](int64_t r, Trial& t, std::string& e) { return caesium_trial(s, sem, r, duration_s, t, e); };
    if (find) {
      int64_t cap = 0;
      if (!find_capacity(start, refine, run, trials, cap, error)) {
        std::fprintf(stderr, "cluster (%s): %s\n", sem.c_str(), error.c_str());
        return 1;
      }
      capacities.emplace_back("caesium " + sem, cap);
    } else {
      Trial t;
      if (!run(rate, t, error)) {
        std::fprintf(stderr, "cluster (%s): %s\n", sem.c_str(), error.c_str());
        return 1;
      }
      trials.push_back(t);
    }
  }
  // The peer, last, with the machine to itself as the clusters had it.
  if (!s.anchor.empty()) {
    auto run = [&](int64_t r, Trial& t, std::string& e) { return anchor_trial(s, r, duration_s, t, e); };
    if (find) {
      int64_t cap = 0;
      if (!find_capacity(start, refine, run, trials, cap, error)) {
        std::fprintf(stderr, "cluster (anchor): %s\n", error.c_str());
        return 1;
      }
      capacities.emplace_back(s.anchor, cap);
    } else {
      Trial t;
      if (!run(rate, t, error)) {
        std::fprintf(stderr, "cluster (anchor): %s\n", error.c_str());
        return 1;
      }
      trials.push_back(t);
    }
  }
  const int64_t peer_capacity = find && !s.anchor.empty() ? capacities.back().second : 0;

  if (args.json) {
    nlohmann::json j;
    j["benchmark"] = find ? "cluster --find-capacity" : "cluster --sustained";
    j["nodes"] = 3;
    j["duration_s"] = duration_s;
    j["max_p99_ms"] = s.max_p99_ms;
    j["prepare_ahead_ms"] = effective_prepare_ahead(s.prepare_ahead_ms);
    j["anchor"] = s.anchor.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.anchor);  // null: no peer measured
    for (const auto& t : trials) j["trials"].push_back(to_json(t));
    for (const auto& [who, cap] : capacities) {
      nlohmann::json c = {{"system", who}, {"capacity_per_s", cap}};
      if (peer_capacity > 0 && who != s.anchor) c["vs_anchor"] = static_cast<double>(cap) / static_cast<double>(peer_capacity);
      j["capacities"].push_back(c);
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("cluster, sustained: 3 nodes on loopback, one-shot entries falling due every second for %lld s, "
                "written ahead through the API, handler log, prepare_ahead %lld ms; pass = no duplicate, miss or "
                "early run, writer on time, lateness p99 <= %lld ms\n\n",
                static_cast<long long>(duration_s), static_cast<long long>(effective_prepare_ahead(s.prepare_ahead_ms)),
                static_cast<long long>(s.max_p99_ms));
    std::printf("%-8s %-14s %8s %9s %5s %6s %5s %9s %9s %9s %8s %8s %9s  %s\n", "system", "semantics", "rate/s",
                "fired/s", "dups", "misses", "early", "late p50", "late p99", "late max", "CPU us", "RSS MiB",
                "writer", "result");
    for (const auto& t : trials) print_trial(t);
    if (!capacities.empty()) std::printf("\n");
    for (const auto& [who, cap] : capacities) {
      if (cap == 0) {
        std::printf("capacity (p99 <= %lld ms) %s: none of the rates tried passed\n",
                    static_cast<long long>(s.max_p99_ms), who.c_str());
        continue;
      }
      std::printf("capacity (p99 <= %lld ms) %s: %lld/s", static_cast<long long>(s.max_p99_ms), who.c_str(),
                  static_cast<long long>(cap));
      if (peer_capacity > 0 && who != s.anchor) {
        std::printf(", %.2fx %s's", static_cast<double>(cap) / static_cast<double>(peer_capacity), s.anchor.c_str());
      }
      std::printf("\n");
    }
    if (s.anchor.empty()) std::printf("\npeer: none measured in this run (--anchor bullmq measures BullMQ the same way)\n");
    std::printf("CPU us = user + system time per occurrence executed (Caesium: its three nodes, API writes included; "
                "the peer: its worker process, which also adds the jobs, and the Redis server)\n");
  }
  // A duplicate or an early run is a failure of the run; so is a miss under a chosen rate.
  // A search expects its last trials to fail for lateness (and past capacity a backlog
  // may outlast the wait: misses).
  for (const auto& t : trials) {
    if (t.system == "caesium" && (t.duplicates > 0 || t.early > 0 || (!find && t.misses > 0))) return 1;
  }
  return 0;
}

}  // namespace caesium::bench::harness
