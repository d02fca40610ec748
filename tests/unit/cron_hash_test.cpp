// Hash spreading (H, H(a-b), H/n, H(a-b)/n) in cron fields: what each form selects for
// many keys, that one key gives the same values on every parse (pinned values catch a
// change of hash or platform), that keys spread over the range (histograms over 6000
// keys), that H counts as a restriction for the day rule and daylight saving, and every
// refusal with its field and column.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/time.h"
#include "schedule/cron.h"
#include "tests/unit/test_seed.h"

using caesium::format_rfc3339_utc;
using caesium::parse_rfc3339_ms;
using caesium::schedule::cron_hash_key_digest;
using caesium::schedule::CronExpr;
using caesium::schedule::Zone;

namespace {

using Values = std::set<int>;

int64_t local(const char* rfc3339) { return parse_rfc3339_ms(rfc3339).value() / 1000; }

std::string key_of(int i) { return "e" + std::to_string(i % 7) + "/caesium/schedule/job-" + std::to_string(i); }

CronExpr parse_ok(const std::string& text, const std::string& key) {
  auto e = CronExpr::parse(text, key);
  INFO(text << " for " << key << ": " << (e.ok() ? "" : e.error().message));
  REQUIRE(e.ok());
  return *e;
}

// The values one field selects: `form` is put in that field of an expression whose other
// fields match one fixed instant, and each candidate value is probed with matches_local.
//   field 0 second, 1 minute, 2 hour, 3 day-of-month, 4 month, 5 day-of-week
Values selected(int field, const std::string& form, const std::string& key) {
  static const std::array<const char*, 6> kTemplates = {"%  0 0 * * *", "0 % 0 * * *", "0 0 % * * *",
                                                        "0 0 0 % * *", "0 0 0 1 % *", "0 0 0 * * %"};
  std::string text = kTemplates[static_cast<size_t>(field)];
  text.replace(text.find('%'), 1, form);
  const CronExpr e = parse_ok(text, key);
  Values out;
  const int64_t jan1 = local("2026-01-01T00:00:00Z");  // a Thursday
  for (int v = 0; v < 60; ++v) {
    int64_t t = -1;
    if (field == 0) t = jan1 + v;
    if (field == 1) t = jan1 + v * 60;
    if (field == 2 && v < 24) t = jan1 + v * 3600;
    if (field == 3 && v >= 1 && v <= 31) t = jan1 + (v - 1) * 86400;
    if (field == 4 && v >= 1 && v <= 12) {
      static const int kDayOfYear[] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
      t = jan1 + int64_t{kDayOfYear[v]} * 86400;
    }
    if (field == 5 && v < 7) t = local("2026-01-04T00:00:00Z") + v * 86400;  // Sunday + v
    if (t >= 0 && e.matches_local(t)) out.insert(v);
  }
  return out;
}

// {first, first + step, ...} up to hi.
Values progression(int first, int hi, int step) {
  Values out;
  for (int v = first; v <= hi; v += step) out.insert(v);
  return out;
}

}  // namespace

TEST_CASE("H picks one value of the field's H range", "[cron][hash]") {
  struct Case {
    int field;
    int lo, hi;
  };
  // Rangeless H: the whole field, except 1-28 in day-of-month (every month has those
  // days) and 0-6 in day-of-week (Sunday once), as Jenkins.
  const Case cases[] = {{0, 0, 59}, {1, 0, 59}, {2, 0, 23}, {3, 1, 28}, {4, 1, 12}, {5, 0, 6}};
  for (const auto& c : cases) {
    Values seen;
    for (int i = 0; i < 400; ++i) {
      const Values v = selected(c.field, "H", key_of(i));
      INFO("field " << c.field << " key " << key_of(i));
      REQUIRE(v.size() == 1);
      CHECK(*v.begin() >= c.lo);
      CHECK(*v.begin() <= c.hi);
      seen.insert(*v.begin());
    }
    INFO("field " << c.field);
    CHECK(*seen.begin() == c.lo);  // 400 keys reach both ends of the range
    CHECK(*seen.rbegin() == c.hi);
    // 'h' is H, as 'l' is L.
    CHECK(selected(c.field, "h", key_of(1)) == selected(c.field, "H", key_of(1)));
  }
}

