// `caesium cron next`: the command logic in schedule/cron_preview.h, run directly with
// the current time passed in.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/time.h"
#include "schedule/cron_preview.h"

using caesium::parse_rfc3339_ms;
using caesium::schedule::run_cron_preview;

namespace {
using Args = std::vector<std::string>;
const int64_t kNow = parse_rfc3339_ms("2026-03-28T12:00:00Z").value();
}  // namespace

TEST_CASE("cron next prints instants with the zone's offset at each instant", "[cron][cli]") {
  const auto r = run_cron_preview({"next", "30 1 * * *", "--tz", "Europe/London", "-n", "3"}, kNow);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "2026-03-29T02:00:00+01:00\n2026-03-30T01:30:00+01:00\n2026-03-31T01:30:00+01:00\n");
}

TEST_CASE("cron next defaults: UTC, 5 lines, from now; --from and = forms", "[cron][cli]") {
  const auto r = run_cron_preview({"next", "@daily"}, kNow);
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        "2026-03-29T00:00:00Z\n2026-03-30T00:00:00Z\n2026-03-31T00:00:00Z\n2026-04-01T00:00:00Z\n"
        "2026-04-02T00:00:00Z\n");
  const auto f = run_cron_preview({"next", "0 9 * * MON", "--from=2026-01-01T00:00:00Z", "-n=1", "--tz=UTC"}, kNow);
  CHECK(f.out == "2026-01-05T09:00:00Z\n");
  // Fields given as separate words are joined.
  const auto w = run_cron_preview({"next", "0", "9", "*", "*", "MON", "-n", "1", "--from", "2026-01-01T00:00:00Z"},
                                  kNow);
  CHECK(w.out == f.out);
  // @every counts from --from.
  const auto e = run_cron_preview({"next", "@every 90m", "-n", "2", "--from", "2026-01-01T00:00:00Z"}, kNow);
  CHECK(e.out == "2026-01-01T01:30:00Z\n2026-01-01T03:00:00Z\n");
}

TEST_CASE("cron next: bad input exits 2 with the error on stderr", "[cron][cli]") {
  struct Case {
    Args args;
    const char* err;
  };
  const Case cases[] = {
      {{"next", "0 9 * * FRX"}, "error: day-of-week at column 9: 'FRX' is not a day name (expected SUN-SAT or 0-7)\n"},
      {{"next", "@daily", "--tz", "Nowhere/Special"},
       "error: --tz: unknown time zone 'Nowhere/Special' (expected an IANA zone name such as \"Europe/London\" or "
       "\"UTC\")\n"},
      {{"next", "@daily", "-n", "0"}, "error: -n: '0' is not a count from 1 to 1000\n"},
      {{"next", "@daily", "-n", "5x"}, "error: -n: '5x' is not a count from 1 to 1000\n"},
      {{"next", "@daily", "--from", "yesterday"}, nullptr},
      {{"next", "@daily", "--tz"}, "error: option '--tz' needs a value\n"},
      {{"next", "@daily", "--bogus"}, nullptr},
      {{"next"}, nullptr},
      {{"previous", "@daily"}, nullptr},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    INFO("args: " << joined);
    const auto r = run_cron_preview(c.args, kNow);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("error: ", 0) == 0);
    if (c.err != nullptr) CHECK(r.err == c.err);
  }
  CHECK(run_cron_preview({"next", "@daily", "--from", "yesterday"}, kNow).err.find("--from:") != std::string::npos);
  CHECK(run_cron_preview({"next", "@daily", "--bogus"}, kNow).err.find("unknown option '--bogus'") !=
        std::string::npos);
}

TEST_CASE("cron next: help and running out of occurrences", "[cron][cli]") {
  const auto h = run_cron_preview({"--help"}, kNow);
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("usage: caesium cron next EXPR") == 0);
  CHECK(run_cron_preview({}, kNow).exit_code == 2);
  // A wildcard job whose every match is in a DST gap: no occurrence, a note, exit 0.
  const auto none = run_cron_preview({"next", "*/5 2 8-14 3 */7", "--tz", "America/New_York"}, kNow);
  CHECK(none.exit_code == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "note: no further occurrence within 400 years\n");
}
