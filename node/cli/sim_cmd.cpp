// caesium sim: run a scenario file or a swarm of seeded random scenarios through the
// deterministic simulator (sim/) and print the report.
//
//   caesium sim --scenario FILE [--seed N] [--process KIND] [--json] [--trace]
//   caesium sim --swarm --seeds A..B [--nodes N] [--duration D] [--process KIND] [--reconfig]
//                     [--prepare-ahead D] [--classic-faults] [--triggers] [--overlap] [--retries] [--caps] [--notify] [--json]
//   caesium sim --swarm --seeds N..N [...] --dump-scenario FILE   (a seed as a frozen scenario)
//   caesium sim --kinds | --list-marks | --check-marks DIR
//   (--marks-out FILE with --scenario or --swarm: the coverage marks the run hit)
//
// Exit status: 0 every run passed; 1 an invariant was violated or an [expect] did not
// hold (each failure prints its seed and the exact command that replays it); 2 bad
// usage or a bad scenario file.
//
// The simulator itself reads no clock.  Only this command reads the wall clock, to
// report how fast the simulator ran (events per second).
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "node/cli/commands.h"
#include "node/cli/parse.h"
#include "node/daemon/runtime/glibc_tunables.h"
#include "schedule/marks.h"
#include "sim/coverage.h"
#include "sim/registry.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/scenario_dump.h"
#include "sim/swarm.h"

namespace caesium::cli {
namespace {

using caesium::sim::Report;

struct Args {
  std::string scenario, seeds, process, duration, prepare_ahead, marks_out, check_marks, dump_scenario;
  int64_t nodes = 0;
  bool has_seed = false, swarm = false, json = false, trace = false, kinds = false, reconfig = false,
       list_marks = false, classic_faults = false, triggers = false, overlap = false, caps = false, notify = false,
       retries = false;
  uint64_t seed = 0;
};

// "A..B" with A <= B.
bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last);

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU time of this process: on a shared machine the honest speed figure.
double cpu_seconds_since(std::clock_t start) {
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last) {
  const size_t dots = text.find("..");
  return dots != std::string::npos && parse_u64(text.substr(0, dots), first) &&
         parse_u64(text.substr(dots + 2), last) && first <= last;
}

// --marks-out: the marks the run hit, "name count" per line (an empty file when none).
bool write_marks(const std::string& path) {
  if (path.empty()) return true;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "caesium sim: cannot write %s\n", path.c_str());
    return false;
  }
  const std::string text = caesium::sim::format_marks_hit(caesium::sim::mark_counts());
  std::fwrite(text.data(), 1, text.size(), f);
  return std::fclose(f) == 0;
}

// --check-marks DIR: every mark of this binary's list must be named by some file in DIR.
int check_marks(const std::string& dir) {
  auto hit = caesium::sim::read_marks_dir(dir);
  if (!hit.ok()) {
    std::fprintf(stderr, "caesium sim: %s\n", hit.error().message.c_str());
    return 2;
  }
  const auto missing = caesium::sim::marks_missing(hit.value());
  if (missing.empty()) {
    std::printf("every one of the %zu coverage marks was hit by some run in %s\n", caesium::schedule::kMarkCount,
                dir.c_str());
    return 0;
  }
  std::printf("%zu of %zu coverage marks were hit by no scenario and no swarm run in %s:\n", missing.size(),
              caesium::schedule::kMarkCount, dir.c_str());
  for (const auto& m : missing) std::printf("  %s\n", m.c_str());
  return 1;
}

// --dump-scenario: the seed as a scenario file whose faults are the ones this run applied.
bool dump(const std::string& path, const caesium::sim::Scenario& s, const std::vector<caesium::sim::FaultSpec>& faults,
          const std::string& replay, const Report& r) {
  const std::string comment =
      "Frozen from `" + replay + "`: the seed's choices as values and the faults it applied as an\n"
      "explicit timeline (sim/scenario_dump.h).  That run: " + std::to_string(r.events) + " events, " +
      std::to_string(r.violations.size()) + " violations.";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "caesium sim: cannot write %s\n", path.c_str());
    return false;
  }
  const std::string text = caesium::sim::dump_scenario(s, faults, comment);
  std::fwrite(text.data(), 1, text.size(), f);
  return std::fclose(f) == 0;
}

