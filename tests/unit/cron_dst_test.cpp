// Time zones and the Debian cron(8) daylight-saving rule: hand-written vectors for each
// case in America/New_York, Europe/London, Australia/Lord_Howe (30-minute shift),
// America/Sao_Paulo (2018: gap at midnight) and Antarctica/Troll (2-hour shift), the
// Zone API itself, the post-2037 rule extension, and a randomized check against an
// oracle that scans UTC minute by minute using date/tz.h directly.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <date/tz.h>

#include "base/rng.h"
#include "tests/unit/test_seed.h"
#include "base/time.h"
#include "schedule/cron.h"
#include "schedule/zone.h"
#include "tests/unit/cron_oracle.h"

using caesium::format_rfc3339_offset;
using caesium::format_rfc3339_utc;
using caesium::parse_rfc3339_ms;
using caesium::Rng;
using caesium::schedule::CronExpr;
using caesium::schedule::LocalMapping;
using caesium::schedule::Zone;

namespace {

using caesium::test::seed_or;

using V = std::vector<std::string>;

int64_t at(const char* rfc3339) { return parse_rfc3339_ms(rfc3339).value(); }

// The next n instants after `from`, formatted with the zone's offset at each instant.
V next_n(const char* expr, const char* tz, const char* from, int n) {
  auto e = CronExpr::parse(expr);
  REQUIRE(e.ok());
  auto zone = Zone::find(tz);
  REQUIRE(zone.ok());
  V out;
  int64_t t = at(from);
  for (int i = 0; i < n; ++i) {
    auto next = e->next_after(t, *zone);
    if (!next) break;
    out.push_back(format_rfc3339_offset(*next, zone->offset_at(*next / 1000)));
    t = *next;
  }
  return out;
}

}  // namespace

TEST_CASE("zones: lookup, offsets and local-time mapping", "[zone]") {
  CHECK(Zone::utc().name() == "UTC");
  CHECK(Zone::utc().is_fixed());
  CHECK(Zone::find("UTC").value() == Zone::utc());
  auto ny = Zone::find("America/New_York");
  REQUIRE(ny.ok());
  CHECK(ny->name() == "America/New_York");
  CHECK(Zone::find("America/New_York").value() == *ny);  // cached: the same data
  CHECK(ny->offset_at(at("2026-01-15T12:00:00Z") / 1000) == -5 * 3600);
  CHECK(ny->offset_at(at("2026-07-15T12:00:00Z") / 1000) == -4 * 3600);
  CHECK(ny->offset_at(at("2026-03-08T06:59:59Z") / 1000) == -5 * 3600);
  CHECK(ny->offset_at(at("2026-03-08T07:00:00Z") / 1000) == -4 * 3600);

  auto local = [](const char* text) { return at(text) / 1000; };  // local wall time as if UTC
  const LocalMapping plain = ny->map_local(local("2026-03-08T01:59:00Z"));
  CHECK(plain.kind == LocalMapping::Kind::unique);
  CHECK(plain.first_utc_s == local("2026-03-08T06:59:00Z"));
  const LocalMapping gap = ny->map_local(local("2026-03-08T02:30:00Z"));
  CHECK(gap.kind == LocalMapping::Kind::skipped);
  CHECK(gap.first_utc_s == local("2026-03-08T07:00:00Z"));
  CHECK(ny->map_local(local("2026-03-08T03:00:00Z")).kind == LocalMapping::Kind::unique);
  const LocalMapping twice = ny->map_local(local("2026-11-01T01:30:00Z"));
  CHECK(twice.kind == LocalMapping::Kind::repeated);
  CHECK(twice.first_utc_s == local("2026-11-01T05:30:00Z"));
  CHECK(twice.second_utc_s == local("2026-11-01T06:30:00Z"));
  CHECK(ny->map_local(local("2026-11-01T02:00:00Z")).kind == LocalMapping::Kind::unique);

  auto transitions = ny->transitions();
  REQUIRE(transitions.size() > 100);
  for (size_t i = 1; i < transitions.size(); ++i) {
    CHECK(transitions[i].utc_s > transitions[i - 1].utc_s);
    CHECK(transitions[i].offset_before_s == transitions[i - 1].offset_after_s);
  }
}