TEST_CASE("H(a-b) picks one value in a..b, names work in the range", "[cron][hash]") {
  for (int i = 0; i < 300; ++i) {
    const std::string key = key_of(i);
    INFO(key);
    const Values m = selected(1, "H(0-29)", key);
    REQUIRE(m.size() == 1);
    CHECK(*m.begin() <= 29);
    const Values h = selected(2, "H(9-17)", key);
    REQUIRE(h.size() == 1);
    CHECK(*h.begin() >= 9);
    CHECK(*h.begin() <= 17);
    const Values d = selected(5, "H(MON-FRI)", key);
    REQUIRE(d.size() == 1);
    CHECK(*d.begin() >= 1);
    CHECK(*d.begin() <= 5);
    const Values mo = selected(4, "H(jun-AUG)", key);
    REQUIRE(mo.size() == 1);
    CHECK(*mo.begin() >= 6);
    CHECK(*mo.begin() <= 8);
    // A one-value range is that value; day-of-month may reach 31 when asked to.
    CHECK(selected(1, "H(7-7)", key) == Values{7});
    const Values late = selected(3, "H(29-31)", key);
    REQUIRE(late.size() == 1);
    CHECK(*late.begin() >= 29);
    // 7 is Sunday in a range too.
    const Values weekend = selected(5, "H(6-7)", key);
    CHECK((weekend == Values{6} || weekend == Values{0}));
  }
}

TEST_CASE("H/n and H(a-b)/n: every n-th value from a hashed offset below n", "[cron][hash]") {
  std::set<int> offsets;
  for (int i = 0; i < 300; ++i) {
    const std::string key = key_of(i);
    INFO(key);
    const Values q = selected(1, "H/15", key);
    REQUIRE(q.size() == 4);
    CHECK(*q.begin() < 15);
    CHECK(q == progression(*q.begin(), 59, 15));
    offsets.insert(*q.begin());
    // Jenkins's "three times in the first half of every hour".
    const Values half = selected(1, "H(0-29)/10", key);
    REQUIRE(half.size() == 3);
    CHECK(*half.begin() < 10);
    CHECK(half == progression(*half.begin(), 29, 10));
    // An offset from the range's start; the last value stays inside the range.
    const Values hours = selected(2, "H(9-16)/2", key);
    REQUIRE_FALSE(hours.empty());
    CHECK(*hours.begin() >= 9);
    CHECK(*hours.begin() <= 10);
    CHECK(hours == progression(*hours.begin(), 16, 2));
    // Day-of-month's H range is 1-28 with a step as well.
    const Values days = selected(3, "H/7", key);
    CHECK(*days.begin() <= 7);
    CHECK(days == progression(*days.begin(), 28, 7));
    // H/1 is every value: the offset within a step of 1 is always 0.
    CHECK(selected(1, "H/1", key) == progression(0, 59, 1));
  }
  CHECK(offsets == progression(0, 14, 1));  // every offset is used by some key
}

TEST_CASE("H items mix with other items in a list, each H draws its own value", "[cron][hash]") {
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string key = key_of(i);
    INFO(key);
    const Values two = selected(1, "H(0-29),H(30-59)", key);
    REQUIRE(two.size() == 2);
    CHECK(*two.begin() <= 29);
    CHECK(*two.rbegin() >= 30);
    // The second H is not the first plus 30: the items draw independently.
    differ += *two.rbegin() - 30 != *two.begin();
    const Values with_value = selected(1, "H(0-29),45", key);
    CHECK(with_value.count(45) == 1);
    CHECK(with_value.size() == 2);
    // With L in day-of-month: the last day and a hashed day.
    const CronExpr e = parse_ok("0 0 L,H * *", key);
    CHECK(e.matches_local(local("2026-02-28T00:00:00Z")));
    CHECK(e.matches_local(local("2026-04-30T00:00:00Z")));
  }
  CHECK(differ > 150);
}

