// caesium-bench membership: issue 4's membership figures, measured by running the real
// node code (SWIM + Lifeguard in gossip/) in the deterministic simulator.
//
//   caesium-bench membership [--quick | --long] [--seeds N] [--only LIST] [--dump DIR] [--json]
//
// Each section builds scenarios as TOML text (tests/sim/README.md), runs them with
// sim::run_scenario, and reads the report's figures; where a figure needs raw samples
// or who raised a suspicion, it replays the run's trace of view changes instead.  The
// sections (names for --only):
//   detection    N = 64, 1% loss: many crashes of different nodes -> first suspicion
//   scale        N = 1000, 1% and 10% loss: one crash -> dead in 99.9% of views, and how
//                fast the news spreads, in gossip rounds
//   load         N = 16 .. 1000, no faults: datagrams and bytes per node per second
//   heal         N = 16 and 64: a split long enough for both sides to declare each other
//                dead, then heal -> time until every view is right again
//   lifeguard    one slow node, Lifeguard on vs off on the same seeds: false positives
//   falsedeaths  N = 100, 5% loss, no faults: deaths of live members per node-hour
// --seeds N sets every section's number of seeds; --dump DIR writes every generated
// scenario (with its seed) so that `caesium sim --scenario DIR/FILE` replays that run.
// Default: ~140 CPU s.  --quick: small samples, for the ctest smoke run (~3 s).  --long:
// 10,000 node-hours for falsedeaths and more seeds elsewhere (~28 CPU minutes, 21 of them
// falsedeaths).  What each figure means, and the results: docs/benchmarks.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/rng.h"
#include "base/time.h"
#include "bench/registry.h"
#include "gossip/membership.h"
#include "gossip/suspicion.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace caesium::bench {
namespace {

using nlohmann::json;

// The protocol's defaults (memberlist's): every scenario here leaves them alone, so the
// figures are in units of what the daemon runs with.
const gossip::MembershipConfig kDefaults{};
const double kProbeMs = static_cast<double>(kDefaults.probe_interval_ms);
const double kGossipMs = static_cast<double>(kDefaults.gossip_interval_ms);

struct Plan {
  std::string mode = "default";
  int detect_nodes = 64, detect_seeds = 13, detect_crashes = 16;
  int scale_nodes = 1000, scale_seeds = 1;
  int64_t scale_ms = 60 * kMsPerSecond;  // dead everywhere by ~35 s; 10% loss costs ~1 CPU s per virtual s
  std::vector<int> load_sizes{16, 32, 64, 128, 256, 512, 1000};
  int load_seeds = 1;
  int64_t load_warmup_ms = 30 * kMsPerSecond, load_window_ms = 3 * kMsPerMinute;
  std::vector<int> heal_sizes{16, 64};
  int heal_seeds = 3;
  int64_t heal_split_ms = 3 * kMsPerMinute, heal_after_ms = 4 * kMsPerMinute;
  int lifeguard_nodes = 32, lifeguard_seeds = 3;
  int64_t lifeguard_ms = 10 * kMsPerMinute, slow_delay_ms = kMsPerSecond;
  int falsedeath_nodes = 100, falsedeath_seeds = 2;
  int64_t falsedeath_ms = kMsPerHour;
};

Plan make_plan(const Args& args) {
  Plan p;
  if (args.has("quick")) {
    p.mode = "quick";
    p.detect_nodes = 32;
    p.detect_seeds = 1;
    p.detect_crashes = 4;
    p.scale_nodes = 100;
    p.scale_ms = 60 * kMsPerSecond;
    p.load_sizes = {16, 64};
    p.load_window_ms = kMsPerMinute;
    p.heal_sizes = {16};
    p.heal_seeds = 1;
    p.heal_split_ms = kMsPerMinute;
    p.heal_after_ms = 2 * kMsPerMinute;
    p.lifeguard_nodes = 16;
    p.lifeguard_seeds = 1;
    p.lifeguard_ms = 3 * kMsPerMinute;
    p.falsedeath_seeds = 1;
    p.falsedeath_ms = 6 * kMsPerMinute;  // 10 node-hours
  } else if (args.has("long")) {
    p.mode = "long";
    p.detect_seeds = 40;
    p.scale_seeds = 3;
    p.load_seeds = 2;
    p.heal_seeds = 10;
    p.lifeguard_seeds = 10;
    p.falsedeath_seeds = 10;
    p.falsedeath_ms = 10 * kMsPerHour;  // 10 seeds x 10 h x 100 nodes = 10,000 node-hours
  }
  if (args.has("seeds")) {
    const int n = static_cast<int>(args.get_int("seeds", 1));  // 1..100000, checked by the parser
    p.detect_seeds = p.scale_seeds = p.load_seeds = p.heal_seeds = p.lifeguard_seeds = p.falsedeath_seeds = n;
  }
  return p;
}

// --- Scenario text ------------------------------------------------------------------------------

std::string duration(int64_t ms) { return "\"" + format_duration_ms(ms) + "\""; }
std::string node(int i) { return "\"n" + std::to_string(i) + "\""; }

struct ScenarioText {
  ScenarioText(std::string section_, std::string name_, int nodes_)
      : section(std::move(section_)), name(std::move(name_)), nodes(nodes_) {}

  std::string section;       // which part of the benchmark, for the header comment
  std::string name;          // file stem: <name>-s<seed>.toml
  int64_t duration_ms = 0;
  int nodes = 0;
  double loss = 0.01;
  std::string node_options;  // lines of [node_options]
  std::string faults;        // [[fault]] tables

