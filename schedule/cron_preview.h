// The logic of `caesium cron next EXPR [--tz ZONE] [--from RFC3339] [-n N]`, kept out of
// node/cli so it is pure (the current time is passed in) and unit-testable.  The command
// file only reads the clock and prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace caesium::schedule {

struct CronPreviewOutput {
  int exit_code = 0;  // 0 ok; 2 bad usage, expression, zone or flag
  std::string out;    // one RFC 3339 instant per line, with the zone's offset at that instant
  std::string err;    // "error: ..." lines, or a note when occurrences run out
};

inline constexpr const char* kCronUsage =
    "usage: caesium cron next EXPR [--tz ZONE] [--from RFC3339] [-n N]\n"
    "  Prints the next N (default 5, at most 1000) instants at which EXPR fires in ZONE\n"
    "  (default UTC) after --from (default now).  EXPR may be one quoted argument or\n"
    "  several (they are joined with spaces); use -- before an EXPR that starts with '-'.\n";

// `args` are the words after "cron" (args[0] should be "next").
CronPreviewOutput run_cron_preview(const std::vector<std::string>& args, int64_t now_utc_ms);

}  // namespace caesium::schedule
