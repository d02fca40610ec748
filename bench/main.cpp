// caesium-bench: dispatches to one benchmark per subcommand.
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: caesium-bench <benchmark> [--json]\n", stderr);
    return 2;
  }
  std::fprintf(stderr, "caesium-bench: unknown benchmark '%s'\n", argv[1]);
  return 2;
}
