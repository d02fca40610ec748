// caesium-bench: one subcommand per registered benchmark (bench/registry.h), parsed with
// the same parser as `caesium` (node/cli/parse.h).
#include <cassert>
#include <charconv>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/registry.h"
#include "node/cli/parse.h"

namespace caesium::bench {

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

Registration::Registration(const char* name, const char* summary, BenchFn fn, std::vector<Option> options) {
  registry()[name] = Entry{summary, std::move(fn), std::move(options)};
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
  assert(ec == std::errc() && end == it->second.data() + it->second.size());
  (void)end;
  (void)ec;
  return n;
}

bool Args::has(const std::string& name) const { return switches.count(name) > 0 || values.count(name) > 0; }

namespace {

bool is_number_hint(const std::string& hint) { return hint == "N" || hint == "MS"; }

// "N,N,...": every item a whole number in [min, max].
CLI::Validator whole_numbers(int64_t min, int64_t max) {
  const CLI::Validator one = cli::whole_number(min, max);
  return cli::checked_by([one](const std::string& text) -> Status {
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (std::string problem = one(item); !problem.empty()) return Error(problem);
      if (comma == std::string::npos) return Status::success();
      start = comma + 1;
    }
  });
}

// One subcommand per benchmark; its callback reads what was given into Args and runs it.
void add_benchmark(CLI::App& app, const std::string& name, const Entry& bench, int& exit_code) {
  CLI::App* sub = app.add_subcommand(name, bench.summary);
  for (const Option& o : bench.options) {
    if (o.value.empty()) {
      cli::add_switch(*sub, "--" + o.name, o.help);
    } else {
      CLI::Option* opt = sub->add_option("--" + o.name, o.help)->type_name(o.value);
      if (is_number_hint(o.value)) opt->check(cli::whole_number(o.min, o.max));
      if (o.value == "N,...") opt->check(whole_numbers(o.min, o.max));
    }
  }
  cli::add_switch(*sub, "--json", "print one JSON object instead of tables");
  sub->callback([sub, &bench, &exit_code] {
    Args args;
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() == 0) continue;
      const std::string option = o->get_name().substr(2);
      if (o->get_items_expected_max() == 0) {
        args.switches.insert(option);
      } else {
        args.values[option] = o->results().back();
      }
    }
    args.json = args.switches.count("json") > 0;
    exit_code = bench.fn(args);
  });
}

}  // namespace
}  // namespace caesium::bench

int main(int argc, char** argv) {
  using namespace caesium::bench;
  CLI::App app("caesium-bench: Caesium's benchmark programs; each prints a table, or with --json one JSON object.",
               "caesium-bench");
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "print the help of every benchmark and exit");
  int exit_code = 0;
  for (const auto& [name, bench] : registry()) add_benchmark(app, name, bench, exit_code);
  if (auto stopped = caesium::cli::parse_command_line(app, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                                      std::cerr)) {
    return *stopped;
  }
  return exit_code;
}
