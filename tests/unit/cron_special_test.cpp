// L, L-n, nW, LW, d#n and dL against hand-computed calendars: months of 28, 29, 30 and
// 31 days, W at the start and end of a month (it never crosses into another month).
// 2026 for reference: Jan 1 Thu, Feb 1 Sun, Mar 1 Sun, Apr 1 Wed, May 1 Fri, Jun 1 Mon,
// Jul 1 Wed, Aug 1 Sat, Sep 1 Tue, Oct 1 Thu, Nov 1 Sun, Dec 1 Tue.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/time.h"
#include "schedule/cron.h"

using caesium::format_rfc3339_utc;
using caesium::parse_rfc3339_ms;
using caesium::schedule::CronExpr;
using caesium::schedule::Zone;

namespace {

using V = std::vector<std::string>;

// Dates (YYYY-MM-DD) of the next n midnight occurrences after `from`.
V dates(const char* expr, const char* from, int n) {
  auto e = CronExpr::parse(expr);
  REQUIRE(e.ok());
  V out;
  int64_t t = parse_rfc3339_ms(from).value();
  for (int i = 0; i < n; ++i) {
    auto next = e->next_after(t, Zone::utc());
    REQUIRE(next.has_value());
    out.push_back(format_rfc3339_utc(*next).substr(0, 10));
    t = *next;
  }
  return out;
}

constexpr const char* kFrom = "2025-12-31T12:00:00Z";

}  // namespace

TEST_CASE("L is the last day of every month length", "[cron][special]") {
  CHECK(dates("0 0 L * *", kFrom, 4) == V{"2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30"});
  CHECK(dates("0 0 L 2 *", kFrom, 3) == V{"2026-02-28", "2027-02-28", "2028-02-29"});
  CHECK(dates("0 0 l 2 *", kFrom, 1) == V{"2026-02-28"});  // any case
}

TEST_CASE("L-n counts back from the last day", "[cron][special]") {
  CHECK(dates("0 0 L-1 * *", kFrom, 4) == V{"2026-01-30", "2026-02-27", "2026-03-30", "2026-04-29"});
  CHECK(dates("0 0 L-0 * *", kFrom, 1) == V{"2026-01-31"});
  CHECK(dates("0 0 L-3 2 *", kFrom, 3) == V{"2026-02-25", "2027-02-25", "2028-02-26"});
  // L-30 exists only in 31-day months (the 1st).
  CHECK(dates("0 0 L-30 * *", kFrom, 3) == V{"2026-01-01", "2026-03-01", "2026-05-01"});
  // Mixed with plain days in a list.
  CHECK(dates("0 0 10,L-2 1 *", kFrom, 2) == V{"2026-01-10", "2026-01-29"});
}

TEST_CASE("nW is the nearest weekday and stays inside the month", "[cron][special]") {
  // 1W: a Sunday 1st moves to Monday the 2nd; a Saturday 1st moves forward to Monday
  // the 3rd, not back into the previous month.
  CHECK(dates("0 0 1W * *", kFrom, 8) ==
        V{"2026-01-01", "2026-02-02", "2026-03-02", "2026-04-01", "2026-05-01", "2026-06-01", "2026-07-01",
          "2026-08-03"});
  // 15W: Sunday the 15th -> Monday 16th; Saturday the 15th -> Friday 14th.
  CHECK(dates("0 0 15W * *", kFrom, 8) ==
        V{"2026-01-15", "2026-02-16", "2026-03-16", "2026-04-15", "2026-05-15", "2026-06-15", "2026-07-15",
          "2026-08-14"});
  // 31W: only months with a 31st; a Saturday 31st -> Friday 30th, a Sunday 31st ->
  // Friday 29th (not Monday the 1st of the next month).
  CHECK(dates("0 0 31W * *", kFrom, 5) == V{"2026-01-30", "2026-03-31", "2026-05-29", "2026-07-31", "2026-08-31"});
  // 29W in February: only leap years; 2032-02-29 is a Sunday -> Friday the 27th.
  CHECK(dates("0 0 29W 2 *", kFrom, 3) == V{"2028-02-29", "2032-02-27", "2036-02-29"});
}

TEST_CASE("LW is the last weekday of the month", "[cron][special]") {
  CHECK(dates("0 0 LW * *", kFrom, 5) == V{"2026-01-30", "2026-02-27", "2026-03-31", "2026-04-30", "2026-05-29"});
}

TEST_CASE("d#n is the n-th weekday d of the month", "[cron][special]") {
  CHECK(dates("0 0 * * 5#1", kFrom, 3) == V{"2026-01-02", "2026-02-06", "2026-03-06"});
  CHECK(dates("0 0 * * FRI#2", kFrom, 2) == V{"2026-01-09", "2026-02-13"});
  // A fifth Monday exists only in some months.
  CHECK(dates("0 0 * * MON#5", kFrom, 3) == V{"2026-03-30", "2026-06-29", "2026-08-31"});
  // Sunday as 7 and as a name; two items in a list.
  CHECK(dates("0 0 * * 7#1", kFrom, 1) == V{"2026-01-04"});
  CHECK(dates("0 0 * * sun#1,SAT#1", kFrom, 3) == V{"2026-01-03", "2026-01-04", "2026-02-01"});
}

TEST_CASE("dL is the last weekday d of the month", "[cron][special]") {
  CHECK(dates("0 0 * * 0L", kFrom, 3) == V{"2026-01-25", "2026-02-22", "2026-03-29"});
  CHECK(dates("0 0 * * 7L", kFrom, 1) == dates("0 0 * * SUNL", kFrom, 1));
  CHECK(dates("0 0 * * 5L", kFrom, 3) == V{"2026-01-30", "2026-02-27", "2026-03-27"});
}

TEST_CASE("specials combine with the other day field by the Debian rule", "[cron][special]") {
  // Both restricted: last day of the month OR any Monday.
  CHECK(dates("0 0 L * MON", kFrom, 4) == V{"2026-01-05", "2026-01-12", "2026-01-19", "2026-01-26"});
  // Day-of-month '*': the last Friday only.
  CHECK(dates("0 0 * * 5L", kFrom, 1) == V{"2026-01-30"});
  // Day-of-week '*'-prefixed: L AND a weekend day (*/6 = Sunday, Saturday).
  CHECK(dates("0 0 L * */6", kFrom, 3) == V{"2026-01-31", "2026-02-28", "2026-05-31"});
}