int run_one(const Args& a) {
  auto loaded = caesium::sim::load_scenario(a.scenario);
  if (!loaded.ok()) {
    std::fprintf(stderr, "caesium sim: %s\n", loaded.error().message.c_str());
    return 2;
  }
  caesium::sim::Scenario s = std::move(loaded.value());
  if (!a.process.empty()) s.process = a.process;
  caesium::sim::RunOptions ro;
  ro.seed = a.has_seed ? a.seed : s.seed;
  ro.replay = "caesium sim --scenario " + a.scenario + " --seed " + std::to_string(ro.seed);
  if (!a.process.empty()) ro.replay += " --process " + a.process;
  if (a.trace) ro.trace = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  auto result = caesium::sim::run_scenario(s, ro);
  const double wall = seconds_since(start);
  const double cpu = cpu_seconds_since(cpu_start);
  if (!result.ok()) {
    std::fprintf(stderr, "caesium sim: %s\n", result.error().message.c_str());
    return 2;
  }
  Report& r = result.value();
  if (!write_marks(a.marks_out)) return 2;
  const double eps = wall > 0 ? static_cast<double>(r.events) / wall : 0;
  const double cpu_eps = cpu > 0 ? static_cast<double>(r.events) / cpu : 0;
  if (a.json) {
    auto j = r.to_json();
    j["wall_seconds"] = wall;
    j["cpu_seconds"] = cpu;
    j["events_per_second"] = eps;
    j["events_per_cpu_second"] = cpu_eps;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", r.to_text().c_str());
    std::printf("wall       %.3f s, %.0f events/s, %.1fx real time\n", wall, eps,
                wall > 0 ? static_cast<double>(r.virtual_ms) / 1000.0 / wall : 0.0);
    std::printf("cpu        %.3f s, %.0f events/cpu-s\n", cpu, cpu_eps);
  }
  return r.passed() ? 0 : 1;
}

