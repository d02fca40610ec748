// caesium-bench: dispatches to one registered benchmark per subcommand.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/registry.h"

namespace caesium::bench {

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

Registration::Registration(const char* name, const char* summary, BenchFn fn, std::vector<Option> options) {
  registry()[name] = Entry{summary, std::move(fn), std::move(options)};
}

std::string check_args(const std::vector<std::string>& argv, const std::vector<Option>& options) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--json") continue;
    if (a.rfind("--", 0) != 0) return "unexpected argument '" + a + "'";
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const auto it = std::find_if(options.begin(), options.end(), [&](const Option& o) { return o.name == name; });
    if (it == options.end()) return "unknown option '--" + name + "'";
    if (it->value.empty()) {
      if (eq != std::string::npos) return "--" + name + " takes no value";
      continue;
    }
    if (eq != std::string::npos) {
      if (eq + 1 == a.size()) return "--" + name + " wants a value (" + it->value + ")";
      continue;
    }
    if (i + 1 == argv.size() || argv[i + 1].rfind("--", 0) == 0) return "--" + name + " wants a value (" + it->value + ")";
    ++i;
  }
  return {};
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const std::string flag = "--" + name;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) return argv[i].substr(flag.size() + 1);
  }
  return fallback;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  const std::string v = get(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0') {
    std::fprintf(stderr, "caesium-bench: --%s wants a whole number, got '%s'\n", name.c_str(), v.c_str());
    std::exit(2);
  }
  return n;
}

bool Args::has(const std::string& name) const {
  const std::string flag = "--" + name;
  for (const auto& a : argv) {
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

}  // namespace caesium::bench

int main(int argc, char** argv) {
  using namespace caesium::bench;
  auto usage = [](FILE* out) {
    std::fputs("usage: caesium-bench <benchmark> [options] [--json]\n\nbenchmarks:\n", out);
    for (const auto& [name, e] : registry()) std::fprintf(out, "  %-10s %s\n", name.c_str(), e.summary.c_str());
  };
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::fprintf(stderr, "caesium-bench: unknown benchmark '%s'\n", name.c_str());
    usage(stderr);
    return 2;
  }
  const Entry& bench = it->second;
  auto bench_usage = [&](FILE* out) {
    std::fprintf(out, "usage: caesium-bench %s [options] [--json]\n  %s\n\noptions:\n", name.c_str(),
                 bench.summary.c_str());
    for (const Option& o : bench.options) {
      const std::string flag = "--" + o.name + (o.value.empty() ? "" : " " + o.value);
      std::fprintf(out, "  %-20s %s\n", flag.c_str(), o.help.c_str());
    }
    std::fprintf(out, "  %-20s %s\n", "--json", "print one JSON object instead of tables");
  };
  Args args;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      bench_usage(stdout);
      return 0;
    }
    if (a == "--json") args.json = true;
    args.argv.push_back(a);
  }
  if (const std::string problem = check_args(args.argv, bench.options); !problem.empty()) {
    std::fprintf(stderr, "caesium-bench %s: %s\n", name.c_str(), problem.c_str());
    bench_usage(stderr);
    return 2;
  }
  return bench.fn(args);
}