  void fault(int64_t at_ms, const std::string& action) {
    faults += "\n[[fault]]\nat = " + duration(at_ms) + "\n" + action + "\n";
  }
  std::string file(uint64_t seed) const { return name + "-s" + std::to_string(seed) + ".toml"; }
  std::string text(uint64_t seed) const {
    char loss_text[32];
    std::snprintf(loss_text, sizeof loss_text, "%g", loss);
    std::string t = "# Generated by `caesium-bench membership` (" + section + ").\n# Replay: caesium sim --scenario " +
                    file(seed) + "\nname = \"" + name + "\"\nseed = " + std::to_string(seed) +
                    "\nduration = " + duration(duration_ms) + "\n\n[nodes]\ncount = " + std::to_string(nodes) +
                    "\nstart = \"joined\"\n";
    if (!node_options.empty()) t += "\n[node_options]\n" + node_options;
    t += "\n[network]\nlatency = \"2ms\"\njitter = \"2ms\"\nloss = " + std::string(loss_text) + "\n" + faults;
    return t;
  }
};

// --- Running, and the trace of view changes -----------------------------------------------------

// One change of one observer's view, from the trace ("41s895ms n43 observes n5 state 1").
// Nodes are numbered as in their ids (n1 = 1).  The converged view every node starts
// with (all alive at 0 s) is not kept: at N = 1000 it is a million lines.
struct Change {
  int64_t t_ms;
  int observer, subject, state;  // state: 0 alive, 1 suspect, 2 dead, 3 left
};
struct Crash {
  int64_t t_ms;
  int node;
};
struct Trace {
  std::vector<Change> changes;
  std::vector<Crash> crashes;
};

int node_number(const std::string& id) { return id.size() > 1 ? std::atoi(id.c_str() + 1) : 0; }

void parse_trace_line(const std::string& line, Trace& out) {
  const bool observes = line.find(" observes ") != std::string::npos;
  const bool crash = !observes && line.find(" fault crash ") != std::string::npos;
  if (!observes && !crash) return;
  std::istringstream in(line);
  std::string when, a, b, c, d, e;
  in >> when >> a >> b >> c >> d >> e;
  const Result<int64_t> t = parse_duration_ms(when);
  if (!t.ok()) return;
  if (crash) {
    out.crashes.push_back({*t, node_number(c)});
  } else if (d == "state" && !(*t == 0 && e == "0")) {
    out.changes.push_back({*t, node_number(a), node_number(c), std::atoi(e.c_str())});
  }
}

struct Run {
  std::string section, file;
  uint64_t seed = 0;
  double cpu_s = 0;
  uint64_t trace_hash = 0;
  bool passed = false;
  std::string error;  // parse or run error; empty when it ran
};

class Runner {
 public:
  // REQUIRES: `dump_dir` is empty or an existing directory.
  explicit Runner(std::string dump_dir) : dump_dir_(std::move(dump_dir)) {}

  // Runs one scenario with one seed; returns its figures (empty on error) and fills
  // `trace` when given.
  std::map<std::string, double> run(const ScenarioText& s, uint64_t seed, Trace* trace = nullptr) {
    Run r;
    r.section = s.section;
    r.file = s.file(seed);
    r.seed = seed;
    const std::string text = s.text(seed);
    if (!dump_dir_.empty() && !(std::ofstream(dump_dir_ + "/" + r.file) << text)) {
      std::fprintf(stderr, "caesium-bench membership: cannot write %s/%s\n", dump_dir_.c_str(), r.file.c_str());
    }
    std::fprintf(stderr, "membership: %-32s ", r.file.c_str());
    std::fflush(stderr);
    const std::clock_t c0 = std::clock();
    std::map<std::string, double> figures;
    Result<sim::Scenario> scenario = sim::parse_scenario(text, r.file);
    if (!scenario.ok()) {
      r.error = scenario.error().message;
    } else {
      sim::RunOptions options;
      options.seed = seed;
      options.replay = "caesium sim --scenario " + r.file;
      if (trace) options.trace = [trace](const std::string& line) { parse_trace_line(line, *trace); };
      Result<sim::Report> report = sim::run_scenario(*scenario, options);
      if (!report.ok()) {
        r.error = report.error().message;
      } else {
        r.passed = report->passed();
        r.trace_hash = report->trace_hash;
        figures = std::move(report->figures);
      }
    }
    r.cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    std::fprintf(stderr, "%6.1f CPU s %s\n", r.cpu_s, r.error.empty() ? (r.passed ? "" : "FAILED") : r.error.c_str());
    all_ok_ = all_ok_ && r.error.empty() && r.passed;
    runs_.push_back(std::move(r));
    return figures;
  }

  const std::vector<Run>& runs() const { return runs_; }
  const std::string& dump_dir() const { return dump_dir_; }
  bool all_ok() const { return all_ok_; }

 private:
  std::string dump_dir_;
  std::vector<Run> runs_;
  bool all_ok_ = true;
};

// --- Statistics and targets ---------------------------------------------------------------------

struct Stats {
  size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  // Nearest rank, as sim::percentile.
  auto rank = [&](double p) {
    const auto r = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, r == 0 ? 0 : r - 1)];
  };
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = rank(50);
  s.p99 = rank(99);
  s.max = v.back();
  return s;
}

json to_json(const Stats& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p99", s.p99}, {"max", s.max}};
}

struct Target {
  std::string section, what, measured;
  std::string status;  // "met", "NOT met", or "unproven" (the sample is too small to say)
};

std::string met(bool ok) { return ok ? "met" : "NOT met"; }

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

struct Output {
  std::string text;  // the human tables, printed at the end (progress goes to stderr)
  json sections = json::object();
  std::vector<Target> targets;

  void line(const std::string& s) { text += s + "\n"; }
  void target(std::string section, std::string what, std::string measured, std::string status) {
    targets.push_back({std::move(section), std::move(what), std::move(measured), std::move(status)});
  }
};

// Every observer's first sight of `subject` as suspect or dead at or after `from_ms`,
// sorted; the subject's own view is not counted.
std::vector<int64_t> first_sightings(const Trace& tr, int subject, int64_t from_ms) {
  std::map<int, int64_t> first;
  for (const Change& c : tr.changes) {
    if (c.subject == subject && c.observer != subject && c.state >= 1 && c.t_ms >= from_ms) first.emplace(c.observer, c.t_ms);
  }
  std::vector<int64_t> out;
  for (const auto& [observer, t] : first) out.push_back(t);
  std::sort(out.begin(), out.end());
  return out;
}

double figure(const std::map<std::string, double>& f, const std::string& name, double fallback = -1) {
  auto it = f.find(name);
  return it == f.end() ? fallback : it->second;
}

// A death declared somewhere: the first view to turn `subject` dead while no view held
// it dead (the declarer's suspicion timer expired; the views that follow learned it).
struct Declaration {
  int64_t t_ms = 0;
  int subject = 0, declarer = 0, views = 0;
  int64_t suspected_for_ms = 0;  // how long the declarer had held the subject suspect
  // Since the latest wave of suspicion of the subject: the last time more than half of
  // the views came to hold it suspect (or since the first one did, if never half).  A
  // declaration that soon after a wave is the expiry of an older suspicion timer.
  int64_t wave_for_ms = 0;
};

