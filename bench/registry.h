// Benchmarks register themselves by name so that adding one is adding a file.
//
//   static int run_wheel(const caesium::bench::Args& args);
//   CAESIUM_BENCH("wheel", "hierarchical timing wheel vs libuv vs std::priority_queue", run_wheel,
//                 {"seed", "N", "PRNG seed (default 1)"}, {"quick", "", "a small sample"});
//
// The options listed are the only ones accepted (besides --json and --help): anything
// else is refused before the benchmark starts, so a mistyped flag never silently runs the
// default (possibly long) measurement.  An option with a value hint takes a value
// (`--seed 3` or `--seed=3`); one without is a switch.  A hint of N or MS means a whole
// number in [min, max], and N,... a comma-separated list of them, checked when the
// command line is parsed: get_int, and a benchmark reading a list, meet nothing else.
// The parser is the one `caesium` uses (node/cli/parse.h): the same errors and --help.
//
// Each benchmark prints a human table to stdout, or with --json exactly one JSON object.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace caesium::bench {

struct Args {
  std::map<std::string, std::string> values;  // options given with a value, by name without "--"
  std::set<std::string> switches;             // switches given
  bool json = false;                          // --json was given

  // The value of `--name`, or `fallback` when it was not given.
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  // REQUIRES: `--name` is declared with the hint N or MS (the parser checked the value).
  int64_t get_int(const std::string& name, int64_t fallback) const;
  // Whether `--name` was given (a switch, or an option with a value).
  bool has(const std::string& name) const;
};

using BenchFn = std::function<int(const Args&)>;

struct Option {
  std::string name;   // without the leading "--"
  std::string value;  // value hint ("N", "MS", "N,...", "DIR"); empty for a switch
  std::string help;
  int64_t min = INT64_MIN;  // N, MS and N,...: the smallest value accepted
  int64_t max = INT64_MAX;  //                  the largest
};

struct Registration {
  Registration(const char* name, const char* summary, BenchFn fn, std::vector<Option> options = {});
};

struct Entry {
  std::string summary;
  BenchFn fn;
  std::vector<Option> options;
};

std::map<std::string, Entry>& registry();

}  // namespace caesium::bench

#define CAESIUM_BENCH_CAT2(a, b) a##b
#define CAESIUM_BENCH_CAT(a, b) CAESIUM_BENCH_CAT2(a, b)
#define CAESIUM_BENCH(name, summary, fn, ...) \
  static const ::caesium::bench::Registration CAESIUM_BENCH_CAT(bench_reg_, __LINE__)(name, summary, fn, {__VA_ARGS__})