int run_swarm(const Args& a) {
  // The parser checked --seeds, --duration and --prepare-ahead.
  uint64_t first = 0, last = 0;
  parse_seed_range(a.seeds, first, last);
  caesium::sim::SwarmOptions o;
  if (!a.process.empty()) o.process = a.process;
  o.nodes = a.nodes;
  o.reconfig = a.reconfig;
  o.issue33_kinds = !a.classic_faults;
  o.triggers = a.triggers;
  o.overlap = a.overlap;
  o.caps = a.caps;
  o.notify = a.notify;
  o.retries = a.retries;
  if (!a.duration.empty()) o.duration_ms = caesium::parse_duration_ms(a.duration).value();
  if (!a.prepare_ahead.empty()) o.prepare_ahead_ms = caesium::parse_duration_ms(a.prepare_ahead).value();
  std::vector<caesium::sim::FaultSpec> applied;
  nlohmann::json runs = nlohmann::json::array();
  std::vector<std::string> failures;
  uint64_t events = 0, passed = 0;
  int64_t virtual_ms = 0;
  // Firing outcomes summed over the seeds whose fault mix includes each kind (a seed with
  // several kinds counts under each), plus seeds with no random fault at all.
  static const char* kKinds[] = {"none", "crash", "partition", "cut", "oneway", "slow", "skew",
                                 "config", "gray", "crash_at_due", "restart_backoff", "churn"};
  static const char* kFigures[] = {"alo.due", "alo.once", "alo.duplicates", "alo.missed", "alo.lost",
                                   "amo.due", "amo.once", "amo.duplicates", "amo.withheld", "amo.missed", "amo.lost"};
  std::map<std::string, std::map<std::string, double>> by_kind;
  std::map<std::string, uint64_t> seeds_by_kind;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  for (uint64_t seed = first;; ++seed) {
    caesium::sim::Scenario s = caesium::sim::derive_swarm_scenario(seed, o);
    caesium::sim::RunOptions ro;
    ro.seed = seed;
    ro.replay = caesium::sim::swarm_replay_command(seed, o);
    if (a.trace) ro.trace = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    if (!a.dump_scenario.empty()) ro.applied_faults = &applied;
    auto result = caesium::sim::run_scenario(s, ro);
    if (!result.ok()) {
      std::fprintf(stderr, "caesium sim: %s\n", result.error().message.c_str());
      return 2;
    }
    Report& r = result.value();
    if (!a.dump_scenario.empty() && !dump(a.dump_scenario, s, applied, ro.replay, r)) return 2;
    events += r.events;
    virtual_ms += r.virtual_ms;
    if (r.passed()) ++passed;
    else failures.push_back(ro.replay);
    {
      const auto& rf = s.random;
      const double rates[] = {rf.crash_rate, rf.partition_rate, rf.cut_rate, rf.oneway_rate, rf.slow_rate, rf.skew_rate};
      std::vector<std::string> kinds;
      for (size_t k = 0; k < 6; ++k) {
        if (rates[k] > 0) kinds.emplace_back(kKinds[k + 1]);
      }
      kinds.insert(kinds.end(), s.swarm_kinds.begin(), s.swarm_kinds.end());
      if (kinds.empty()) kinds.emplace_back("none");
      for (const auto& kind : kinds) {
        ++seeds_by_kind[kind];
        for (const char* f : kFigures) {
          auto it = r.figures.find(f);
          if (it != r.figures.end()) by_kind[kind][f] += it->second;
        }
      }
    }
    if (a.json) {
      auto j = r.to_json();
      j["scenario"] = caesium::sim::describe_swarm_scenario(s);
      runs.push_back(std::move(j));
    } else {
      std::printf("seed %llu %s  %s  events=%llu\n", static_cast<unsigned long long>(seed),
                  r.passed() ? "PASS" : "FAIL", caesium::sim::describe_swarm_scenario(s).c_str(),
                  static_cast<unsigned long long>(r.events));
      if (!r.passed()) std::printf("%s\n", r.to_text().c_str());
    }
    if (seed == last) break;
  }
  const double wall = seconds_since(start);
  const double cpu = cpu_seconds_since(cpu_start);
  const double eps = wall > 0 ? static_cast<double>(events) / wall : 0;
  if (!write_marks(a.marks_out)) return 2;
  const auto never_hit = caesium::sim::marks_never_hit(caesium::sim::mark_counts());
  if (a.json) {
    nlohmann::json j;
    j["seeds"] = a.seeds;
    j["passed"] = passed;
    j["failed"] = failures.size();
    j["failures"] = failures;
    j["events"] = events;
    j["virtual_ms"] = virtual_ms;
    j["wall_seconds"] = wall;
    j["cpu_seconds"] = cpu;
    j["events_per_second"] = eps;
    j["marks_never_hit"] = never_hit;
    j["runs"] = std::move(runs);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("\n%llu passed, %zu failed  (%llu events in %.2f s wall / %.2f s cpu, %.0f events/s)\n",
                static_cast<unsigned long long>(passed), failures.size(),
                static_cast<unsigned long long>(events), wall, cpu, eps);
    for (const auto& f : failures) std::printf("replay: %s\n", f.c_str());
    std::printf("\nfiring outcomes by fault kind in the seed's mix (a seed counts under each of its kinds):\n");
    std::printf("%-10s %6s %9s %8s %6s %6s %5s %9s %8s %6s %8s %6s %5s\n", "kind", "seeds", "alo.due", "alo.once",
                "dups", "missed", "lost", "amo.due", "amo.once", "dups", "withheld", "missed", "lost");
    for (const char* kind : kKinds) {
      auto it = by_kind.find(kind);
      if (it == by_kind.end()) continue;
      auto& f = it->second;
      std::printf("%-10s %6llu %9.0f %8.0f %6.0f %6.0f %5.0f %9.0f %8.0f %6.0f %8.0f %6.0f %5.0f\n", kind,
                  static_cast<unsigned long long>(seeds_by_kind[kind]), f["alo.due"], f["alo.once"], f["alo.duplicates"],
                  f["alo.missed"], f["alo.lost"], f["amo.due"], f["amo.once"], f["amo.duplicates"], f["amo.withheld"],
                  f["amo.missed"], f["amo.lost"]);
    }
    std::string list;
    for (const auto& m : never_hit) list += " " + m;
    std::printf("\ncoverage marks never hit in these seeds (%zu of %zu):%s\n", never_hit.size(),
                caesium::schedule::kMarkCount, never_hit.empty() ? " none" : list.c_str());
  }
  return failures.empty() ? 0 : 1;
}