// Replays the view changes of `tr` (nodes n1..n`nodes`) into the declarations of death
// of members other than `crashed`.
std::vector<Declaration> declarations(const Trace& tr, int nodes, const std::set<int>& crashed) {
  const auto w = static_cast<size_t>(nodes + 1);
  std::vector<int8_t> view(w * w, 0);
  std::vector<int64_t> since(w * w, 0);
  std::vector<int> holders(w, 0), dead_holders(w, 0);  // views holding S suspect-or-dead / dead
  std::vector<int64_t> wave_ms(w, 0);
  std::vector<size_t> open(w, SIZE_MAX);  // index of the subject's current declaration
  std::vector<Declaration> out;
  for (const Change& c : tr.changes) {
    if (c.observer < 1 || c.observer > nodes || c.subject < 1 || c.subject > nodes) continue;
    const auto o = static_cast<size_t>(c.observer), sj = static_cast<size_t>(c.subject);
    int8_t& v = view[o * w + sj];
    if (v < 1 && c.state >= 1) {
      ++holders[sj];
      if (holders[sj] == 1 || holders[sj] == nodes / 2 + 1) wave_ms[sj] = c.t_ms;
    }
    if (v >= 1 && c.state < 1) --holders[sj];
    if (v != 2 && c.state == 2 && crashed.count(c.subject) == 0) {
      if (dead_holders[sj] == 0) {
        open[sj] = out.size();
        out.push_back({c.t_ms, c.subject, c.observer, 0, v == 1 ? c.t_ms - since[o * w + sj] : 0,
                       c.t_ms - wave_ms[sj]});
      }
      ++out[open[sj]].views;
    }
    if (v != 2 && c.state == 2) ++dead_holders[sj];
    if (v == 2 && c.state != 2) --dead_holders[sj];
    if (v != c.state) since[o * w + sj] = c.t_ms;
    v = static_cast<int8_t>(c.state);
  }
  return out;
}

// --- 1. First detection -------------------------------------------------------------------------
//
// D = crash -> the first suspicion of the crashed node anywhere.  A prober suspects its
// target at the end of the probe period in which the target failed to answer, so with
// every prober's period T (local health score 0):  D = W + T,  W = crash -> the start of
// the probe that fails (W < 0 when a probe was already on its way at the crash).  The
// crash falls at a random phase of that prober's period, so D = K*T + phase with
//   K = floor(D / T)    the periods SWIM counts, the failing probe's own one included:
//                       some member probes the dead one in a given period with
//                       probability 1 - 1/e (random targets), so E[K] = e/(e-1) = 1.58;
//   K - 1               the whole periods that passed before the failing probe began
//                       (E = 1/(e-1) = 0.58).
// The target "mean <= 1.6 periods plus phase" is mean K <= 1.6; "p99 <= 5 periods" is
// checked on the raw D (phase included), the stricter reading.
void section_detection(const Plan& plan, Runner& runner, Output& out) {
  std::vector<double> raw, k_periods, k_before;
  uint64_t checker_count = 0;
  for (int seed = 1; seed <= plan.detect_seeds; ++seed) {
    ScenarioText s("first detection of a crash", "detection-n" + std::to_string(plan.detect_nodes), plan.detect_nodes);
    Rng rng(static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL);
    // Different victims, 40 s apart (a crash is dead everywhere well within that), at a
    // random millisecond so that the crash falls at a random phase of every period.
    std::vector<int> victims;
    for (int i = 1; i <= plan.detect_nodes; ++i) victims.push_back(i);
    rng.shuffle(victims.begin(), victims.end());
    int64_t at = 0;
    for (int i = 0; i < plan.detect_crashes; ++i) {
      at = 30 * kMsPerSecond + i * 40 * kMsPerSecond + rng.between(0, 999);
      s.fault(at, "crash = " + node(victims[static_cast<size_t>(i)]));
    }
    s.duration_ms = at + 40 * kMsPerSecond;
    Trace tr;
    const auto f = runner.run(s, static_cast<uint64_t>(seed), &tr);
    checker_count += static_cast<uint64_t>(figure(f, "membership.detection.first_suspect_ms.count", 0));
    for (const Crash& c : tr.crashes) {
      const std::vector<int64_t> seen = first_sightings(tr, c.node, c.t_ms);
      if (seen.empty()) continue;
      const double d = static_cast<double>(seen.front() - c.t_ms) / kProbeMs;
      raw.push_back(d);
      k_periods.push_back(std::floor(d));
      k_before.push_back(std::floor(d) - 1);
    }
  }
  if (checker_count != raw.size()) {
    std::fprintf(stderr, "membership: the checker counted %llu first suspicions, the trace %zu\n",
                 static_cast<unsigned long long>(checker_count), raw.size());
  }
  const Stats r = stats_of(raw), k = stats_of(k_periods), kb = stats_of(k_before);
  const double e = std::exp(1.0);
  out.line(fmt("1. first detection of a crash: N = %.0f, 1%% loss, %.0f seeds x %.0f crashes", plan.detect_nodes,
               plan.detect_seeds, plan.detect_crashes) +
           fmt(" = %.0f samples, in probe periods T = %.0f ms", static_cast<double>(r.count), kProbeMs));
  out.line("   D = crash -> first suspicion anywhere = K*T + phase; K = floor(D/T) counts the failing probe's");
  out.line("   own period (SWIM: e/(e-1) with random targets); K-1 also drops that period.");
  out.line("                                          mean    p50    p99    max   SWIM model");
  out.line(fmt("   raw D / T                             %5.2f  %5.2f  %5.2f", r.mean, r.p50, r.p99) +
           fmt("  %5.2f   %.2f (K + phase)", r.max, e / (e - 1) + 0.5));
  out.line(fmt("   K, within-period phase removed        %5.2f  %5.0f  %5.0f", k.mean, k.p50, k.p99) +
           fmt("  %5.0f   %.2f", k.max, e / (e - 1)));
  out.line(fmt("   K-1, and the failing probe's period   %5.2f  %5.0f  %5.0f", kb.mean, kb.p50, kb.p99) +
           fmt("  %5.0f   %.2f", kb.max, 1 / (e - 1)));
  out.sections["detection"] = {{"nodes", plan.detect_nodes}, {"loss", 0.01}, {"probe_interval_ms", kProbeMs},
                               {"raw_periods", to_json(r)}, {"k_periods", to_json(k)},
                               {"k_minus_1_periods", to_json(kb)}};
  const bool have = r.count > 0;
  out.target("1", "first detection mean <= 1.6 periods + phase", fmt("mean K = %.2f", k.mean),
             have ? met(k.mean <= 1.6) : "NOT met");
  out.target("1", "first detection p99 <= 5 periods", fmt("p99 raw D/T = %.2f", r.p99), have ? met(r.p99 <= 5) : "NOT met");
}