TEST_CASE("one key gives the same values on every parse, pinned", "[cron][hash]") {
  const std::string key = "acme/caesium/schedule/report";
  // The digest is xxh3-64 of the key bytes with a fixed seed; these numbers must not
  // change between releases or platforms, or nodes of a cluster would disagree.
  CHECK(cron_hash_key_digest(key) == cron_hash_key_digest(std::string(key)));
  CHECK(cron_hash_key_digest(key) != cron_hash_key_digest("acme/caesium/schedule/reports"));
  CHECK(cron_hash_key_digest("") == cron_hash_key_digest(""));
  struct Pin {
    const char* text;
    std::vector<std::string> next;  // after 2026-01-01T00:00:00Z, UTC
  };
  const Pin pins[] = {
      {"H H * * *", {"2026-01-01T07:54:00Z", "2026-01-02T07:54:00Z"}},
      {"0 H H * * *", {"2026-01-01T07:54:00Z", "2026-01-02T07:54:00Z"}},  // same fields, same values
      {"H/15 * * * *", {"2026-01-01T00:09:00Z", "2026-01-01T00:24:00Z"}},
      {"H(0-29)/10 * * * *", {"2026-01-01T00:04:00Z", "2026-01-01T00:14:00Z"}},
      {"0 0 H * *", {"2026-01-20T00:00:00Z", "2026-02-20T00:00:00Z"}},
      {"H H H H *", {"2026-07-20T07:54:00Z", "2027-07-20T07:54:00Z"}},
  };
  for (const auto& p : pins) {
    INFO(p.text);
    const CronExpr a = parse_ok(p.text, key);
    const CronExpr b = parse_ok(p.text, key);
    CHECK(a == b);
    CHECK(a.uses_hash());
    CHECK(a.hash_key_digest() == cron_hash_key_digest(key));
    std::vector<std::string> got;
    int64_t t = parse_rfc3339_ms("2026-01-01T00:00:00Z").value();
    for (size_t i = 0; i < p.next.size(); ++i) {
      t = a.next_after(t, Zone::utc()).value();
      CHECK(b.next_after(t - 1000, Zone::utc()).value() == t);
      got.push_back(format_rfc3339_utc(t));
    }
    CHECK(got == p.next);
  }
  // Without H the key changes nothing, and the expression does not record one.
  const CronExpr plain = parse_ok("0 9 * * *", key);
  CHECK_FALSE(plain.uses_hash());
  CHECK(plain == CronExpr::parse("0 9 * * *").value());
  CHECK(plain == parse_ok("0 9 * * *", "other/caesium/schedule/x"));
  // Same text, other key: not the same compiled expression.
  CHECK_FALSE(parse_ok("H H * * *", key) == parse_ok("H H * * *", "acme/caesium/schedule/other"));
}

TEST_CASE("different keys spread over the range", "[cron][hash]") {
  // 6000 fixed keys, so the counts are fixed too; the bounds are loose (about 4 standard
  // deviations) but a hash that favoured part of the range, or ignored the key, fails.
  constexpr int kKeys = 6000;
  std::map<int, int> minute, hour, dom, offset15;
  std::map<std::pair<int, int>, int> joint;  // (minute % 4, hour % 4)
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = key_of(i);
    const CronExpr e = parse_ok("H H H * *", key);
    const int64_t t = e.next_after(parse_rfc3339_ms("2026-01-01T00:00:00Z").value(), Zone::utc()).value() / 1000;
    const int m = static_cast<int>(t / 60 % 60), h = static_cast<int>(t / 3600 % 24);
    ++minute[m];
    ++hour[h];
    ++joint[{m % 4, h % 4}];
    ++dom[*selected(3, "H", key).begin()];
    ++offset15[*selected(1, "H/15", key).begin()];
  }
  auto spread = [](const std::map<int, int>& counts, int lo, int hi) {
    const double mean = static_cast<double>(kKeys) / (hi - lo + 1);
    INFO("buckets " << lo << "-" << hi << ", mean " << mean);
    REQUIRE(counts.size() == static_cast<size_t>(hi - lo + 1));
    CHECK(counts.begin()->first == lo);
    CHECK(counts.rbegin()->first == hi);
    for (const auto& [value, n] : counts) {
      INFO("value " << value << ": " << n);
      CHECK(n > mean * 0.6);
      CHECK(n < mean * 1.4);
    }
  };
  spread(minute, 0, 59);
  spread(hour, 0, 23);
  spread(dom, 1, 28);
  spread(offset15, 0, 14);
  // Minute and hour are drawn independently: every (minute % 4, hour % 4) pair is
  // about equally common (if they were the same draw, few pairs would appear).
  REQUIRE(joint.size() == 16);
  for (const auto& [pair, n] : joint) {
    INFO("minute%4 " << pair.first << " hour%4 " << pair.second << ": " << n);
    CHECK(n > kKeys / 16 * 0.75);
    CHECK(n < kKeys / 16 * 1.25);
  }
}