TEST_CASE("zones: unknown names are clear errors", "[zone]") {
  auto bad = Zone::find("Mars/Olympus_Mons");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "tz");
  CHECK(bad.error().message.find("unknown time zone 'Mars/Olympus_Mons'") != std::string::npos);
  auto lower = Zone::find("europe/london");
  REQUIRE_FALSE(lower.ok());
  CHECK(lower.error().message.find("did you mean \"Europe/London\"?") != std::string::npos);
  // Names that could reach outside the zoneinfo tree are refused before any lookup.
  CHECK_FALSE(Zone::find("../../etc/passwd").ok());
  CHECK_FALSE(Zone::find("").ok());
  CHECK_FALSE(Zone::find(std::string(100, 'A')).ok());
}

TEST_CASE("zones: daylight saving continues past 2037 from the TZif footer rule", "[zone]") {
  auto ny = Zone::find("America/New_York").value();
  // 2040: DST from Sunday March 11 (second Sunday) to Sunday November 4 (first Sunday).
  CHECK(ny.offset_at(at("2040-07-01T12:00:00Z") / 1000) == -4 * 3600);
  CHECK(ny.offset_at(at("2040-03-11T06:59:59Z") / 1000) == -5 * 3600);
  CHECK(ny.offset_at(at("2040-03-11T07:00:00Z") / 1000) == -4 * 3600);
  CHECK(ny.offset_at(at("2040-11-04T05:59:59Z") / 1000) == -4 * 3600);
  CHECK(ny.offset_at(at("2040-11-04T06:00:00Z") / 1000) == -5 * 3600);
  CHECK(ny.offset_at(at("2400-07-01T12:00:00Z") / 1000) == -4 * 3600);
  // Southern hemisphere, 30-minute shift: Lord Howe is +11 in January 2100.
  CHECK(Zone::find("Australia/Lord_Howe")->offset_at(at("2100-01-15T00:00:00Z") / 1000) == 11 * 3600);
  CHECK(next_n("30 2 * * *", "America/New_York", "2040-03-10T12:00:00Z", 2) ==
        V{"2040-03-11T03:00:00-04:00", "2040-03-12T02:30:00-04:00"});
}

