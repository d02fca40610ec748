// caesium-bench wheel: the timing wheel against libuv's timer heap and a
// std::priority_queue, measured in the same run on the same inputs.
//
//   caesium-bench wheel [--json] [--pending N | --sizes 1000000,10000000] [--repeat R] [--seed S]
//
// For each size N (default 1,000,000), each structure, R times (default 1; the table shows
// the median of the R runs for every cell):
//   insert        N timers, deadlines uniform in [1 ms, 1 h]                ns per insert
//   reschedule    every timer once, in random order, to a new deadline      ns per call
//   cancel        every timer once, in random order (N pending down to 0)   ns per cancel
//   expire all    a fresh N timers, then one poll an hour later fires all   ns per fired timer
//   expire spread a fresh N timers due in [1 ms, 2 s], polled every 1 ms    ns per fired timer
//   bytes/timer   held: what the structure accounts for (slab + arrays; heap + side table;
//                 sizeof(uv_timer_t)) / N.  rss: resident-set growth over build + inserts / N
//                 (the wheel's caller-side handle array is subtracted: it is not the wheel's).
// Times are the thread's CPU time around the whole phase (the machine is shared; time
// spent descheduled is not the structure's), divided by the number of operations.  Time as the structures see it is simulated, for libuv too: its clock
// cannot be set, so this binary overrides clock_gettime (wheel_bench_clock.h).
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "base/rng.h"
#include "bench/registry.h"
#include "bench/wheel_bench_clock.h"
#include "bench/wheel_bench_targets.h"