// --- 2. N = 1000 --------------------------------------------------------------------------------
//
// membership.dissemination.dead_999_ms starts at the first "dead" anywhere; but every
// member that heard the suspicion runs its own suspicion timer and declares the death
// itself, so that figure is mostly the spread of timer expiries.  The spread of one
// update by gossip is better seen in the suspicion: first suspicion anywhere -> the
// crashed node suspect (or dead) in 99.9% of views, from the trace.
void section_scale(const Plan& plan, Runner& runner, Output& out) {
  out.line(fmt("2. N = %.0f: one crash at ~20 s, %.0f s runs; gossip round = %.0f ms", plan.scale_nodes,
               static_cast<double>(plan.scale_ms) / 1000, kGossipMs));
  out.line("   loss seed | suspect  dead 99.9%   all    | dead spread 99.9% | suspicion spread 99.9% / all"
           " | false susp. / deaths (members)");
  json rows = json::array();
  std::string early_lines;
  for (const double loss : {0.01, 0.10}) {
    const double round_target = loss < 0.05 ? 10 : 11;
    double worst_dead = -1, worst_dead_rounds = -1, worst_spread_rounds = -1;
    bool complete = true;
    int declared = 0, early = 0;  // deaths of live members declared; sooner than Min after the suspicion began
    const auto min_timeout_ms = gossip::suspicion_timeout_min_ms(kDefaults.suspicion_mult,
                                                                 static_cast<size_t>(plan.scale_nodes),
                                                                 kDefaults.probe_interval_ms);
    for (int seed = 1; seed <= plan.scale_seeds; ++seed) {
      ScenarioText s("N = 1000: detection and dissemination",
                     "scale-n" + std::to_string(plan.scale_nodes) + "-loss" + std::to_string(std::lround(loss * 100)),
                     plan.scale_nodes);
      s.loss = loss;
      s.duration_ms = plan.scale_ms;
      Rng rng(static_cast<uint64_t>(seed) ^ 0x5CA1EULL);
      const int victim = static_cast<int>(rng.between(1, plan.scale_nodes));
      s.fault(20 * kMsPerSecond + rng.between(0, 999), "crash = " + node(victim));
      Trace tr;
      const auto f = runner.run(s, static_cast<uint64_t>(seed), &tr);
      const double suspect = figure(f, "membership.detection.first_suspect_ms.max");
      const double dead_999 = figure(f, "membership.detection.dead_999_ms.max");
      const double dead_all = figure(f, "membership.detection.dead_all_ms.max");
      const double dissem_999 = figure(f, "membership.dissemination.dead_999_ms.max");
      const double false_suspicions = figure(f, "membership.false_suspicions", 0);
      const double false_deaths = figure(f, "membership.false_deaths", 0);
      double spread_999 = -1, spread_all = -1;
      for (const Crash& c : tr.crashes) {
        const std::vector<int64_t> seen = first_sightings(tr, c.node, c.t_ms);
        const auto observers = static_cast<size_t>(plan.scale_nodes - 1);
        const auto need = static_cast<size_t>(std::ceil(0.999 * static_cast<double>(observers)));
        if (seen.size() >= need) spread_999 = static_cast<double>(seen[need - 1] - seen.front());
        if (seen.size() == observers) spread_all = static_cast<double>(seen.back() - seen.front());
      }
      std::set<int> killed;  // live members declared dead somewhere
      for (const Declaration& d : declarations(tr, plan.scale_nodes, {victim})) {
        killed.insert(d.subject);
        ++declared;
        if (d.wave_for_ms < min_timeout_ms) ++early;
      }
      complete = complete && dead_999 >= 0 && dissem_999 >= 0 && spread_999 >= 0;
      worst_dead = std::max(worst_dead, dead_999);
      worst_dead_rounds = std::max(worst_dead_rounds, dissem_999 / kGossipMs);
      worst_spread_rounds = std::max(worst_spread_rounds, spread_999 / kGossipMs);
      out.line(fmt("   %3.0f%% %4.0f", loss * 100, seed) +
               fmt(" | %5.2f s %7.2f s %6.2f s", suspect / 1000, dead_999 / 1000, dead_all / 1000) +
               fmt(" | %5.0f ms = %4.1f r", dissem_999, dissem_999 / kGossipMs) +
               fmt("   | %5.0f ms = %4.1f / %4.1f r", spread_999, spread_999 / kGossipMs, spread_all / kGossipMs) +
               fmt("     | %.0f / %.0f (%.0f)", false_suspicions, false_deaths, static_cast<double>(killed.size())));
      rows.push_back({{"loss", loss}, {"seed", seed}, {"first_suspect_ms", suspect}, {"dead_999_ms", dead_999},
                      {"dead_all_ms", dead_all}, {"dissemination_dead_999_ms", dissem_999},
                      {"suspicion_spread_999_ms", spread_999}, {"suspicion_spread_all_ms", spread_all},
                      {"false_suspicions", false_suspicions}, {"false_deaths", false_deaths},
                      {"live_members_declared_dead", killed.size()}});
    }
    if (declared > 0) {
      early_lines += fmt("   %.0f%% loss: %.0f deaths of live members declared, %.0f of them", loss * 100, declared, early) +
                     fmt(" sooner than the %.0f s minimum suspicion timeout after a wave of suspicion\n",
                         static_cast<double>(min_timeout_ms) / 1000);
    }
    const std::string l = fmt("%.0f%% loss", loss * 100);
    const std::string at_n = "N=" + std::to_string(plan.scale_nodes) + " ";
    out.target("2", at_n + "dead in 99.9% of views <= 16 s, " + l, fmt("max %.2f s", worst_dead / 1000),
               complete ? met(worst_dead <= 16000) : "NOT met");
    out.target("2", at_n + fmt("dead spread (checker) <= %.0f rounds, ", round_target) + l,
               fmt("max %.1f rounds", worst_dead_rounds), complete ? met(worst_dead_rounds <= round_target) : "NOT met");
    out.target("2", at_n + fmt("suspicion spread <= %.0f rounds, ", round_target) + l,
               fmt("max %.1f rounds", worst_spread_rounds), complete ? met(worst_spread_rounds <= round_target) : "NOT met");
  }
  out.text += early_lines;
  out.line("   r = gossip rounds; dead spread = the checker's first dead -> dead in 99.9% of views (mostly timer");
  out.line("   expiries: each member times its own suspicion out); suspicion spread = first suspect -> 99.9%/all");
  out.sections["scale"] = {{"nodes", plan.scale_nodes}, {"gossip_interval_ms", kGossipMs}, {"runs", rows}};
}

