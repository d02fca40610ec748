#include "schedule/zone_posix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include <date/date.h>

namespace caesium::schedule {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // Reads up to `max_digits` digits; false when there is none.
  bool number(int& out, int max_digits = 3) {
    int v = 0, n = 0;
    while (n < max_digits && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (text_[pos_++] - '0');
      ++n;
    }
    out = v;
    return n > 0;
  }
  // A zone abbreviation: <...> or at least three letters.  Its text is not needed.
  bool name() {
    if (eat('<')) {
      while (!done() && peek() != '>') ++pos_;
      return eat('>');
    }
    const size_t start = pos_;
    while (std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
    return pos_ - start >= 3;
  }
  // [+-]hh[:mm[:ss]] -> seconds; `max_hours` bounds hh.
  bool hms(int32_t& out, int max_hours) {
    int sign = 1;
    if (eat('-')) sign = -1; else eat('+');
    int h = 0, m = 0, s = 0;
    if (!number(h) || h > max_hours) return false;
    if (eat(':')) {
      if (!number(m, 2) || m > 59) return false;
      if (eat(':') && (!number(s, 2) || s > 59)) return false;
    }
    out = sign * (h * 3600 + m * 60 + s);
    return true;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

bool rule_date(Reader& r, PosixRuleDate& out) {
  if (r.eat('J')) {
    out.kind = PosixRuleDate::Kind::julian_no_leap;
    if (!r.number(out.day) || out.day < 1 || out.day > 365) return false;
  } else if (r.eat('M')) {
    out.kind = PosixRuleDate::Kind::month_week_day;
    if (!r.number(out.month, 2) || out.month < 1 || out.month > 12) return false;
    if (!r.eat('.') || !r.number(out.week, 1) || out.week < 1 || out.week > 5) return false;
    if (!r.eat('.') || !r.number(out.weekday, 1) || out.weekday > 6) return false;
  } else {
    out.kind = PosixRuleDate::Kind::zero_based;
    if (!r.number(out.day) || out.day > 365) return false;
  }
  out.time_s = 2 * 3600;
  // RFC 8536 extends the POSIX time to -167..167 hours.
  if (r.eat('/') && !r.hms(out.time_s, 167)) return false;
  return true;
}

int64_t days_of(int y, unsigned m, unsigned d) {
  return date::sys_days{date::year{y} / date::month{m} / date::day{d}}.time_since_epoch().count();
}

// Days since the epoch of the rule's day in `year`.
int64_t rule_day(const PosixRuleDate& rd, int year) {
  const bool leap = date::year{year}.is_leap();
  switch (rd.kind) {
    case PosixRuleDate::Kind::julian_no_leap:
      return days_of(year, 1, 1) + rd.day - 1 + ((leap && rd.day >= 60) ? 1 : 0);
    case PosixRuleDate::Kind::zero_based:
      return days_of(year, 1, 1) + rd.day;
    case PosixRuleDate::Kind::month_week_day: {
      const auto m = static_cast<unsigned>(rd.month);
      const int64_t first = days_of(year, m, 1);
      const unsigned w1 = date::weekday{date::sys_days{date::days{first}}}.c_encoding();
      int64_t day = (static_cast<int64_t>(rd.weekday) - w1 + 7) % 7 + 7 * (rd.week - 1);
      const auto dim = static_cast<int64_t>(
          static_cast<unsigned>((date::year{year} / date::month{m} / date::last).day()));
      while (day >= dim) day -= 7;  // week 5 means "the last one"
      return first + day;
    }
  }
  return 0;
}

}  // namespace

Result<PosixTzRule> parse_posix_tz(std::string_view text) {
  Reader r(text);
  PosixTzRule rule;
  int32_t posix_std = 0;
  if (!r.name() || !r.hms(posix_std, 24)) return Error("malformed standard time in TZ rule");
  rule.std_offset_s = -posix_std;
  if (r.done()) return rule;
  if (!r.name()) return Error("malformed daylight time name in TZ rule");
  rule.has_dst = true;
  rule.dst_offset_s = rule.std_offset_s + 3600;
  if (r.peek() != ',') {
    int32_t posix_dst = 0;
    if (!r.hms(posix_dst, 24)) return Error("malformed daylight offset in TZ rule");
    rule.dst_offset_s = -posix_dst;
  }
  if (!r.eat(',') || !rule_date(r, rule.start) || !r.eat(',') || !rule_date(r, rule.end)) {
    return Error("malformed transition dates in TZ rule");
  }
  if (!r.done()) return Error("trailing characters in TZ rule");
  return rule;
}

void append_posix_transitions(const PosixTzRule& rule, int from_year, int to_year,
                              int32_t current_offset_s, std::vector<ZoneTransition>& out) {
  if (!rule.has_dst) return;
  int32_t offset = out.empty() ? current_offset_s : out.back().offset_after_s;
  for (int y = from_year; y <= to_year; ++y) {
    // The start time is given in standard time and the end time in daylight time.
    std::array<ZoneTransition, 2> year_changes = {{
        {rule_day(rule.start, y) * 86400 + rule.start.time_s - rule.std_offset_s, 0,
         rule.dst_offset_s},
        {rule_day(rule.end, y) * 86400 + rule.end.time_s - rule.dst_offset_s, 0,
         rule.std_offset_s},
    }};
    std::sort(year_changes.begin(), year_changes.end(),
              [](const ZoneTransition& a, const ZoneTransition& b) { return a.utc_s < b.utc_s; });
    for (auto& t : year_changes) {
      if (!out.empty() && t.utc_s <= out.back().utc_s) continue;
      if (t.offset_after_s == offset) continue;
      t.offset_before_s = offset;
      offset = t.offset_after_s;
      out.push_back(t);
    }
  }
}

}  // namespace caesium::schedule
