// caesium: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <string>

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: caesium <command> [options]\n"
      "\n"
      "commands:\n"
      "  version            print the version\n",
      out);
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
  std::fprintf(stderr, "caesium: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}
