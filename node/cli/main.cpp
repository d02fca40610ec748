// caesium: one binary, one registered subcommand per job (node/cli/command.h).
#include <cstdio>
#include <string>

#include "node/cli/command.h"

namespace caesium::cli {

std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> c;
  return c;
}

Registration::Registration(const char* name, const char* usage, CommandFn fn) {
  commands()[name] = Command{usage, std::move(fn)};
}

}  // namespace caesium::cli

namespace {

void usage(FILE* out) {
  std::fputs("usage: caesium <command> [options]\n\ncommands:\n", out);
  for (const auto& [name, c] : caesium::cli::commands()) {
    std::fprintf(out, "  %-10s %s\n", name.c_str(), c.usage.c_str());
  }
  std::fputs("  version    print the version\n", out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "version" || cmd == "--version") {
    std::puts("caesium 0.1.0");
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    usage(stdout);
    return 0;
  }
  auto& table = caesium::cli::commands();
  auto it = table.find(cmd);
  if (it == table.end()) {
    std::fprintf(stderr, "caesium: unknown command '%s'\n", cmd.c_str());
    usage(stderr);
    return 2;
  }
  return it->second.fn(argc - 1, argv + 1);
}