TEST_CASE("H is a restriction: the day rule and daylight saving treat it as a number", "[cron][hash]") {
  const std::string key = "acme/caesium/schedule/report";
  // "0 0 H * MON": both day fields restricted, so either matches (the 20th for this key,
  // and every Monday).
  const CronExpr either = parse_ok("0 0 H * MON", key);
  CHECK(either.matches_local(local("2026-01-20T00:00:00Z")));  // a Tuesday
  CHECK(either.matches_local(local("2026-01-05T00:00:00Z")));  // a Monday
  CHECK_FALSE(either.matches_local(local("2026-01-06T00:00:00Z")));
  // H in the minute and hour is a fixed time (cron(8) looks for '*'); '*' in the hour
  // still makes "H * * * *" follow real time, like "5 * * * *".
  CHECK_FALSE(parse_ok("H H * * *", key).follows_real_time());
  CHECK_FALSE(parse_ok("H/15 H * * *", key).follows_real_time());
  CHECK(parse_ok("H * * * *", key).follows_real_time());
  // In New York on 2026-03-08 02:00-02:59 do not exist: a fixed hashed time in the gap
  // fires when the gap ends, as "30 2 * * *" does.
  const CronExpr gap = parse_ok("H(30-30) H(2-2) * * *", key);
  const auto ny = Zone::find("America/New_York").value();
  CHECK(format_rfc3339_utc(*gap.next_after(parse_rfc3339_ms("2026-03-08T05:00:00Z").value(), ny)) ==
        "2026-03-08T07:00:00Z");
}

TEST_CASE("H refusals name the field, the column and what was wrong", "[cron][hash]") {
  const std::string key = "acme/caesium/schedule/report";
  struct Case {
    const char* text;
    const char* message;  // the whole message
  };
  const Case cases[] = {
      {"0 0 HW * *", "day-of-month at column 6: 'H' cannot be combined with 'L', 'W' or '#' ('HW'); give H alone, "
                     "or a number with the suffix"},
      {"0 0 H(1-5)W * *", "day-of-month at column 11: 'H' cannot be combined with 'L', 'W' or '#' ('H(1-5)W'); "
                          "give H alone, or a number with the suffix"},
      {"0 0 * * H#2", "day-of-week at column 10: 'H' cannot be combined with 'L', 'W' or '#' ('H#2'); give H "
                      "alone, or a number with the suffix"},
      {"0 0 * * HL", "day-of-week at column 10: 'H' cannot be combined with 'L', 'W' or '#' ('HL'); give H alone, "
                     "or a number with the suffix"},
      {"0 0 * * 1,HL,5", "day-of-week at column 12: 'H' cannot be combined with 'L', 'W' or '#' ('HL'); give H "
                         "alone, or a number with the suffix"},
      {"0 0 LH * *", "day-of-month at column 6: unexpected 'H' after 'L'; expected ',' or the end of the field"},
      {"H(5-2) * * * *", "minute at column 3: range '5-2' of H goes backwards; expected H(a-b) with a <= b (no "
                         "wrap-around)"},
      {"H(0-60) * * * *", "minute at column 5: 60 is out of range; expected a number 0-59"},
      {"0 H(20-24) * * *", "hour at column 8: 24 is out of range; expected a number 0-23"},
      {"0 0 H(0-5) * *", "day-of-month at column 7: 0 is out of range; expected a number 1-31"},
      {"H/0 * * * *", "minute at column 3: step 0 is out of range; expected a step 1-60"},
      {"H(0-29)/0 * * * *", "minute at column 9: step 0 is out of range; expected a step 1-60"},
      {"H(0-29)/31 * * * *", "minute at column 9: step 31 is larger than the 30 values H spreads over here (0-29); "
                             "expected a step 1-30"},
      {"0 0 H/30 * *", "day-of-month at column 7: step 30 is larger than the 28 values H spreads over here (1-28); "
                       "expected a step 1-28"},
      {"H/ * * * *", "minute at column 3: missing step after '/'; expected a step 1-60"},
      {"H(5) * * * *", "minute at column 4: unexpected ')' in H(...); expected a range such as H(0-29)"},
      {"H() * * * *", "minute at column 3: unexpected ')'; expected a number 0-59"},
      {"H(0-29 * * * *", "minute at column 7: missing ')' after 'H(0-29'; expected ')'"},
      {"H-5 * * * *", "minute at column 2: unexpected '-' after 'H'; expected '(', '/', ',' or the end of the field"},
      {"HH * * * *", "minute at column 2: unexpected 'H' after 'H'; expected '(', '/', ',' or the end of the field"},
      {"5-H * * * *", "minute at column 3: 'H' is not a number; expected a number 0-59"},
      {"*/H * * * *", "minute at column 3: unexpected 'H' after '/'; expected a step 1-60"},
      {"0 0 H(29-31) 2 *", "day-of-month at column 5: the expression never fires: no day in FEB matches "
                           "day-of-month 'H(29-31)' and day-of-week '*' (for this entry's key, H picked 31 in "
                           "day-of-month)"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto e = CronExpr::parse(c.text, key);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().message == c.message);
    CHECK(e.error().field == std::string(c.message).substr(0, std::string(c.message).find(" at column")));
  }
}