// Memory settings for the simulator's one long-lived process.  None of them reaches the
// simulation's output: runs stay bit for bit the same (the trace hash says so).
//
// Huge pages (set in run_sim): a thousand simulated nodes keep ~1.9 GB of state, and
// each event lands on a node whose state is cold, so with 4 KB pages nearly every access
// of it misses the TLB as well as the cache.  glibc backs its heap with transparent huge
// pages when the tunable glibc.malloc.hugetlb=1 is set, which it reads only at process
// start: so `caesium sim` runs itself again once with the tunable added
// (node/daemon/runtime/glibc_tunables.h).  One virtual hour of 1000 nodes
// (tests/sim/perf_1000_steady_hour.toml): 79 s → 67 s of CPU.  GLIBC_TUNABLES naming
// glibc.malloc.hugetlb already (=0 to turn it off) is left alone, and a failed exec
// carries on without.  Builds with a sanitizer have their own allocator and ignore it, and
// a binary linked with mimalloc (the default, CAESIUM_MIMALLOC) does not run itself again:
// the same hour took 97 s of CPU under mimalloc against 121 s under glibc with huge pages.
//
// The simulator allocates and frees a push-pull's worth of member records (hundreds of
// KB) again and again.  glibc serves blocks above its mmap threshold with a fresh mmap
// and returns the top of the heap to the kernel above its trim threshold, and each of
// those costs page faults on first touch: ~9% of a steady N = 1000 run.  The process
// runs to completion, so it keeps what it has mapped instead (32 MB is the highest mmap
// threshold glibc accepts on 64-bit).
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int run_sim(const CLI::App& command, const Args& a, Io& io) {
  if (io.argv != nullptr && io.allocator == "glibc malloc") {
    caesium::daemon::rerun_with_glibc_tunables("glibc.malloc.hugetlb=1", io.argc - 1, io.argv + 1);
  }
  keep_freed_memory();
  caesium::sim::register_builtin_process_kinds();
  if (a.kinds) {
    for (const auto& name : caesium::sim::process_kind_names()) {
      const auto* k = caesium::sim::find_process_kind(name);
      std::printf("%-8s %s%s\n", name.c_str(), k->test_only ? "[test only] " : "", k->summary.c_str());
    }
    return 0;
  }
  if (a.list_marks) {
    std::printf("%s", caesium::sim::format_mark_list().c_str());
    return 0;
  }
  if (!a.check_marks.empty()) return check_marks(a.check_marks);
  // Count the firing core's coverage marks from here on (the daemon never does).
  caesium::schedule::enable_marks(true);
  caesium::schedule::reset_marks();
  if (a.swarm) {
    if (!a.scenario.empty() || a.has_seed) return usage_error(command, "--swarm takes --seeds, not --scenario/--seed", io.err);
    if (a.seeds.empty()) return usage_error(command, "--swarm needs --seeds A..B", io.err);
    uint64_t first = 0, last = 0;
    parse_seed_range(a.seeds, first, last);
    if (!a.dump_scenario.empty() && first != last) {
      return usage_error(command, "--dump-scenario takes one seed: --seeds N..N", io.err);
    }
    return run_swarm(a);
  }
  if (a.scenario.empty()) return usage_error(command, "give --scenario FILE or --swarm --seeds A..B", io.err);
  if (!a.seeds.empty() || a.nodes > 0 || !a.duration.empty() || a.reconfig || !a.prepare_ahead.empty() ||
      a.classic_faults || a.triggers || a.overlap || a.retries || a.caps || a.notify || !a.dump_scenario.empty()) {
    return usage_error(command,
                       "--seeds, --nodes, --duration, --reconfig, --prepare-ahead, --classic-faults, --triggers, "
                       "--overlap, --retries, --caps, --notify and --dump-scenario go with --swarm",
                       io.err);
  }
  return run_one(a);
}

}  // namespace