TEST_CASE("DST America/New_York: fixed-time jobs", "[cron][dst]") {
  // Spring forward 2026-03-08 02:00 EST -> 03:00 EDT.  2:30 does not exist: runs at 3:00.
  CHECK(next_n("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3) ==
        V{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"});
  // 2:00 and 3:00 both map to the instant the gap ends: one occurrence, not two.
  CHECK(next_n("0 2,3 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3) ==
        V{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T03:00:00-04:00"});
  // Fall back 2026-11-01 02:00 EDT -> 01:00 EST.  1:30 happens twice: runs in the first.
  CHECK(next_n("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2) ==
        V{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"});
  // Asked from inside the second copy, the repeated time is not offered again.
  CHECK(next_n("45 1 * * *", "America/New_York", "2026-11-01T06:10:00Z", 1) == V{"2026-11-02T01:45:00-05:00"});
  // Asked from inside the first copy, a later time in that copy is.
  CHECK(next_n("45 1 * * *", "America/New_York", "2026-11-01T05:10:00Z", 1) == V{"2026-11-01T01:45:00-04:00"});
  // 0-23 is not '*': a range covering every hour is still fixed-time (cron(8) looks at '*').
  CHECK(next_n("30 0-23 * * *", "America/New_York", "2026-11-01T05:00:00Z", 3) ==
        V{"2026-11-01T01:30:00-04:00", "2026-11-01T02:30:00-05:00", "2026-11-01T03:30:00-05:00"});
}

TEST_CASE("DST America/New_York: wildcard jobs follow real time", "[cron][dst]") {
  CHECK(next_n("*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3) ==
        V{"2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"});
  CHECK(next_n("*/30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", 6) ==
        V{"2026-11-01T00:30:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00",
          "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00"});
  // An hourly job runs in both copies of the repeated hour, and skips the missing one.
  CHECK(next_n("@hourly", "America/New_York", "2026-11-01T03:30:00Z", 4) ==
        V{"2026-11-01T00:00:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00",
          "2026-11-01T02:00:00-05:00"});
  CHECK(next_n("@hourly", "America/New_York", "2026-03-08T05:30:00Z", 2) ==
        V{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"});
  // A wildcard in the hour field alone is enough ("5 * * * *").
  CHECK(next_n("5 * * * *", "America/New_York", "2026-11-01T05:30:00Z", 2) ==
        V{"2026-11-01T01:05:00-05:00", "2026-11-01T02:05:00-05:00"});
  // A wildcard job whose only matches are in the gap never fires that day: 2:xx on the
  // second Sunday of March exists in no year, so the search gives up ("none"), quickly.
  auto never = CronExpr::parse("*/5 2 8-14 3 */7").value();
  CHECK_FALSE(never.next_after(at("2026-01-01T00:00:00Z"), Zone::find("America/New_York").value()).has_value());
}

TEST_CASE("DST Europe/London", "[cron][dst]") {
  // 2026-03-29 01:00 GMT -> 02:00 BST.
  CHECK(next_n("30 1 * * *", "Europe/London", "2026-03-28T00:00:00Z", 3) ==
        V{"2026-03-28T01:30:00Z", "2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"});
  CHECK(next_n("30 2 * * *", "Europe/London", "2026-03-28T12:00:00Z", 1) == V{"2026-03-29T02:30:00+01:00"});
  // 2026-10-25 02:00 BST -> 01:00 GMT.
  CHECK(next_n("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2) ==
        V{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"});
  CHECK(next_n("*/20 1 * * *", "Europe/London", "2026-10-24T23:30:00Z", 7) ==
        V{"2026-10-25T01:00:00+01:00", "2026-10-25T01:20:00+01:00", "2026-10-25T01:40:00+01:00",
          "2026-10-25T01:00:00Z", "2026-10-25T01:20:00Z", "2026-10-25T01:40:00Z", "2026-10-26T01:00:00Z"});
  CHECK(next_n("*/20 1 * * *", "Europe/London", "2026-03-28T23:30:00Z", 1) == V{"2026-03-30T01:00:00+01:00"});
}

TEST_CASE("DST Australia/Lord_Howe: 30-minute shifts", "[cron][dst]") {
  // 2026-10-04 02:00 +10:30 -> 02:30 +11.  2:15 does not exist: runs at 2:30.
  CHECK(next_n("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 2) ==
        V{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"});
  CHECK(next_n("*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z", 3) ==
        V{"2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00"});
  // 2026-04-05 02:00 +11 -> 01:30 +10:30.  1:45 happens twice.
  CHECK(next_n("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z", 2) ==
        V{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"});
  CHECK(next_n("*/15 * * * *", "Australia/Lord_Howe", "2026-04-04T14:20:00Z", 5) ==
        V{"2026-04-05T01:30:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-05T01:30:00+10:30",
          "2026-04-05T01:45:00+10:30", "2026-04-05T02:00:00+10:30"});
}

TEST_CASE("DST America/Sao_Paulo 2018: the gap is at midnight", "[cron][dst]") {
  // 2018-11-04 00:00 -03 -> 01:00 -02: the day starts at 01:00.
  CHECK(next_n("0 0 * * *", "America/Sao_Paulo", "2018-11-02T12:00:00Z", 3) ==
        V{"2018-11-03T00:00:00-03:00", "2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"});
  CHECK(next_n("30 0 4 11 *", "America/Sao_Paulo", "2018-01-01T00:00:00Z", 1) == V{"2018-11-04T01:00:00-02:00"});
  CHECK(next_n("*/30 * * * *", "America/Sao_Paulo", "2018-11-04T02:10:00Z", 2) ==
        V{"2018-11-03T23:30:00-03:00", "2018-11-04T01:00:00-02:00"});
  // 2019-02-17 00:00 -02 -> 2019-02-16 23:00 -03: 23:30 on the 16th happens twice.
  CHECK(next_n("30 23 * * *", "America/Sao_Paulo", "2019-02-16T12:00:00Z", 2) ==
        V{"2019-02-16T23:30:00-02:00", "2019-02-17T23:30:00-03:00"});
  CHECK(next_n("0 0 * * *", "America/Sao_Paulo", "2019-02-16T12:00:00Z", 2) ==
        V{"2019-02-17T00:00:00-03:00", "2019-02-18T00:00:00-03:00"});
}

TEST_CASE("DST Antarctica/Troll: 2-hour shifts", "[cron][dst]") {
  // 2026-03-29 01:00 UTC: 01:00 +00 -> 03:00 +02; 01:30 and 02:30 both run at 03:00.
  CHECK(next_n("30 1,2 * * *", "Antarctica/Troll", "2026-03-28T12:00:00Z", 3) ==
        V{"2026-03-29T03:00:00+02:00", "2026-03-30T01:30:00+02:00", "2026-03-30T02:30:00+02:00"});
  // 2026-10-25 01:00 UTC: 03:00 +02 -> 01:00 +00; 01:00-03:00 happens twice.
  CHECK(next_n("30 2 * * *", "Antarctica/Troll", "2026-10-24T12:00:00Z", 2) ==
        V{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00Z"});
  CHECK(next_n("0 * * * *", "Antarctica/Troll", "2026-10-24T23:30:00Z", 5) ==
        V{"2026-10-25T02:00:00+02:00", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z",
          "2026-10-25T04:00:00Z"});
}

namespace {

// Every expression in `forms` names the same local date with a different day form; each
// gives exactly `want` (the first instants after `from`).  The forms are checked one by
// one so a failure names the form.
void all_give(const std::vector<const char*>& forms, const char* tz, const char* from, const V& want) {
  for (const char* form : forms) {
    INFO(form << " in " << tz << " after " << from);
    CHECK(next_n(form, tz, from, static_cast<int>(want.size())) == want);
  }
}

}  // namespace

// The cron(8) rule applies to the time on the date a day form names, whichever form names
// it: in a gap, the gap's end (never the next month); in a repeated hour, once, in the
// first copy.  Each row lists a plain day number next to its L / L-n / W / LW / # / dL
// twins.
TEST_CASE("DST day forms: a time in a gap fires when the gap ends, for every day form", "[cron][dst][days]") {
  // America/Sao_Paulo 1965-01-31 (Sunday, the last day of January): 00:00 -03 -> 01:00 -02.
  all_give({"30 0 31 1 *", "30 0 L 1 *", "30 0 L-0 1 *", "30 0 * 1 SUNL", "30 0 * 1 0L", "30 0 * 1 SUN#5"},
           "America/Sao_Paulo", "1965-01-30T12:00:00Z", V{"1965-01-31T01:00:00-02:00"});
  // The month after is not touched: L fires on Feb 28 as usual, and a year later on Jan 31.
  CHECK(next_n("30 0 L * *", "America/Sao_Paulo", "1965-01-30T12:00:00Z", 2) ==
        V{"1965-01-31T01:00:00-02:00", "1965-02-28T00:30:00-02:00"});
  CHECK(next_n("30 0 L 1 *", "America/Sao_Paulo", "1965-01-30T12:00:00Z", 2) ==
        V{"1965-01-31T01:00:00-02:00", "1966-01-31T00:30:00-02:00"});
  // 1965-12-01 (Wednesday, the 1st): 00:00 -03 -> 01:00 -02.
  all_give({"30 0 1 12 *", "30 0 1W 12 *", "30 0 L-30 12 *", "30 0 * 12 WED#1", "0 0 1 12 *"}, "America/Sao_Paulo",
           "1965-11-30T12:00:00Z", V{"1965-12-01T01:00:00-02:00"});
  // 1963-10-23 (Wednesday): 00:00 -03 -> 01:00 -02.
  all_give({"30 0 23 10 *", "30 0 23W 10 *", "30 0 L-8 10 *", "30 0 * 10 WED#4"}, "America/Sao_Paulo",
           "1963-10-22T12:00:00Z", V{"1963-10-23T01:00:00-02:00"});
  // A wildcard time follows real time on that date: 00:00 and 00:30 do not exist.
  CHECK(next_n("*/30 * L 1 *", "America/Sao_Paulo", "1965-01-31T02:00:00Z", 2) ==
        V{"1965-01-31T01:00:00-02:00", "1965-01-31T01:30:00-02:00"});

  // Pacific/Apia skipped Friday 2011-12-30 entirely (Thursday 23:59:59 -10, then Saturday
  // 00:00 +14).  The 30th is L-1, LW (the 31st is a Saturday), 30W, the fifth Friday and
  // the last Friday: all fire when the day-long gap ends.  L (the 31st) exists.
  all_give({"0 12 30 12 *", "0 12 L-1 12 *", "0 12 LW 12 *", "0 12 30W 12 *", "0 12 * 12 FRI#5", "0 12 * 12 FRIL"},
           "Pacific/Apia", "2011-12-28T00:00:00Z", V{"2011-12-31T00:00:00+14:00"});
  CHECK(next_n("0 12 L 12 *", "Pacific/Apia", "2011-12-28T00:00:00Z", 1) == V{"2011-12-31T12:00:00+14:00"});

  // Europe/London, 2026-03-29 (the last Sunday, L-2): 01:00 GMT -> 02:00 BST.
  all_give({"30 1 29 3 *", "30 1 L-2 3 *", "30 1 * 3 SUNL", "30 1 * 3 SUN#5"}, "Europe/London",
           "2026-03-28T12:00:00Z", V{"2026-03-29T02:00:00+01:00"});
  // 2024-03-31 is both the last Sunday and the last day of March.
  all_give({"30 1 31 3 *", "30 1 L 3 *", "30 1 * 3 SUNL"}, "Europe/London", "2024-03-30T12:00:00Z",
           V{"2024-03-31T02:00:00+01:00"});

  // America/New_York: the second Sunday of March 2026, and the first Sunday of April 2006
  // (the rule before 2007).  02:00 EST -> 03:00 EDT.
  all_give({"30 2 8 3 *", "30 2 * 3 SUN#2", "30 2 L-23 3 *"}, "America/New_York", "2026-03-07T12:00:00Z",
           V{"2026-03-08T03:00:00-04:00"});
  all_give({"30 2 2 4 *", "30 2 * 4 SUN#1", "30 2 * 4 0#1"}, "America/New_York", "2006-04-01T12:00:00Z",
           V{"2006-04-02T03:00:00-04:00"});

  // Australia/Lord_Howe, 2026-10-04 (the first Sunday, L-27): 02:00 +10:30 -> 02:30 +11.
  all_give({"15 2 4 10 *", "15 2 * 10 SUN#1", "15 2 L-27 10 *"}, "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
           V{"2026-10-04T02:30:00+11:00"});
}

TEST_CASE("DST day forms: a repeated time fires once, in the first copy, for every day form", "[cron][dst][days]") {
  // America/Sao_Paulo 1966-03-01 00:00 -02 -> 1966-02-28 23:00 -03: 23:00-23:59 on Monday
  // the 28th (L, LW, 28W, the fourth and last Monday) happen twice.
  all_give({"30 23 28 2 *", "30 23 L 2 *", "30 23 LW 2 *", "30 23 28W 2 *", "30 23 * 2 MONL", "30 23 * 2 MON#4"},
           "America/Sao_Paulo", "1966-02-28T12:00:00Z", V{"1966-02-28T23:30:00-02:00"});
  // Asked from inside the second copy, L goes on to the next February's last day (which
  // is repeated too: 1967-03-01 00:00 -> 23:00).
  CHECK(next_n("30 23 L 2 *", "America/Sao_Paulo", "1966-03-01T02:40:00Z", 1) == V{"1967-02-28T23:30:00-02:00"});
  CHECK(next_n("45 23 L 2 *", "America/Sao_Paulo", "1966-03-01T02:40:00Z", 1) == V{"1967-02-28T23:45:00-02:00"});
  // A wildcard minute follows real time: both copies.
  CHECK(next_n("*/30 23 L 2 *", "America/Sao_Paulo", "1966-02-28T12:00:00Z", 4) ==
        V{"1966-02-28T23:00:00-02:00", "1966-02-28T23:30:00-02:00", "1966-02-28T23:00:00-03:00",
          "1966-02-28T23:30:00-03:00"});
  // 1965-03-31 00:00 -02 -> 03-30 23:00 -03: Tuesday the 30th is L-1, 30W, the fifth and
  // last Tuesday.
  all_give({"30 23 30 3 *", "30 23 L-1 3 *", "30 23 30W 3 *", "30 23 * 3 TUE#5", "30 23 * 3 TUEL"},
           "America/Sao_Paulo", "1965-03-30T12:00:00Z", V{"1965-03-30T23:30:00-02:00"});
  // 1933-04-01 00:00 -02 -> 03-31 23:00 -03: Friday the 31st is L, LW, 31W, the fifth
  // and last Friday.
  all_give({"30 23 31 3 *", "30 23 L 3 *", "30 23 LW 3 *", "30 23 31W 3 *", "30 23 * 3 FRIL", "30 23 * 3 FRI#5"},
           "America/Sao_Paulo", "1933-03-31T12:00:00Z", V{"1933-03-31T23:30:00-02:00"});

  // Europe/London 2026-10-25 (the last Sunday, L-6) and 2021-10-31 (the last Sunday and
  // the last day): 02:00 BST -> 01:00 GMT.
  all_give({"30 1 25 10 *", "30 1 L-6 10 *", "30 1 * 10 SUNL", "30 1 * 10 SUN#4"}, "Europe/London",
           "2026-10-24T12:00:00Z", V{"2026-10-25T01:30:00+01:00"});
  all_give({"30 1 31 10 *", "30 1 L 10 *", "30 1 * 10 SUNL"}, "Europe/London", "2021-10-30T12:00:00Z",
           V{"2021-10-31T01:30:00+01:00"});
  CHECK(next_n("30 1 L 10 *", "Europe/London", "2021-10-31T01:10:00Z", 1) == V{"2022-10-31T01:30:00Z"});

  // America/New_York: the first Sunday of November 2026; the last Sunday of October in
  // 2006 and in 1999 (then also the last day).  02:00 EDT -> 01:00 EST.
  all_give({"30 1 1 11 *", "30 1 * 11 SUN#1"}, "America/New_York", "2026-10-31T12:00:00Z",
           V{"2026-11-01T01:30:00-04:00"});
  // From the second copy the first Sunday moves on a year (to another first copy), and
  // 1W, a Sunday 1st moved to Monday, is not in the repeated hour at all.
  CHECK(next_n("30 1 * 11 SUN#1", "America/New_York", "2026-11-01T06:10:00Z", 1) == V{"2027-11-07T01:30:00-04:00"});
  CHECK(next_n("30 1 1W 11 *", "America/New_York", "2026-10-31T12:00:00Z", 1) == V{"2026-11-02T01:30:00-05:00"});
  all_give({"30 1 29 10 *", "30 1 * 10 SUNL", "30 1 L-2 10 *"}, "America/New_York", "2006-10-28T12:00:00Z",
           V{"2006-10-29T01:30:00-04:00"});
  all_give({"30 1 31 10 *", "30 1 L 10 *", "30 1 * 10 SUNL"}, "America/New_York", "1999-10-30T12:00:00Z",
           V{"1999-10-31T01:30:00-04:00"});

  // Australia/Lord_Howe 2026-04-05 (the first Sunday, L-25): 02:00 +11 -> 01:30 +10:30.
  all_give({"45 1 5 4 *", "45 1 * 4 SUN#1", "45 1 L-25 4 *"}, "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
           V{"2026-04-05T01:45:00+11:00"});
}

namespace {

// The cron(8) rule evaluated minute by minute in UTC, with offsets straight from
// date/tz.h (not from Zone).  REQUIRES: a 5-field expression (minute resolution).
std::optional<int64_t> dst_oracle_next(const cron_oracle::Expr& e, const date::time_zone* tz, int64_t after_ms,
                                       int64_t horizon_s) {
  using date::sys_seconds;
  const int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
  const int64_t first = (after_s >= 0 ? after_s / 60 : -((-after_s + 59) / 60)) * 60 + 60;
  for (int64_t u = first; u <= after_s + horizon_s; u += 60) {
    const auto info = tz->get_info(sys_seconds{std::chrono::seconds{u}});
    const int64_t o = info.offset.count();
    const int64_t begin = info.begin.time_since_epoch().count();
    const int64_t o_prev = tz->get_info(info.begin - std::chrono::seconds{1}).offset.count();
    const int64_t local = u + o;
    if (e.wildcard) {
      if (cron_oracle::matches(e, local)) return u * 1000;
      continue;
    }
    const bool second_copy = o_prev > o && local < begin + o_prev;
    if (!second_copy && cron_oracle::matches(e, local)) return u * 1000;
    if (u == begin && o_prev < o) {  // the gap's skipped local minutes run now
      for (int64_t l = begin + o_prev; l < begin + o; l += 60) {
        if (cron_oracle::matches(e, l)) return u * 1000;
      }
    }
  }
  return std::nullopt;
}

// One of `zones` at random and one of its transitions in [from_s, to_s), with the
// date/tz.h zone the oracle reads.
struct NearTransition {
  const char* name;
  Zone zone;
  const date::time_zone* tz;
  caesium::schedule::ZoneTransition transition;
};

NearTransition random_transition(Rng& rng, const std::vector<const char*>& zones, int64_t from_s, int64_t to_s) {
  const char* name = zones[rng.below(zones.size())];
  const auto zone = Zone::find(name).value();
  std::vector<caesium::schedule::ZoneTransition> candidates;
  for (const auto& t : zone.transitions()) {
    if (t.utc_s >= from_s && t.utc_s < to_s) candidates.push_back(t);
  }
  REQUIRE_FALSE(candidates.empty());
  return {name, zone, date::locate_zone(name), candidates[rng.below(candidates.size())]};
}

// A simple expression biased towards the small hours where transitions happen.
cron_oracle::Expr random_dst_expr(Rng& rng) {
  struct Choice {
    const char* text;
    std::vector<int> values;
    bool star;
  };
  const std::vector<Choice> minutes = {{"0", {0}, false},          {"30", {30}, false}, {"15,45", {15, 45}, false},
                                       {"*/20", {0, 20, 40}, true}, {"*/30", {0, 30}, true}, {"59", {59}, false},
                                       {"10-12", {10, 11, 12}, false}};
  const std::vector<Choice> hours = {{"0", {0}, false},        {"1", {1}, false},    {"2", {2}, false},
                                     {"1,2", {1, 2}, false},   {"0-3", {0, 1, 2, 3}, false},
                                     {"23", {23}, false},      {"*", {}, true},      {"*/2", {}, true},
                                     {"2-3", {2, 3}, false}};
  const auto& m = minutes[rng.below(minutes.size())];
  const auto& h = hours[rng.below(hours.size())];
  cron_oracle::Expr e;
  e.min.insert(m.values.begin(), m.values.end());
  if (h.star) {
    for (int v = 0; v < 24; v += std::string(h.text) == "*/2" ? 2 : 1) e.hour.insert(v);
  } else {
    e.hour.insert(h.values.begin(), h.values.end());
  }
  e.wildcard = m.star || h.star;
  for (int d = 1; d <= 31; ++d) e.dom.insert(d);
  for (int mo = 1; mo <= 12; ++mo) e.month.insert(mo);
  for (int w = 0; w < 7; ++w) e.dow.insert(w);
  e.dom_star = e.dow_star = true;
  e.text = std::string(m.text) + " " + h.text + " * * *";
  return e;
}

}  // namespace

TEST_CASE("DST rule agrees with a minute-by-minute UTC oracle around real transitions", "[cron][dst][oracle]") {
  const uint64_t seed = seed_or(4242);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  const std::vector<const char*> zones = {"America/New_York", "Europe/London",    "Australia/Lord_Howe",
                                         "America/Sao_Paulo", "Antarctica/Troll", "Pacific/Chatham",
                                         "Asia/Tehran"};
  for (int r = 0; r < 300; ++r) {
    // A transition between 2000 and 2036 (date's own data ends in 2037).
    const auto [name, zone, tz, transition] = random_transition(rng, zones, 946'684'800, 2'082'758'400);
    const int64_t t = transition.utc_s;
    const auto oe = random_dst_expr(rng);
    const auto expr = CronExpr::parse(oe.text).value();
    int64_t after_ms = (t - rng.between(0, 30 * 3600)) * 1000 + rng.between(-1, 1000);
    INFO("\"" << oe.text << "\" in " << name << " near " << format_rfc3339_utc(t * 1000));
    for (int step = 0; step < 8; ++step) {
      INFO("after " << format_rfc3339_utc(after_ms));
      const auto want = dst_oracle_next(oe, tz, after_ms, 3 * 86400);
      const auto got = expr.next_after(after_ms, zone);
      REQUIRE(want.has_value());  // every expression fires at least daily
      REQUIRE(got.has_value());
      CHECK(format_rfc3339_utc(*got) == format_rfc3339_utc(*want));
      after_ms = *got;
    }
  }
}

namespace {

// A day form that names the local date `c`, chosen at random among those that do (plain
// day, L / L-n, nW, LW, d#n, dL), written into `e` as text and as oracle sets.  The other
// day field is '*', so the form alone decides the day.
std::pair<std::string, std::string> random_day_form(Rng& rng, const cron_oracle::Civil& c, cron_oracle::Expr& e) {
  using cron_oracle::weekday;
  const int dim = cron_oracle::days_in_month(c.y, c.m);
  const int wd = weekday(c.y, c.m, c.d);
  int last_weekday = dim;
  while (weekday(c.y, c.m, last_weekday) == 0 || weekday(c.y, c.m, last_weekday) == 6) --last_weekday;
  std::vector<int> kinds = {0, 1, 4};
  if (wd >= 1 && wd <= 5) kinds.push_back(2);
  if (c.d == last_weekday) kinds.push_back(3);
  if (c.d + 7 > dim) kinds.push_back(5);
  const int kind = kinds[rng.below(kinds.size())];
  for (int d = 1; d <= 31; ++d) e.dom.insert(d);
  for (int w = 0; w < 7; ++w) e.dow.insert(w);
  for (int m = 1; m <= 12; ++m) e.month.insert(m);
  e.dom_star = e.dow_star = true;
  if (kind <= 3) {
    e.dom.clear();
    e.dom_star = false;
    if (kind == 0) e.dom.insert(c.d);
    if (kind == 1) e.last_minus.insert(dim - c.d);
    if (kind == 2) e.nearest.insert(c.d);
    if (kind == 3) e.last_weekday = true;
    const std::string text = kind == 0 ? std::to_string(c.d) : kind == 1 ? "L-" + std::to_string(dim - c.d)
                           : kind == 2 ? std::to_string(c.d) + "W" : "LW";
    return {text, "*"};
  }
  e.dow.clear();
  e.dow_star = false;
  if (kind == 4) e.nth.insert({wd, (c.d - 1) / 7 + 1});
  if (kind == 5) e.last_of.insert(wd);
  return {"*", std::to_string(wd) + (kind == 4 ? "#" + std::to_string((c.d - 1) / 7 + 1) : "L")};
}

// Minute and hour fields aimed at the local hour `h` where a transition happens: a fixed
// time (h, h and h+1, h-1 and h) or a wildcard ('*' hour, or a '*/20' minute).
void random_time_fields(Rng& rng, int h, cron_oracle::Expr& e, std::string& min_text, std::string& hour_text) {
  const int kind = static_cast<int>(rng.below(5));
  const int minute = std::array<int, 4>{0, 15, 30, 59}[rng.below(4)];
  min_text = std::to_string(minute);
  e.min = {minute};
  if (kind == 4) {
    min_text = "*/20";
    e.min = {0, 20, 40};
  }
  const int lo = kind == 2 ? std::max(h - 1, 0) : h;
  const int hi = kind == 1 ? std::min(h + 1, 23) : h;
  hour_text = std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
  e.hour.clear();
  for (int v = lo; v <= hi; ++v) e.hour.insert(v);
  if (kind == 3) {
    hour_text = "*";
    for (int v = 0; v < 24; ++v) e.hour.insert(v);
  }
  e.wildcard = kind >= 3;
}

}  // namespace

TEST_CASE("DST day forms agree with the minute-by-minute oracle on transition dates", "[cron][dst][days][oracle]") {
  const uint64_t seed = seed_or(3510);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  const std::vector<const char*> zones = {"America/Sao_Paulo",   "Europe/London",    "America/New_York", "Pacific/Apia",
                                         "Australia/Lord_Howe", "Antarctica/Troll", "Asia/Tehran"};
  for (int r = 0; r < 400; ++r) {
    // 1930-2036: date's own data ends in 2037; Sao Paulo's midnight changes are older.
    const auto [name, zone, tz, t] = random_transition(rng, zones, -1'262'304'000, 2'082'758'400);
    // The local date and hour of the first skipped or repeated minute.
    const int64_t first_local = t.utc_s + std::min(t.offset_before_s, t.offset_after_s);
    const cron_oracle::Civil c = cron_oracle::civil_from_local(first_local);
    cron_oracle::Expr oe;
    const auto [dom_text, dow_text] = random_day_form(rng, c, oe);
    std::string min_text, hour_text;
    random_time_fields(rng, c.hh, oe, min_text, hour_text);
    oe.text = min_text + " " + hour_text + " " + dom_text + " * " + dow_text;
    const auto expr = CronExpr::parse(oe.text).value();
    // From up to a day before the date's local midnight, then on from each answer.
    int64_t after_ms = (first_local - (c.hh * 3600 + c.mm * 60) - t.offset_before_s - rng.between(0, 86400)) * 1000;
    INFO("\"" << oe.text << "\" in " << name << " near " << format_rfc3339_utc(t.utc_s * 1000));
    for (int step = 0; step < 4; ++step) {
      INFO("after " << format_rfc3339_utc(after_ms));
      const auto got = expr.next_after(after_ms, zone);
      REQUIRE(got.has_value());
      const auto want = dst_oracle_next(oe, tz, after_ms, 3 * 86400);
      if (want) {
        CHECK(format_rfc3339_utc(*got) == format_rfc3339_utc(*want));
      } else {
        CHECK(*got > after_ms + int64_t{3} * 86400 * 1000);  // the oracle looked 3 days ahead
        break;
      }
      after_ms = *got;
    }
  }
}
