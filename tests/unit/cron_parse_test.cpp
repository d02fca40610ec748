// Cron syntax: what each form selects, macros, error messages (field, column, what was
// expected) and the rejection of expressions that can never fire.
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

int64_t at(const char* rfc3339) { return parse_rfc3339_ms(rfc3339).value(); }

// The next `n` UTC instants after `from`, formatted.
std::vector<std::string> next_n(const char* expr, const char* from, int n) {
  auto e = CronExpr::parse(expr);
  REQUIRE(e.ok());
  std::vector<std::string> out;
  int64_t t = at(from);
  for (int i = 0; i < n; ++i) {
    auto next = e->next_after(t, Zone::utc());
    if (!next) break;
    out.push_back(format_rfc3339_utc(*next));
    t = *next;
  }
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("lists, ranges, steps and names select what they say", "[cron]") {
  CHECK(next_n("*/20 * * * *", "2026-01-01T00:00:00Z", 3) ==
        V{"2026-01-01T00:20:00Z", "2026-01-01T00:40:00Z", "2026-01-01T01:00:00Z"});
  CHECK(next_n("5-10/3 * * * *", "2026-01-01T00:00:00Z", 3) ==
        V{"2026-01-01T00:05:00Z", "2026-01-01T00:08:00Z", "2026-01-01T01:05:00Z"});
  // a/n means a through the field's maximum, every n.
  CHECK(next_n("50/4 * * * *", "2026-01-01T00:00:00Z", 4) ==
        V{"2026-01-01T00:50:00Z", "2026-01-01T00:54:00Z", "2026-01-01T00:58:00Z", "2026-01-01T01:50:00Z"});
  CHECK(next_n("0 0 1 jan,Jul *", "2026-01-01T00:00:00Z", 2) == V{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"});
  CHECK(next_n("0 12 * * Mon-wed", "2026-01-01T00:00:00Z", 3) ==  // 2026-01-01 is a Thursday
        V{"2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z", "2026-01-07T12:00:00Z"});
  // Sunday is 0 or 7.
  CHECK(next_n("0 0 * * 7", "2026-01-01T00:00:00Z", 1) == next_n("0 0 * * 0", "2026-01-01T00:00:00Z", 1));
  CHECK(next_n("0 0 * * 5-7", "2026-01-01T00:00:00Z", 3) ==
        V{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"});
  CHECK(next_n("0 0 ? * SUN", "2026-01-01T00:00:00Z", 1) == V{"2026-01-04T00:00:00Z"});
  // Six fields: seconds first.
  CHECK(next_n("*/15 30 9 * * *", "2026-01-01T09:30:20Z", 3) ==
        V{"2026-01-01T09:30:30Z", "2026-01-01T09:30:45Z", "2026-01-02T09:30:00Z"});
  // Tabs and repeated spaces separate fields too.
  CHECK(next_n(" 0\t9  * *  *  ", "2026-01-01T00:00:00Z", 1) == V{"2026-01-01T09:00:00Z"});
}

TEST_CASE("next_after is strictly after and returns whole seconds", "[cron]") {
  auto e = CronExpr::parse("0 9 * * *").value();
  CHECK(format_rfc3339_utc(*e.next_after(at("2026-01-01T09:00:00Z"), Zone::utc())) == "2026-01-02T09:00:00Z");
  CHECK(format_rfc3339_utc(*e.next_after(at("2026-01-01T08:59:59.999Z"), Zone::utc())) == "2026-01-01T09:00:00Z");
  auto s = CronExpr::parse("* * * * * *").value();
  CHECK(*s.next_after(at("2026-01-01T00:00:00.500Z"), Zone::utc()) == at("2026-01-01T00:00:01Z"));
  CHECK(*s.next_after(-1, Zone::utc()) == 0);  // the epoch, from 1 ms before it
  CHECK_FALSE(s.next_after(caesium::schedule::kCronMaxUtcMs, Zone::utc()).has_value());
  CHECK_FALSE(CronExpr().next_after(0, Zone::utc()).has_value());  // empty expression
}

TEST_CASE("the day-of-month / day-of-week rule follows Debian cron", "[cron]") {
  // Both restricted: either matches.  The 1st and 15th of the month, and every Friday.
  CHECK(next_n("30 4 1,15 * 5", "2026-01-01T00:00:00Z", 5) ==
        V{"2026-01-01T04:30:00Z", "2026-01-02T04:30:00Z", "2026-01-09T04:30:00Z", "2026-01-15T04:30:00Z",
          "2026-01-16T04:30:00Z"});
  // A field starting with '*' is unrestricted, so the other one must match too:
  // odd days (*/2 from 1) that are Mondays.
  CHECK(next_n("0 0 */2 * MON", "2026-01-01T00:00:00Z", 3) ==
        V{"2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z", "2026-02-09T00:00:00Z"});
  // And in day-of-week: the 13th when it is a Friday (*/5 = Sunday and Friday).
  CHECK(next_n("0 0 13 * */5", "2026-01-01T00:00:00Z", 2) == V{"2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z"});
  // '?' counts as unrestricted.
  CHECK(next_n("0 0 13 * ?", "2026-01-01T00:00:00Z", 1) == V{"2026-01-13T00:00:00Z"});
}

TEST_CASE("macros expand to their standard meaning", "[cron]") {
  const char* from = "2026-05-17T10:20:30Z";  // a Sunday
  CHECK(next_n("@yearly", from, 1) == next_n("0 0 1 1 *", from, 1));
  CHECK(next_n("@annually", from, 1) == V{"2027-01-01T00:00:00Z"});
  CHECK(next_n("@monthly", from, 1) == V{"2026-06-01T00:00:00Z"});
  CHECK(next_n("@weekly", from, 1) == V{"2026-05-24T00:00:00Z"});
  CHECK(next_n("@daily", from, 1) == V{"2026-05-18T00:00:00Z"});
  CHECK(next_n("@MIDNIGHT", from, 1) == V{"2026-05-18T00:00:00Z"});
  CHECK(next_n("@hourly", from, 1) == V{"2026-05-17T11:00:00Z"});
  CHECK(CronExpr::parse("@hourly")->follows_real_time());
  CHECK_FALSE(CronExpr::parse("@daily")->follows_real_time());
}

TEST_CASE("@every counts whole intervals from its anchor", "[cron]") {
  auto e = CronExpr::parse("@every 1h30m").value();
  CHECK(e.every_ms() == 90 * 60 * 1000);
  const int64_t anchor = at("2026-01-01T00:00:10.700Z");  // rounded down to :10
  CHECK(format_rfc3339_utc(*e.next_after(anchor, Zone::utc(), anchor)) == "2026-01-01T01:30:10Z");
  CHECK(format_rfc3339_utc(*e.next_after(at("2026-01-01T01:30:10Z"), Zone::utc(), anchor)) ==
        "2026-01-01T03:00:10Z");
  // Before the anchor, the first occurrence is still anchor + d (k >= 1).
  CHECK(format_rfc3339_utc(*e.next_after(at("2025-01-01T00:00:00Z"), Zone::utc(), anchor)) ==
        "2026-01-01T01:30:10Z");
  // Zones do not matter: it is real time.
  CHECK(e.next_after(anchor, Zone::find("America/New_York").value(), anchor) ==
        e.next_after(anchor, Zone::utc(), anchor));
  CHECK_FALSE(CronExpr::parse("@every 1500ms").ok());
  CHECK_FALSE(CronExpr::parse("@every 0s").ok());
  CHECK_FALSE(CronExpr::parse("@every").ok());
  CHECK_FALSE(CronExpr::parse("@every 1 m").ok());
}

TEST_CASE("parse errors name the field, the column and what was expected", "[cron]") {
  struct Case {
    const char* text;
    const char* message;
    const char* field;
  };
  const Case cases[] = {
      {"0 9 * * FRX", "day-of-week at column 9: 'FRX' is not a day name (expected SUN-SAT or 0-7)", "day-of-week"},
      {"0 9 * * MON,FRX", "day-of-week at column 13: 'FRX' is not a day name (expected SUN-SAT or 0-7)",
       "day-of-week"},
      {"60 * * * *", "minute at column 1: 60 is out of range; expected a number 0-59", "minute"},
      {"0 24 * * *", "hour at column 3: 24 is out of range; expected a number 0-23", "hour"},
      {"0 0 0 * *", "day-of-month at column 5: 0 is out of range; expected a number 1-31", "day-of-month"},
      {"0 0 1 13 *", "month at column 7: 13 is out of range; expected a month 1-12 or JAN-DEC", "month"},
      {"0 0 1 JNU *", "month at column 7: 'JNU' is not a month name (expected JAN-DEC or 1-12)", "month"},
      {"0 0 * * 8", "day-of-week at column 9: 8 is out of range; expected a weekday 0-7 or SUN-SAT", "day-of-week"},
      {"5-2 * * * *", "minute at column 1: range '5-2' goes backwards; expected start <= end (wrap-around ranges "
                      "are not supported)", "minute"},
      {"*/0 * * * *", "minute at column 3: step 0 is out of range; expected a step 1-60", "minute"},
      {"*/ * * * *", "minute at column 3: missing step after '/'; expected a step 1-60", "minute"},
      {"1,,2 * * * *", "minute at column 3: empty list item; expected a number, range, '*' or name", "minute"},
      {"1, * * * *", "minute at column 3: empty list item; expected a number, range, '*' or name", "minute"},
      {"0 9x * * *", "hour at column 4: unexpected 'x'; expected '-', '/', ',' or the end of the field", "hour"},
      {"? * * * *", "minute at column 1: '?' is only allowed in day-of-month and day-of-week; expected a number, "
                    "range or '*'", "minute"},
      {"0 0 ?,1 * *", "day-of-month at column 5: '?' must be the whole field", "day-of-month"},
      {"0 0 L-31 * *", "day-of-month at column 7: expected a number of days 0-30 after 'L-' (L-3 = three days "
                       "before the last day)", "day-of-month"},
      {"0 0 32W * *", "day-of-month at column 5: 32 is out of range; expected a number 1-31", "day-of-month"},
      {"0 0 * * 5#6", "day-of-week at column 11: expected a week number 1-5 after '#' (FRI#2 = second Friday)",
       "day-of-week"},
      {"0 0 * * L", "day-of-week at column 9: 'L' is not a day name (expected SUN-SAT or 0-7)", "day-of-week"},
      {"0 0 * * *x", "day-of-week at column 10: unexpected 'x' after '*'; expected '/', ',' or the end of the field",
       "day-of-week"},
      {"0 0 \x01 * *", "day-of-month at column 5: unexpected '\\x01'; expected a number 1-31", "day-of-month"},
      {"0 0 * *", "expression at column 8: found 4 fields; expected 5 (minute hour day-of-month month "
                  "day-of-week) or 6 (a leading seconds field)", "expression"},
      {"0 0 * * * * 2026", "expression at column 13: found 7 fields; expected 5 (minute hour day-of-month month "
                           "day-of-week) or 6 (a leading seconds field)", "expression"},
      {"", "expression at column 1: empty; expected 5 fields (minute hour day-of-month month day-of-week), 6 with "
           "a leading seconds field, or a macro such as @daily", "expression"},
      {"@reboot", "expression at column 1: unknown macro '@reboot'; expected @yearly, @annually, @monthly, "
                  "@weekly, @daily, @midnight, @hourly or @every <duration>", "expression"},
      {"@daily 5", "expression at column 8: unexpected '5' after @daily; a macro stands alone", "expression"},
      {"@every 1.5s", "@every at column 8: '1.5s' is not a whole number of seconds >= 1s", "@every"},
      {"99999 * * * *", "minute at column 1: number '99999' is too long; expected a number 0-59", "minute"},
  };
  for (const auto& c : cases) {
    INFO("input \"" << c.text << "\"");
    auto e = CronExpr::parse(c.text);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().message == c.message);
    CHECK(e.error().field == c.field);
  }
}

TEST_CASE("expressions that can never fire are rejected at parse time", "[cron]") {
  // L-29 is day 0 in a 29-day February; 30W needs a day 30.
  for (const char* text : {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 L-30 2 *", "0 0 31 2 *", "0 0 30,31 FEB *",
                           "0 0 L-29 2 *", "0 0 30W 2 *", "0 0 0 31 apr-apr ?"}) {
    INFO("input \"" << text << "\"");
    auto e = CronExpr::parse(text);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().field == "day-of-month");
    CHECK(e.error().message.find("never fires") != std::string::npos);
  }
  CHECK(CronExpr::parse("0 0 30 2 *").error().message ==
        "day-of-month at column 5: the expression never fires: no day in FEB matches day-of-month '30' and "
        "day-of-week '*'");
  // Near misses that do fire:
  CHECK(CronExpr::parse("0 0 31 */2 *").ok());   // odd months: January has 31 days
  CHECK(CronExpr::parse("0 0 */30 2 ?").ok());   // {1, 31}: February 1st
  CHECK(CronExpr::parse("0 0 L-28 2 *").ok());   // the 1st of a 29-day February
  CHECK(CronExpr::parse("0 0 30 2 MON").ok());   // both restricted: any Monday in February
  CHECK(next_n("0 0 29 2 *", "2026-01-01T00:00:00Z", 2) == V{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"});
  CHECK(next_n("0 0 L-28 2 *", "2026-01-01T00:00:00Z", 1) == V{"2028-02-01T00:00:00Z"});
}

TEST_CASE("rare expressions are found far ahead and the search is bounded", "[cron]") {
  // Feb 29 on a Sunday (*/7 = Sunday, and '*'-prefixed so both must match).
  CHECK(next_n("0 0 29 2 */7", "2026-01-01T00:00:00Z", 3) ==
        V{"2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z", "2088-02-29T00:00:00Z"});
  // Friday the 13th of February, 6 fields.
  CHECK(next_n("0 0 0 13 2 */5", "2026-01-01T00:00:00Z", 1) == V{"2026-02-13T00:00:00Z"});
  // Near the end of the supported range the search stops instead of overflowing.
  auto e = CronExpr::parse("0 0 29 2 */7").value();
  CHECK_FALSE(e.next_after(at("9999-06-01T00:00:00Z"), Zone::utc()).has_value());
  CHECK(e.next_after(-70'000'000'000'000, Zone::utc()).has_value());  // before year 1: clamped
}