void add_sim_command(CLI::App& root, Io& io, int& exit_code) {
  CLI::App* sim = root.add_subcommand("sim", "run scenarios or a swarm of seeded random scenarios in the simulator");
  sim->footer(
      "  caesium sim --scenario FILE [--seed N] [--process KIND] [--json] [--trace]\n"
      "  caesium sim --swarm --seeds A..B [--nodes N] [--duration D] [--process KIND] [--reconfig]\n"
      "                    [--prepare-ahead D] [--classic-faults] [--triggers] [--overlap] [--retries] [--caps] [--notify] [--json] [--dump-scenario FILE]\n"
      "  caesium sim --kinds | --list-marks | --check-marks DIR\n"
      "  --marks-out FILE with --scenario or --swarm writes the coverage marks the run hit.\n"
      "Scenario format: tests/sim/README.md; the simulator: docs/simulator.md.");
  auto a = std::make_shared<Args>();
  sim->add_option("--scenario", a->scenario, "run this scenario file")->type_name("FILE");
  sim->add_option("--seed", a->seed, "the scenario's seed instead of its own")
      ->type_name("N")
      ->check(checked_by([](const std::string& text) -> Status {
        uint64_t v = 0;
        return parse_u64(text, v) ? Status::success() : Status(Error("'" + text + "' is not a non-negative integer"));
      }));
  add_switch(*sim, "--swarm", "run generated scenarios, one per seed", &a->swarm);
  sim->add_option("--seeds", a->seeds, "the swarm's seeds, e.g. 1..200")
      ->type_name("A..B")
      ->check(checked_by([](const std::string& text) -> Status {
        uint64_t first = 0, last = 0;
        if (parse_seed_range(text, first, last)) return Status::success();
        return Error("wants A..B with A <= B, e.g. --seeds 1..200");
      }));
  sim->add_option("--nodes", a->nodes, "nodes per swarm scenario (default: 3 to 7)")
      ->type_name("N")
      ->check(whole_number(1, 100000));
  sim->add_option("--duration", a->duration, "virtual time per swarm scenario")
      ->type_name("D")
      ->check(duration_at_least(1));
  sim->add_option("--process", a->process, "the process kind to simulate (see --kinds)")->type_name("KIND");
  add_switch(*sim, "--reconfig", "the swarm also changes replica sets", &a->reconfig);
  sim->add_option("--prepare-ahead", a->prepare_ahead, "every swarm node prepares this far ahead")
      ->type_name("D")
      ->check(duration_at_least(0));
  add_switch(*sim, "--triggers", "the swarm also runs entries now (random triggers, some retried with a key) and pauses and resumes entries",
             &a->triggers);
  add_switch(*sim, "--json", "print one JSON object", &a->json);
  add_switch(*sim, "--trace", "print every event on stderr", &a->trace);
  add_switch(*sim, "--kinds", "list the process kinds", &a->kinds);
  add_switch(*sim, "--classic-faults", "the swarm without the fault kinds added for the firing core's failure classes",
             &a->classic_faults);
  add_switch(*sim, "--overlap", "the swarm also runs long handlers of overlap = forbid entries", &a->overlap);
  add_switch(*sim, "--caps", "the swarm also caps the handlers each node runs at once (max_running 2..3)", &a->caps);
  add_switch(*sim, "--notify", "the swarm also sets a notify handler and adds failing entries with on_failure", &a->notify);
  add_switch(*sim, "--retries", "the swarm also runs entries that retry, with a handler that fails often", &a->retries);
  sim->add_option("--dump-scenario", a->dump_scenario, "write the seed (one) as a scenario file with its faults")
      ->type_name("FILE");
  sim->add_option("--marks-out", a->marks_out, "write the coverage marks the run hit")->type_name("FILE");
  add_switch(*sim, "--list-marks", "list the firing core's coverage marks", &a->list_marks);
  sim->add_option("--check-marks", a->check_marks, "fail unless every mark is in some .marks file of DIR")
      ->type_name("DIR");
  sim->callback([sim, a, &io, &exit_code] {
    a->has_seed = sim->count("--seed") > 0;
    exit_code = run_sim(*sim, *a, io);
  });
}

}  // namespace caesium::cli
