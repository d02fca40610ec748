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
  const char* zones[] = {"America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Sao_Paulo",
                         "Antarctica/Troll", "Pacific/Chatham", "Asia/Tehran"};
  for (int r = 0; r < 300; ++r) {
    const char* name = zones[rng.below(std::size(zones))];
    const auto zone = Zone::find(name).value();
    const date::time_zone* tz = date::locate_zone(name);
    // A transition between 2000 and 2036 (date's own data ends in 2037).
    std::vector<int64_t> candidates;
    for (const auto& t : zone.transitions()) {
      if (t.utc_s >= 946'684'800 && t.utc_s < 2'082'758'400) candidates.push_back(t.utc_s);
    }
    REQUIRE_FALSE(candidates.empty());
    const int64_t t = candidates[rng.below(candidates.size())];
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