// --- 3. Load per node ---------------------------------------------------------------------------
//
// The report's rates cover the whole run, and a converged start still sends more in its
// first seconds.  So each size runs twice with the same seed, for warmup and for warmup
// + window: the simulation is deterministic, the first run is a prefix of the second,
// and the difference of the totals is the window alone.
void section_load(const Plan& plan, Runner& runner, Output& out) {
  struct Row {
    int n;
    double msgs, bytes, max_bytes, oversize, stream_bytes, whole_msgs;
  };
  // `dead`: one member crashes at 10 s, before the window, and stays dead.
  auto measure = [&](int n, bool dead) {
    Row row{n, 0, 0, 0, 0, 0, 0};
    const std::string stem = "load-n" + std::to_string(n) + (dead ? "-dead1" : "");
    for (int seed = 1; seed <= plan.load_seeds; ++seed) {
      ScenarioText warm("load per node", stem + "-warmup", n);
      if (dead) warm.fault(10 * kMsPerSecond, "crash = " + node(n));
      warm.duration_ms = plan.load_warmup_ms;
      ScenarioText full = warm;
      full.name = stem;
      full.duration_ms = plan.load_warmup_ms + plan.load_window_ms;
      const auto a = runner.run(warm, static_cast<uint64_t>(seed));
      const auto b = runner.run(full, static_cast<uint64_t>(seed));
      const double node_s = (dead ? n - 1 : n) * static_cast<double>(plan.load_window_ms) / 1000.0 * plan.load_seeds;
      auto window = [&](const char* name) { return (figure(b, name, 0) - figure(a, name, 0)) / node_s; };
      row.msgs += window("net.datagram.sent");
      row.bytes += window("net.datagram.sent_bytes");
      row.stream_bytes += window("net.stream.sent_bytes");
      row.max_bytes = std::max(row.max_bytes, figure(b, "net.datagram.max_bytes", 0));
      row.oversize += figure(b, "net.datagram.oversize", 0);
      row.whole_msgs += figure(b, "net.datagram.msgs_per_node_s", 0) / plan.load_seeds;
    }
    return row;
  };
  std::vector<Row> rows;
  for (const int n : plan.load_sizes) rows.push_back(measure(n, false));
  const Row with_dead = measure(plan.load_sizes.size() > 2 ? plan.load_sizes[2] : plan.load_sizes.back(), true);
  out.line(fmt("3. load per node: no faults, 1%% loss, %.0f s window after %.0f s (windowed: run minus", 
               static_cast<double>(plan.load_window_ms) / 1000, static_cast<double>(plan.load_warmup_ms) / 1000) +
           fmt(" warmup-only run), %.0f seed(s)", plan.load_seeds));
  out.line("       N  msgs/node/s  ratio  bytes/node/s  ratio  max datagram  (whole-run msgs, stream B/node/s)");
  json jrows = json::array();
  bool flat = true, fits = true;
  double worst = 1;
  for (const Row& r : rows) {
    const double mr = r.msgs / rows.front().msgs, br = r.bytes / rows.front().bytes;
    flat = flat && std::fabs(mr - 1) <= 0.10 && std::fabs(br - 1) <= 0.10;
    worst = std::fabs(mr - 1) > std::fabs(worst - 1) ? mr : worst;
    worst = std::fabs(br - 1) > std::fabs(worst - 1) ? br : worst;
    fits = fits && r.max_bytes <= 1400 && r.oversize == 0;
    out.line(fmt("   %5.0f  %11.3f  %5.2f", r.n, r.msgs, mr) + fmt("  %12.1f  %5.2f  %12.0f", r.bytes, br, r.max_bytes) +
             fmt("  (%.3f, %.0f)", r.whole_msgs, r.stream_bytes));
    jrows.push_back({{"nodes", r.n}, {"msgs_per_node_s", r.msgs}, {"bytes_per_node_s", r.bytes},
                     {"msgs_ratio_to_first", mr}, {"bytes_ratio_to_first", br}, {"max_datagram_bytes", r.max_bytes},
                     {"oversize", r.oversize}, {"whole_run_msgs_per_node_s", r.whole_msgs},
                     {"stream_bytes_per_node_s", r.stream_bytes}});
  }
  {
    const Row& base = *std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.n == with_dead.n; });
    out.line(fmt("   N=%.0f, one member dead since 10 s: %.3f msgs/node/s (%.2fx), ", with_dead.n, with_dead.msgs,
                 with_dead.msgs / base.msgs) +
             fmt("%.1f B/node/s (%.2fx): reconnect probes", with_dead.bytes, with_dead.bytes / base.bytes));
  }
  out.sections["load"] = {{"loss", 0.01}, {"window_ms", plan.load_window_ms}, {"warmup_ms", plan.load_warmup_ms},
                          {"rows", jrows},
                          {"one_dead", {{"nodes", with_dead.n}, {"msgs_per_node_s", with_dead.msgs},
                                        {"bytes_per_node_s", with_dead.bytes}}}};
  out.target("3", fmt("msgs and bytes/node/s within 10%% of N=%.0f", rows.front().n),
             fmt("worst ratio %.2f", worst), met(flat));
  out.target("3", "every datagram <= 1400 bytes", fmt("max %.0f B", [&] {
               double m = 0;
               for (const Row& r : rows) m = std::max(m, r.max_bytes);
               return m;
             }()),
             met(fits));
}