TEST_CASE("H without an entry key is refused, and nothing else changes", "[cron][hash]") {
  for (const char* text : {"H * * * *", "0 H(9-17) * * *", "0 0 * * H", "H/15 0 * * * *", "0 0 1,H * *"}) {
    INFO(text);
    auto e = CronExpr::parse(text);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().message.find("'H' picks its value by hashing the entry's key, and this expression was parsed "
                                 "without one; expected a number, range or '*'") != std::string::npos);
    CHECK(CronExpr::parse(text, "acme/caesium/schedule/report").ok());
  }
  CHECK(CronExpr::parse("H * * * *").error().message.rfind("minute at column 1: ", 0) == 0);
  CHECK(CronExpr::parse("0 0 1,H * *").error().message.rfind("day-of-month at column 7: ", 0) == 0);
  // Macros and names with an H in them are not H.
  CHECK(CronExpr::parse("@hourly").ok());
  CHECK(CronExpr::parse("0 0 * * THU").ok());
  CHECK(CronExpr::parse("0 0 * * THU#2").ok());
}

TEST_CASE("random text around H: a clear error or an expression that fires, never a crash", "[cron][hash]") {
  const uint64_t seed = caesium::test::seed_or(3535);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  caesium::Rng rng(seed);
  const std::string alphabet = "HHHh()-/,0123456789LW#*?x";
  const std::set<std::string> fields = {"second", "minute", "hour", "day-of-month", "month", "day-of-week",
                                        "expression"};
  int parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const int n_fields = rng.chance(0.2) ? 6 : 5;
    for (int f = 0; f < n_fields; ++f) {
      if (f > 0) text += ' ';
      if (rng.chance(0.4)) {
        text += '*';
        continue;
      }
      const int len = static_cast<int>(rng.between(1, 9));
      for (int i = 0; i < len; ++i) text += alphabet[rng.below(alphabet.size())];
    }
    INFO(text);
    auto e = CronExpr::parse(text, key_of(round));
    if (!e.ok()) {
      const std::string& m = e.error().message;
      REQUIRE(fields.count(e.error().field) == 1);
      CHECK(m.rfind(e.error().field + " at column ", 0) == 0);
      continue;
    }
    ++parsed;
    // A parsed expression fires (never-fires is an error), in UTC within a few years.
    CHECK(e->next_after(parse_rfc3339_ms("2026-01-01T00:00:00Z").value(), Zone::utc()).has_value());
  }
  CHECK(parsed > 100);  // the generator does reach valid expressions with H
}
