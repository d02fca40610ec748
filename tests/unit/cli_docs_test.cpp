// docs/cli.md and the parser list the same commands and options.
//
// The parser side is the command tree itself (node/cli/commands.h).  The docs side is
// docs/cli.md's "## Synopsis" section: in its fenced block, a line "caesium WORDS ..."
// names a command (the lowercase words after "caesium") and every -x / --xyz on it or on
// the indented lines after it is one of its options; "[client options]" stands for the
// options listed on the block's line "client options: ...".  A command that cannot run
// without a subcommand (cron) is listed through its subcommands; a subcommand that passes
// unknown options to its parent (config get, config apply) takes the parent's too.
// -h, --help and --help-all are on every command and need no listing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/unit/cli_run.h"

namespace {

using Listing = std::map<std::string, std::set<std::string>>;  // command path -> options

void walk(const CLI::App& app, const std::string& path, const std::set<std::string>& inherited, Listing& out) {
  std::set<std::string> options = app.get_fallthrough() ? inherited : std::set<std::string>{};
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional() || o == app.get_help_ptr() || o == app.get_help_all_ptr()) continue;
    for (const auto& n : o->get_lnames()) options.insert("--" + n);
    for (const auto& n : o->get_snames()) options.insert("-" + n);
  }
  if (app.get_require_subcommand_min() == 0 || app.get_parent() == nullptr) out[path] = options;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), options, out);
  }
}

Listing from_parser() {
  std::ostringstream out, err;
  int exit_code = 0;
  caesium::cli::Io io{out, err, {}, {}, {}};
  auto app = caesium::cli::caesium_app(io, exit_code);
  Listing l;
  walk(*app, "", {}, l);
  return l;
}

std::string synopsis_block(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line, block;
  bool in_section = false, in_fence = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Synopsis";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      if (in_fence) break;
      in_fence = true;
      continue;
    }
    if (in_fence) block += line + "\n";
  }
  return block;
}

std::set<std::string> options_in(const std::string& text) {
  std::set<std::string> out;
  static const std::regex option(R"((^|[\s\[\(|])(--?[a-z][a-z-]*))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), option); it != std::sregex_iterator(); ++it) {
    const std::string o = (*it)[2];
    if (o != "-h" && o != "--help" && o != "--help-all") out.insert(o);  // on every command
  }
  return out;
}

Listing from_docs(const std::string& block) {
  Listing l;
  std::set<std::string> client_options;
  std::istringstream in(block);
  std::string line, current;
  std::map<std::string, bool> uses_client;
  while (std::getline(in, line)) {
    if (line.rfind("client options:", 0) == 0) {
      client_options = options_in(line.substr(15));
      current.clear();
      continue;
    }
    if (line.rfind("caesium", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string w;
      current.clear();
      while (words >> w && std::regex_match(w, std::regex("[a-z][a-z-]*"))) current += current.empty() ? w : " " + w;
      l[current];  // a command with no options is listed too
    } else if (line.empty() || !std::isspace(static_cast<unsigned char>(line[0]))) {
      current.clear();
      continue;
    }
    const std::string rest = line.rfind("caesium", 0) == 0 ? line.substr(7) : line;
    for (const auto& o : options_in(rest)) l[current].insert(o);
    if (line.find("[client options]") != std::string::npos) uses_client[current] = true;
  }
  for (const auto& [command, uses] : uses_client) {
    if (uses) l[command].insert(client_options.begin(), client_options.end());
  }
  return l;
}

std::string show(const Listing& l) {
  std::string s;
  for (const auto& [command, options] : l) {
    s += "caesium " + command + ":";
    for (const auto& o : options) s += " " + o;
    s += "\n";
  }
  return s;
}

}  // namespace

TEST_CASE("docs/cli.md lists exactly the commands and options of the parser", "[cli][docs]") {
  const char* root = std::getenv("CAESIUM_SOURCE_DIR");
  REQUIRE(root != nullptr);
  const std::string block = synopsis_block(std::string(root) + "/docs/cli.md");
  REQUIRE_FALSE(block.empty());
  const Listing docs = from_docs(block);
  const Listing parser = from_parser();
  INFO("docs/cli.md:\n" << show(docs) << "\nthe parser:\n" << show(parser));
  for (const auto& [command, options] : parser) {
    INFO("caesium " << command);
    REQUIRE(docs.count(command) == 1);
    CHECK(docs.at(command) == options);
  }
  for (const auto& [command, options] : docs) {
    INFO("caesium " << command << " is in docs/cli.md");
    CHECK(parser.count(command) == 1);
  }
}

TEST_CASE("the docs check bites: a missing option or command is seen", "[cli][docs]") {
  const Listing parser = from_parser();
  REQUIRE(parser.count("put") == 1);
  REQUIRE(parser.at("put").count("--cron") == 1);
  const Listing docs = from_docs(
      "client options: [--api HOST:PORT]\n"
      "caesium put VOLUME ENTITY NAME [--data JSON]\n"
      "    [--w N] [client options]\n"
      "caesium cron next EXPR... [-n N | --count N]\n");
  CHECK(docs.at("put") == std::set<std::string>{"--api", "--data", "--w"});
  CHECK(docs.at("cron next") == std::set<std::string>{"-n", "--count"});
  CHECK(docs.at("put") != parser.at("put"));
}

TEST_CASE("caesium version names the version and the binary's allocator", "[cli]") {
  caesium::test::FakeCli cli;
  const caesium::test::CliRun r = cli.run({"version"});
  CHECK(r.status == 0);
  CHECK(r.out.find("caesium 0.") == 0);
  // The in-process Io of the tests says glibc's; the binary's main.cpp names its own.
  CHECK(r.out.find("\nallocator: glibc malloc\n") != std::string::npos);
}