// --- 4. Convergence after a partition heals ------------------------------------------------------
void section_heal(const Plan& plan, Runner& runner, Output& out) {
  out.line(fmt("4. partition heal: halves split at 20 s for %.0f s, 1%% loss, %.0f seeds per size; in push-pull",
               static_cast<double>(plan.heal_split_ms) / 1000, plan.heal_seeds));
  out.line("   intervals push_pull_interval_ms(30 s, n) of the whole cluster (and of one side, n/2, as while split)");
  json rows = json::array();
  for (const int n : plan.heal_sizes) {
    const double pp_ms = static_cast<double>(gossip::push_pull_interval_ms(kDefaults.push_pull_interval_ms, static_cast<size_t>(n)));
    const double pp_half_ms =
        static_cast<double>(gossip::push_pull_interval_ms(kDefaults.push_pull_interval_ms, static_cast<size_t>(n / 2)));
    double worst = -1, least_dead = 1;
    bool all = true;
    std::string times;
    for (int seed = 1; seed <= plan.heal_seeds; ++seed) {
      ScenarioText s("convergence after a partition heals", "heal-n" + std::to_string(n), n);
      std::string group;
      for (int i = 1; i <= n / 2; ++i) group += (i > 1 ? ", " : "") + node(i);
      const int64_t split = 20 * kMsPerSecond, heal = split + plan.heal_split_ms;
      s.fault(split, "partition = [[" + group + "]]");
      s.fault(heal, "heal = true");
      s.duration_ms = heal + plan.heal_after_ms;
      Trace tr;
      const auto f = runner.run(s, static_cast<uint64_t>(seed), &tr);
      // Each side must have declared the other dead before the heal, or this measures
      // something else.
      std::map<std::pair<int, int>, int> view;
      for (const Change& c : tr.changes) {
        if (c.t_ms <= heal) view[{c.observer, c.subject}] = c.state;
      }
      int dead = 0;
      for (const auto& [pair, state] : view) {
        if ((pair.first <= n / 2) != (pair.second <= n / 2) && state >= 2) ++dead;
      }
      const double cross_dead = dead / (2.0 * (n / 2) * (n - n / 2));
      const double after = figure(f, "membership.convergence.after_heal_ms.count", 0) == 1
                               ? figure(f, "membership.convergence.after_heal_ms.max")
                               : -1;
      all = all && after >= 0;
      worst = std::max(worst, after);
      least_dead = std::min(least_dead, cross_dead);
      times += (times.empty() ? "" : ", ") + (after < 0 ? std::string("never") : fmt("%.1f", after / 1000));
      rows.push_back({{"nodes", n}, {"seed", seed}, {"cross_pairs_dead_at_heal", cross_dead}, {"after_heal_ms", after},
                      {"push_pull_interval_ms", pp_ms}, {"push_pull_interval_split_ms", pp_half_ms}});
    }
    out.line(fmt("   N=%-4.0f cross pairs dead at heal >= %.0f%%; agree after ", n, 100 * least_dead) + times +
             fmt(" s; max %.2f x %.0f s", worst / pp_ms, pp_ms / 1000) +
             fmt(" (%.2f x %.0f s)", worst / pp_half_ms, pp_half_ms / 1000));
    out.target("4", fmt("N=%.0f agree within 2 push-pull intervals of heal", n),
               fmt("max %.2f x %.0f s", worst / pp_ms, pp_ms / 1000), all ? met(worst <= 2 * pp_ms) : "NOT met");
  }
  out.sections["heal"] = {{"split_ms", plan.heal_split_ms}, {"runs", rows}};
}

// --- 5. Lifeguard with a slow node ---------------------------------------------------------------
//
// The checker counts a false suspicion / death when a healthy member's view of another
// healthy member turns suspect / dead (gossip included); suspicions of the slow node
// are counted apart.  Who *raised* a suspicion is not in the report, so it is taken from
// the trace: an "episode" of suspicion of S starts when some view of S turns suspect
// while no view held S suspect or dead, and its originator is that observer.
struct LifeguardTally {
  double false_suspicions = 0, false_deaths = 0, suspicions_of_slow = 0, slow_deaths = 0;
  double episodes_healthy_by_healthy = 0, episodes_healthy_by_slow = 0, episodes_of_slow = 0;
  double false_positives() const { return false_suspicions + false_deaths; }
};

void tally_episodes(const Trace& tr, int nodes, int slow, LifeguardTally& t) {
  std::vector<int8_t> view(static_cast<size_t>(nodes + 1) * static_cast<size_t>(nodes + 1), 0);
  std::vector<int> holders(static_cast<size_t>(nodes + 1), 0);  // views holding S suspect or dead
  for (const Change& c : tr.changes) {
    if (c.observer < 1 || c.observer > nodes || c.subject < 1 || c.subject > nodes) continue;
    int8_t& v = view[static_cast<size_t>(c.observer) * static_cast<size_t>(nodes + 1) + static_cast<size_t>(c.subject)];
    const bool was = v >= 1, now = c.state >= 1;
    if (!was && now) {
      if (holders[static_cast<size_t>(c.subject)]++ == 0) {
        if (c.subject == slow) t.episodes_of_slow += 1;
        else if (c.observer == slow) t.episodes_healthy_by_slow += 1;
        else t.episodes_healthy_by_healthy += 1;
      }
    } else if (was && !now) {
      --holders[static_cast<size_t>(c.subject)];
    }
    if (c.subject == slow && c.observer != slow && c.state == 2 && v != 2) t.slow_deaths += 1;
    v = static_cast<int8_t>(c.state);
  }
}

