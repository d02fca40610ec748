// `caesium cron next`, run in-process with the clock fixed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/unit/cli_run.h"

using caesium::test::CliRun;
using caesium::test::FakeCli;

namespace {
using Args = std::vector<std::string>;

CliRun cron(Args args) {
  args.insert(args.begin(), "cron");
  return FakeCli().run(args);
}
}  // namespace

TEST_CASE("cron next prints instants with the zone's offset at each instant", "[cron][cli]") {
  const auto r = cron({"next", "30 1 * * *", "--tz", "Europe/London", "-n", "3"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "2026-03-29T02:00:00+01:00\n2026-03-30T01:30:00+01:00\n2026-03-31T01:30:00+01:00\n");
}

TEST_CASE("cron next defaults: UTC, 5 lines, from now, --from and = forms", "[cron][cli]") {
  const auto r = cron({"next", "@daily"});
  CHECK(r.status == 0);
  CHECK(r.out ==
        "2026-03-29T00:00:00Z\n2026-03-30T00:00:00Z\n2026-03-31T00:00:00Z\n2026-04-01T00:00:00Z\n"
        "2026-04-02T00:00:00Z\n");
  const auto f = cron({"next", "0 9 * * MON", "--from=2026-01-01T00:00:00Z", "--count=1", "--tz=UTC"});
  CHECK(f.out == "2026-01-05T09:00:00Z\n");
  CHECK(cron({"next", "0 9 * * MON", "--from", "2026-01-01T00:00:00Z", "-n1"}).out == f.out);
  // Fields given as separate words are joined.
  const auto w = cron({"next", "0", "9", "*", "*", "MON", "-n", "1", "--from", "2026-01-01T00:00:00Z"});
  CHECK(w.out == f.out);
  // @every counts from --from.
  const auto e = cron({"next", "@every 90m", "-n", "2", "--from", "2026-01-01T00:00:00Z"});
  CHECK(e.out == "2026-01-01T01:30:00Z\n2026-01-01T03:00:00Z\n");
}

TEST_CASE("cron next: bad input exits 2 with the error on stderr", "[cron][cli]") {
  struct Case {
    Args args;
    const char* err;  // the first line
  };
  const Case cases[] = {
      {{"next", "0 9 * * FRX"},
       "caesium cron next: day-of-week at column 9: 'FRX' is not a day name (expected SUN-SAT or 0-7)"},
      {{"next", "@daily", "--tz", "Nowhere/Special"},
       "caesium cron next: --tz: unknown time zone 'Nowhere/Special' (expected an IANA zone name such as "
       "\"Europe/London\" or \"UTC\")"},
      {{"next", "@daily", "-n", "0"}, "caesium cron next: --count: '0' is not a whole number from 1 to 1000"},
      {{"next", "@daily", "-n", "5x"}, "caesium cron next: --count: '5x' is not a whole number from 1 to 1000"},
      {{"next", "@daily", "--from", "yesterday"}, nullptr},
      {{"next", "@daily", "--tz"}, "caesium cron next: --tz needs a value"},
      {{"next", "@daily", "--bogus"}, "caesium cron next: unknown option '--bogus'"},
      {{"next"}, "caesium cron next: missing EXPR"},
      {{"previous", "@daily"}, "caesium cron: unknown command 'previous'"},
      {{}, nullptr},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    INFO("args: " << joined);
    const auto r = cron(c.args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("caesium cron", 0) == 0);
    if (c.err != nullptr) CHECK(r.err.substr(0, r.err.find('\n')) == c.err);
    CHECK(r.err.find("--help' for usage\n") != std::string::npos);
  }
  CHECK(cron({"next", "@daily", "--from", "yesterday"}).err.find("--from: ") != std::string::npos);
}

TEST_CASE("cron next: help and running out of occurrences", "[cron][cli]") {
  const auto h = cron({"next", "--help"});
  CHECK(h.status == 0);
  CHECK(h.out.find("Usage: caesium cron next") != std::string::npos);
  CHECK(h.err.empty());
  // A wildcard job whose every match is in a DST gap: no occurrence, a note, exit 0.
  const auto none = cron({"next", "*/5 2 8-14 3 */7", "--tz", "America/New_York"});
  CHECK(none.status == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "note: no further occurrence within 400 years\n");
}

TEST_CASE("cron next --entry: H hashes that entry's key, without it H is refused with a hint", "[cron][cli][hash]") {
  const Args from = {"--from", "2026-01-01T00:00:00Z", "-n", "2"};
  auto with = [&](Args args) {
    args.insert(args.end(), from.begin(), from.end());
    return cron(args);
  };
  // The times `caesium get` would show for the entry acme/report (cron_hash_test pins them).
  const auto r = with({"next", "H H * * *", "--entry", "acme/report"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "2026-01-01T07:54:00Z\n2026-01-02T07:54:00Z\n");
  CHECK(with({"next", "H H * * *", "--entry=acme/report"}).out == r.out);
  // Another entry, another time; an expression without H ignores --entry.
  CHECK(with({"next", "H H * * *", "--entry", "acme/other"}).out != r.out);
  CHECK(with({"next", "0 9 * * *", "--entry", "acme/report"}).out == with({"next", "0 9 * * *"}).out);

  const auto keyless = with({"next", "H H * * *"});
  CHECK(keyless.status == 2);
  CHECK(keyless.out.empty());
  CHECK(keyless.err.substr(0, keyless.err.find('\n')) ==
        "caesium cron next: minute at column 1: 'H' picks its value by hashing the entry's key, and this expression "
        "was parsed without one; expected a number, range or '*' (give --entry ENTITY/NAME: H hashes that entry's "
        "key)");
  struct Case {
    const char* entry;
    const char* err;
  };
  const Case bad[] = {
      {"acme", "caesium cron next: --entry: expected ENTITY/NAME, e.g. acme/report"},
      {"a b/x", "caesium cron next: --entry: entity: character 2 is not allowed; use letters, digits and . _ : @ -"},
      {"acme/", "caesium cron next: --entry: name: must not be empty"},
      {"acme/a/b", "caesium cron next: --entry: name: character 2 is not allowed; use letters, digits and . _ : @ -"},
  };
  for (const auto& c : bad) {
    INFO(c.entry);
    const auto e = with({"next", "H H * * *", "--entry", c.entry});
    CHECK(e.status == 2);
    CHECK(e.err.substr(0, e.err.find('\n')) == c.err);
  }
}