namespace caesium::bench {
namespace {

constexpr int64_t kStartMs = 1'800'000'000'000;  // Unix-epoch ms, as the node core uses
constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kSpreadMs = 2'000;

// Row order in the table and keys in the JSON.
const std::vector<std::string> kMetrics = {"insert_ns",     "cancel_ns",        "reschedule_ns",
                                           "expire_all_ns", "expire_spread_ns", "bytes_per_timer",
                                           "rss_bytes_per_timer"};
const std::map<std::string, std::string> kLabels = {
    {"insert_ns", "insert (ns)"},
    {"cancel_ns", "cancel, random order (ns)"},
    {"reschedule_ns", "reschedule active (ns)"},
    {"expire_all_ns", "expire, all due at once (ns)"},
    {"expire_spread_ns", "expire, 2 s spread, 1 ms polls (ns)"},
    {"bytes_per_timer", "bytes/timer, held"},
    {"rss_bytes_per_timer", "bytes/timer, RSS delta"}};

using Figures = std::map<std::string, double>;

// Targets from issue 2, by size (ns per operation; bytes per timer); none below 1M.
Figures targets_for(size_t n) {
  if (n < 1'000'000) return {};
  if (n >= 10'000'000) {
    return {{"insert_ns", 60}, {"cancel_ns", 250}, {"reschedule_ns", 300}, {"expire_all_ns", 150},
            {"expire_spread_ns", 150}, {"bytes_per_timer", 48}};
  }
  return {{"insert_ns", 50}, {"cancel_ns", 100}, {"reschedule_ns", 150}, {"expire_all_ns", 100},
          {"expire_spread_ns", 100}, {"bytes_per_timer", 48}};
}

struct Inputs {
  std::vector<int32_t> deadline_ms;    // offsets in [1, 1 h]
  std::vector<int32_t> reschedule_ms;  // new offsets, in reschedule order
  std::vector<uint32_t> reschedule_order;
  std::vector<uint32_t> cancel_order;
  std::vector<int32_t> spread_ms;  // offsets in [1, 2 s]
};

Inputs make_inputs(size_t n, uint64_t seed) {
  Rng rng(seed);
  Inputs in;
  in.deadline_ms.resize(n);
  in.reschedule_ms.resize(n);
  in.spread_ms.resize(n);
  in.reschedule_order.resize(n);
  for (size_t i = 0; i < n; ++i) {
    in.deadline_ms[i] = static_cast<int32_t>(rng.between(1, kHourMs));
    in.reschedule_ms[i] = static_cast<int32_t>(rng.between(1, kHourMs));
    in.spread_ms[i] = static_cast<int32_t>(rng.between(1, kSpreadMs));
    in.reschedule_order[i] = static_cast<uint32_t>(i);
  }
  in.cancel_order = in.reschedule_order;
  rng.shuffle(in.reschedule_order.begin(), in.reschedule_order.end());
  rng.shuffle(in.cancel_order.begin(), in.cancel_order.end());
  return in;
}

double now_ns() { return thread_cpu_ns(); }

// Resident set size in bytes, after giving freed memory back so deltas start clean.
double rss_bytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  long long size_pages = 0, resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void check_fired(const char* who, const char* phase, size_t fired, size_t n) {
  if (fired != n) {
    std::fprintf(stderr, "caesium-bench wheel: %s fired %zu of %zu timers in '%s'\n", who, fired, n, phase);
    std::exit(1);
  }
}

// insert, bytes, reschedule, cancel — on one structure, in that order.
template <class T>
void measure_churn(const Inputs& in, size_t caller_bytes_per_timer, Figures& f) {
  const size_t n = in.deadline_ms.size();
  const double rss0 = rss_bytes();
  T t(n, kStartMs);
  double t0 = now_ns();
  for (size_t i = 0; i < n; ++i) t.insert(i, in.deadline_ms[i]);
  f["insert_ns"] = (now_ns() - t0) / static_cast<double>(n);
  f["bytes_per_timer"] = static_cast<double>(t.bytes()) / static_cast<double>(n);
  f["rss_bytes_per_timer"] = (rss_bytes() - rss0) / static_cast<double>(n) - static_cast<double>(caller_bytes_per_timer);
  t0 = now_ns();
  for (size_t k = 0; k < n; ++k) t.reschedule(in.reschedule_order[k], in.reschedule_ms[k]);
  f["reschedule_ns"] = (now_ns() - t0) / static_cast<double>(n);
  t0 = now_ns();
  for (size_t k = 0; k < n; ++k) t.cancel(in.cancel_order[k]);
  f["cancel_ns"] = (now_ns() - t0) / static_cast<double>(n);
}

// All phases for one structure.  Time is simulated for all three (for libuv through the
// settable clock), so every poll happens at exactly the intended millisecond.
template <class T>
Figures measure(const Inputs& in) {
  const size_t n = in.deadline_ms.size();
  Figures f;
  measure_churn<T>(in, std::is_same_v<T, WheelTarget> ? sizeof(wheel::Handle) : 0, f);
  {
    T t(n, kStartMs);
    for (size_t i = 0; i < n; ++i) t.insert(i, in.deadline_ms[i]);
    const double t0 = now_ns();
    const size_t fired = t.expire(kHourMs);
    f["expire_all_ns"] = (now_ns() - t0) / static_cast<double>(n);
    check_fired(T::kName, "expire all", fired, n);
  }
  {
    T t(n, kStartMs);
    for (size_t i = 0; i < n; ++i) t.insert(i, in.spread_ms[i]);
    size_t fired = 0;
    const double t0 = now_ns();
    for (int64_t ms = 1; ms <= kSpreadMs; ++ms) fired += t.expire(ms);
    f["expire_spread_ns"] = (now_ns() - t0) / static_cast<double>(n);
    check_fired(T::kName, "expire spread", fired, n);
  }
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::vector<size_t> parse_sizes(const std::string& text) {
  std::vector<size_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    out.push_back(static_cast<size_t>(std::atoll(item.c_str())));  // 1..2^30: checked by the parser
  }
  return out;
}

struct SizeResult {
  size_t n;
  std::map<std::string, Figures> by_target;  // median figures per structure
};

SizeResult run_size(size_t n, int repeat, uint64_t seed) {
  const Inputs in = make_inputs(n, seed);
  std::map<std::string, std::map<std::string, std::vector<double>>> samples;
  for (int r = 0; r < repeat; ++r) {
    for (const auto& [name, figs] : {std::pair<std::string, Figures>{"wheel", measure<WheelTarget>(in)},
                                     {"libuv", measure<LibuvTarget>(in)},
                                     {"priority_queue", measure<HeapTarget>(in)}}) {
      for (const auto& [metric, value] : figs) samples[name][metric].push_back(value);
    }
  }
  SizeResult result{n, {}};
  for (const auto& [name, metrics] : samples) {
    for (const auto& [metric, values] : metrics) result.by_target[name][metric] = median(values);
  }
  return result;
}

void print_table(const SizeResult& r, int repeat) {
  const Figures targets = targets_for(r.n);
  std::printf("\n%zu pending timers; deadlines uniform in [1 ms, 1 h]; median of %d run%s\n", r.n, repeat,
              repeat == 1 ? "" : "s");
  std::printf("%-38s %10s %10s %10s %12s %8s\n", "metric", "wheel", "libuv", "prio_queue", "wheel:libuv", "target");
  for (const std::string& m : kMetrics) {
    const double w = r.by_target.at("wheel").at(m);
    const double u = r.by_target.at("libuv").at(m);
    const double q = r.by_target.at("priority_queue").at(m);
    char target[16] = "-";
    if (targets.count(m)) {
      std::snprintf(target, sizeof target, "%s%.0f", w <= targets.at(m) ? "<=" : "MISS ", targets.at(m));
    }
    std::printf("%-38s %10.1f %10.1f %10.1f %12.3f %8s\n", kLabels.at(m).c_str(), w, u, q, w / u, target);
  }
}

void print_json(const std::vector<SizeResult>& results, int repeat, uint64_t seed) {
  std::printf("{\"benchmark\":\"wheel\",\"repeat\":%d,\"seed\":%llu,\"sizes\":[", repeat,
              static_cast<unsigned long long>(seed));
  for (size_t s = 0; s < results.size(); ++s) {
    const SizeResult& r = results[s];
    std::printf("%s{\"pending\":%zu", s ? "," : "", r.n);
    for (const char* name : {"wheel", "libuv", "priority_queue"}) {
      std::printf(",\"%s\":{", name);
      bool first = true;
      for (const std::string& m : kMetrics) {
        std::printf("%s\"%s\":%.2f", first ? "" : ",", m.c_str(), r.by_target.at(name).at(m));
        first = false;
      }
      std::printf("}");
    }
    std::printf(",\"ratio_wheel_libuv\":{");
    bool first = true;
    for (const std::string& m : kMetrics) {
      std::printf("%s\"%s\":%.4f", first ? "" : ",", m.c_str(),
                  r.by_target.at("wheel").at(m) / r.by_target.at("libuv").at(m));
      first = false;
    }
    std::printf("},\"targets\":{");
    first = true;
    for (const auto& [m, v] : targets_for(r.n)) {
      std::printf("%s\"%s\":%.0f", first ? "" : ",", m.c_str(), v);
      first = false;
    }
    std::printf("}}");
  }
  std::printf("]}\n");
}

int run_wheel(const Args& args) {
  const std::vector<size_t> sizes =
      args.has("sizes") ? parse_sizes(args.get("sizes")) : parse_sizes(std::to_string(args.get_int("pending", 1'000'000)));
  const auto repeat = static_cast<int>(args.get_int("repeat", 1));
  const auto seed = static_cast<uint64_t>(args.get_int("seed", 1));
  if (!fake_monotonic_works()) {
    std::fprintf(stderr, "caesium-bench wheel: cannot set libuv's clock (clock_gettime override not in effect)\n");
    return 1;
  }
  if (repeat < 1) {
    std::fprintf(stderr, "caesium-bench wheel: --repeat wants at least 1\n");
    return 2;
  }
  std::vector<SizeResult> results;
  for (const size_t n : sizes) results.push_back(run_size(n, repeat, seed));
  if (args.json) {
    print_json(results, repeat, seed);
    return 0;
  }
  std::printf("caesium-bench wheel: hierarchical timing wheel vs libuv %s timers vs std::priority_queue\n",
              uv_version_string());
  for (const SizeResult& r : results) print_table(r, repeat);
  std::printf("\nwheel:libuv < 1 means the wheel is faster / smaller.  Method: bench/wheel_bench.cpp header.\n");
  return 0;
}

}  // namespace

CAESIUM_BENCH("wheel", "hierarchical timing wheel vs libuv vs std::priority_queue", run_wheel,
              {"pending", "N", "pending timers (default 1000000)", 1, int64_t{1} << 30},
              {"sizes", "N,...", "several pending counts instead of --pending", 1, int64_t{1} << 30},
              {"repeat", "N", "repetitions (default 1)"},
              {"seed", "N", "PRNG seed (default 1)"});

}  // namespace caesium::bench