void section_lifeguard(const Plan& plan, Runner& runner, Output& out) {
  const int n = plan.lifeguard_nodes;
  LifeguardTally on, off;
  for (const bool lifeguard : {true, false}) {
    for (int seed = 1; seed <= plan.lifeguard_seeds; ++seed) {
      ScenarioText s("Lifeguard vs a slow node",
                     std::string("lifeguard-") + (lifeguard ? "on" : "off") + "-n" + std::to_string(n), n);
      s.duration_ms = plan.lifeguard_ms;
      s.node_options = std::string("lifeguard = ") + (lifeguard ? "true" : "false") + "\n";
      // Inbound only: the slow node reads its messages late but its timers fire on time,
      // so it times out probes of healthy members whose acks sit in its backlog — the
      // case Lifeguard was built for (a node that is slow, not dead).
      s.fault(30 * kMsPerSecond, "slow = { node = " + node(n) + ", delay = " + duration(plan.slow_delay_ms) +
                                     ", inbound_only = true }");
      Trace tr;
      const auto f = runner.run(s, static_cast<uint64_t>(seed), &tr);
      LifeguardTally& t = lifeguard ? on : off;
      t.false_suspicions += figure(f, "membership.false_suspicions", 0);
      t.false_deaths += figure(f, "membership.false_deaths", 0);
      t.suspicions_of_slow += figure(f, "membership.suspicions_of_slow", 0);
      tally_episodes(tr, n, n, t);
    }
  }
  out.line(fmt("5. Lifeguard: N = %.0f, 1%% loss, n%.0f reads every message %.0f ms late (its timers on time) from 30 s,",
               n, n, static_cast<double>(plan.slow_delay_ms)) +
           fmt(" %.0f s x %.0f seeds", static_cast<double>(plan.lifeguard_ms) / 1000, plan.lifeguard_seeds));
  out.line("   (so its own probes of healthy members time out: the false positives Lifeguard is meant to stop)");
  out.line("                                              Lifeguard on    off   off/on");
  const std::vector<std::pair<const char*, std::pair<double, double>>> rows = {
      {"false suspicions (healthy views of healthy)", {on.false_suspicions, off.false_suspicions}},
      {"false deaths", {on.false_deaths, off.false_deaths}},
      {"suspicion episodes of healthy, by healthy", {on.episodes_healthy_by_healthy, off.episodes_healthy_by_healthy}},
      {"suspicion episodes of healthy, by the slow", {on.episodes_healthy_by_slow, off.episodes_healthy_by_slow}},
      {"suspicions of the slow node (views)", {on.suspicions_of_slow, off.suspicions_of_slow}},
      {"suspicion episodes of the slow node", {on.episodes_of_slow, off.episodes_of_slow}},
      {"deaths of the slow node (healthy views)", {on.slow_deaths, off.slow_deaths}},
  };
  json jrows = json::object();
  for (const auto& [what, v] : rows) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "   %-43s %7.0f %7.0f   %s", what, v.first, v.second,
                  v.first > 0 ? fmt("%.1f", v.second / v.first).c_str() : (v.second > 0 ? "inf" : "-"));
    out.line(buf);
    jrows[what] = {{"lifeguard_on", v.first}, {"lifeguard_off", v.second}};
  }
  out.sections["lifeguard"] = {{"nodes", n}, {"slow_delay_ms", plan.slow_delay_ms}, {"seeds", plan.lifeguard_seeds},
                               {"figures", jrows}};
  // With no false positive even without Lifeguard there is nothing to divide: unproven.
  const double ratio = off.false_positives() / std::max(1.0, on.false_positives());
  out.target("5", "Lifeguard >= 50x fewer false positives (slow node)",
             fmt("%.0f on vs %.0f off", on.false_positives(), off.false_positives()),
             off.false_positives() == 0 ? "unproven" : met(ratio >= 50));
}

// --- 6. False deaths at 5% loss ------------------------------------------------------------------
void section_falsedeaths(const Plan& plan, Runner& runner, Output& out) {
  double node_hours = 0, false_deaths = 0, deaths = 0, false_suspicions = 0;
  std::string found;  // the first few declarations, for the table
  json jdeclared = json::array();
  for (int seed = 1; seed <= plan.falsedeath_seeds; ++seed) {
    ScenarioText s("false deaths at 5% loss", "falsedeaths-n" + std::to_string(plan.falsedeath_nodes),
                   plan.falsedeath_nodes);
    s.loss = 0.05;
    s.duration_ms = plan.falsedeath_ms;
    Trace tr;
    const auto f = runner.run(s, static_cast<uint64_t>(seed), &tr);
    for (const Declaration& d : declarations(tr, plan.falsedeath_nodes, {})) {
      if (jdeclared.size() < 8) {
        found += fmt("   seed %.0f at %.0f s: n%.0f", seed, static_cast<double>(d.t_ms) / 1000, d.declarer) +
                 fmt(" declared n%.0f dead (%.0f views); it had held it suspect %.1f s", d.subject, d.views,
                     static_cast<double>(d.suspected_for_ms) / 1000) +
                 fmt(", the last wave of suspicion began %.1f s before\n", static_cast<double>(d.wave_for_ms) / 1000);
      }
      jdeclared.push_back({{"seed", seed}, {"t_ms", d.t_ms}, {"declarer", d.declarer}, {"subject", d.subject},
                           {"views", d.views}, {"suspected_for_ms", d.suspected_for_ms},
                           {"wave_for_ms", d.wave_for_ms}});
    }
    node_hours += plan.falsedeath_nodes * static_cast<double>(plan.falsedeath_ms) / kMsPerHour;
    false_deaths += figure(f, "membership.false_deaths", 0);
    deaths += figure(f, "membership.events.dead", 0);
    false_suspicions += figure(f, "membership.false_suspicions", 0);
  }
  out.line(fmt("6. false deaths: N = %.0f, 5%% loss, no faults, %.0f seeds x %.2f h", plan.falsedeath_nodes,
               plan.falsedeath_seeds, static_cast<double>(plan.falsedeath_ms) / kMsPerHour) +
           fmt(" = %.0f node-hours", node_hours));
  out.line(fmt("   false deaths %.0f (all deaths %.0f); false suspicions %.0f", false_deaths, deaths, false_suspicions) +
           fmt(" = %.2f per node-hour", false_suspicions / node_hours));
  out.text += found;
  out.sections["falsedeaths"] = {{"nodes", plan.falsedeath_nodes}, {"loss", 0.05}, {"node_hours", node_hours},
                                 {"false_deaths", false_deaths}, {"deaths", deaths},
                                 {"false_suspicions", false_suspicions}, {"declarations", jdeclared}};
  const bool enough = node_hours >= 10000;
  out.target("6", "0 false deaths per 10,000 node-hours at 5% loss",
             fmt("%.0f in %.0f node-hours", false_deaths, node_hours),
             false_deaths > 0 ? "NOT met" : (enough ? "met" : "unproven"));
}

