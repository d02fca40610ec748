// caesium keygen [--out FILE] [--force] | --add-to FILE [--accept-only] | --promote FILE
//                | --drop-accepted FILE
//
// Makes and rotates cluster key files.  The logic is node/cli/keygen.h (unit-tested);
// this file only prints.  Exit status: 0 ok, 1 a file could not be read or written
// (or --out names an existing file without --force), 2 bad usage or a bad key file.
#include <cstdio>
#include <string>
#include <vector>

#include "node/cli/command.h"
#include "node/cli/keygen.h"

namespace {

int run_keygen_cmd(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto result = caesium::daemon::run_keygen(args);
  std::fputs(result.out.c_str(), stdout);
  std::fputs(result.err.c_str(), stderr);
  return result.exit_code;
}

}  // namespace

CAESIUM_COMMAND("keygen",
                "keygen [--out FILE] [--force] | --add-to FILE [--accept-only] | --promote FILE | "
                "--drop-accepted FILE",
                run_keygen_cmd);
