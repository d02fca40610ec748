// caesium cron next EXPR [--tz ZONE] [--from RFC3339] [-n N]
//
// Prints the next N instants at which a cron expression fires, one per line, in RFC 3339
// with the zone's UTC offset at that instant.  The logic lives in
// schedule/cron_preview.h (pure, unit-tested); this file only reads the wall clock for
// the default --from and prints.  Exit status: 0 ok, 2 bad expression, zone or flag.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "node/cli/command.h"
#include "schedule/cron_preview.h"

namespace {

int run_cron(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const int64_t now_utc_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  const auto result = caesium::schedule::run_cron_preview(args, now_utc_ms);
  std::fputs(result.out.c_str(), stdout);
  std::fputs(result.err.c_str(), stderr);
  return result.exit_code;
}

}  // namespace

CAESIUM_COMMAND("cron", "cron next EXPR [--tz ZONE] [--from RFC3339] [-n N]", run_cron);