// The runs, grouped by section: each file name is a replay command's argument.  Per-run
// CPU time and trace hash are in the --json output.
void print_runs(const Runner& runner, double cpu_s) {
  const std::string dir = runner.dump_dir().empty() ? "DIR" : runner.dump_dir();
  std::printf("\nruns: %zu, %.0f CPU s, %s; replay one with: caesium sim --scenario %s/FILE%s\n", runner.runs().size(),
              cpu_s, runner.all_ok() ? "all passed" : "SOME FAILED", dir.c_str(),
              runner.dump_dir().empty() ? " (files written by --dump DIR)" : "");
  struct Group {
    size_t runs = 0;
    double cpu_s = 0;
    std::map<std::string, std::vector<uint64_t>> seeds;  // file stem -> seeds
  };
  std::vector<std::pair<std::string, Group>> groups;
  for (const Run& r : runner.runs()) {
    const std::string key = r.file.substr(0, r.file.find('-'));
    if (groups.empty() || groups.back().first != key) groups.push_back({key, Group{}});
    Group& g = groups.back().second;
    ++g.runs;
    g.cpu_s += r.cpu_s;
    g.seeds[r.file.substr(0, r.file.rfind("-s"))].push_back(r.seed);
    if (!r.error.empty() || !r.passed) {
      std::printf("  FAILED: %s %s\n", r.file.c_str(), r.error.empty() ? "(invariant violations)" : r.error.c_str());
    }
  }
  for (const auto& [key, g] : groups) {
    std::string line = "  " + key + std::string(12 - std::min<size_t>(11, key.size()), ' ') +
                       fmt("%2.0f runs %5.1f s ", static_cast<double>(g.runs), g.cpu_s);
    const size_t indent = line.size();
    bool first = true;
    for (const auto& [stem, seeds] : g.seeds) {
      const std::string seed_text = seeds.size() == 1 ? std::to_string(seeds.front())
                                                      : std::to_string(seeds.front()) + ".." + std::to_string(seeds.back());
      const std::string item = stem + "-s" + seed_text + ".toml";
      if (!first && line.size() + 1 + item.size() > 112) {
        std::printf("%s\n", line.c_str());
        line = std::string(indent, ' ');
        first = true;
      }
      line += (first ? "" : " ") + item;
      first = false;
    }
    std::printf("%s\n", line.c_str());
  }
}

// --- Driver -------------------------------------------------------------------------------------

int run_membership(const Args& args) {
  const Plan plan = make_plan(args);
  const std::string only = args.get("only");
  const std::set<std::string> sections = {"detection", "scale", "load", "heal", "lifeguard", "falsedeaths"};
  std::set<std::string> chosen;
  std::stringstream only_list(only);
  for (std::string name; std::getline(only_list, name, ',');) {
    chosen.insert(name);
    if (sections.count(name) == 0) {
      std::fprintf(stderr, "caesium-bench membership: --only: unknown section '%s' (detection, scale, load, heal, "
                           "lifeguard, falsedeaths)\n", name.c_str());
      return 2;
    }
  }
  auto wanted = [&](const std::string& name) { return chosen.empty() || chosen.count(name) > 0; };
  const std::string dump = args.get("dump");
  std::error_code ec;
  if (!dump.empty() && !std::filesystem::create_directories(dump, ec) && ec) {
    std::fprintf(stderr, "caesium-bench membership: --dump %s: %s\n", dump.c_str(), ec.message().c_str());
    return 2;
  }
  Runner runner(dump);
  Output out;
  const std::clock_t c0 = std::clock();
  if (wanted("detection")) section_detection(plan, runner, out);
  if (wanted("scale")) section_scale(plan, runner, out);
  if (wanted("load")) section_load(plan, runner, out);
  if (wanted("heal")) section_heal(plan, runner, out);
  if (wanted("lifeguard")) section_lifeguard(plan, runner, out);
  if (wanted("falsedeaths")) section_falsedeaths(plan, runner, out);
  const double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  if (args.json) {
    const std::string dir = runner.dump_dir().empty() ? "DIR" : runner.dump_dir();
    json j = {{"benchmark", "membership"}, {"mode", plan.mode}, {"cpu_s", cpu_s}, {"sections", out.sections}};
    j["targets"] = json::array();
    for (const Target& t : out.targets) {
      j["targets"].push_back({{"section", t.section}, {"target", t.what}, {"measured", t.measured}, {"status", t.status}});
    }
    j["runs"] = json::array();
    for (const Run& r : runner.runs()) {
      char hash[24];
      std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(r.trace_hash));
      j["runs"].push_back({{"section", r.section}, {"seed", r.seed}, {"replay", "caesium sim --scenario " + dir + "/" + r.file},
                           {"cpu_s", r.cpu_s}, {"trace_hash", hash}, {"passed", r.passed}, {"error", r.error}});
    }
    std::printf("%s\n", j.dump().c_str());
    return runner.all_ok() ? 0 : 1;
  }
  std::printf("caesium-bench membership (%s): issue 4's figures, real node code in the simulator; memberlist\n",
              plan.mode.c_str());
  std::printf("timings (probe 1 s / timeout 500 ms, gossip 200 ms to 3, suspicion and retransmit mult 4,\n");
  std::printf("push-pull 30 s); start = \"joined\"; latency 2 ms + exponential 2 ms\n\n%s\n", out.text.c_str());
  std::printf("targets\n");
  for (const Target& t : out.targets) {
    std::printf("  %-2s %-56s %-26s %s\n", t.section.c_str(), t.what.c_str(), t.measured.c_str(), t.status.c_str());
  }
  print_runs(runner, cpu_s);
  return runner.all_ok() ? 0 : 1;
}

CAESIUM_BENCH("membership", "issue 4's SWIM/Lifeguard figures (detection, dissemination, load, heal, false positives) in the simulator",
              run_membership,
              {"quick", "", "small samples, a smoke run (~3 CPU s)"},
              {"long", "", "the documented long run (~1,650 CPU s)"},
              {"seeds", "N", "seeds per section (1..100000)", 1, 100'000},
              {"only", "LIST", "sections: detection,scale,load,heal,lifeguard,falsedeaths"},
              {"dump", "DIR", "write every generated scenario there (replay: caesium sim --scenario)"});

}  // namespace
}  // namespace caesium::bench
