// An independent, brute-force model of cron expressions for the cron tests.
//
// The generator builds a random expression as plain sets (what each field selects) and
// renders it to text with random syntax (lists, ranges, steps, names in any case,
// Sunday as 7, ?, L, L-n, W, LW, #, dL).  The oracle then answers "does this local time
// match?" straight from the sets with naive calendar code (Sakamoto's weekday formula,
// a days-in-month table) and finds the next match by scanning every day and every
// minute (or second) of each matching day.  It shares no code with schedule/cron*.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"

namespace cron_oracle {

struct Civil {
  int64_t y;
  int m, d, hh, mm, ss;
};

inline bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

inline int days_in_month(int64_t y, int m) {
  static const int kDays[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m];
}

// 0 = Sunday (Sakamoto).
inline int weekday(int64_t y, int m, int d) {
  static const int t[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
  if (m < 3) y -= 1;
  const int64_t v = y + y / 4 - y / 100 + y / 400 + t[m - 1] + d;
  return static_cast<int>(((v % 7) + 7) % 7);
}

// Days since 1970-01-01 by counting (only used to convert query instants, so the slow
// year loop is acceptable for 1900..2300).
inline int64_t days_from_civil(int64_t y, int m, int d) {
  int64_t days = 0;
  for (int64_t yy = 1970; yy < y; ++yy) days += leap(yy) ? 366 : 365;
  for (int64_t yy = y; yy < 1970; ++yy) days -= leap(yy) ? 366 : 365;
  for (int mm = 1; mm < m; ++mm) days += days_in_month(y, mm);
  return days + d - 1;
}

inline Civil civil_from_local(int64_t s) {
  int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
  int64_t tod = s - days * 86400;
  int64_t y = 1970;
  while (days < 0) { --y; days += leap(y) ? 366 : 365; }
  while (days >= (leap(y) ? 366 : 365)) { days -= leap(y) ? 366 : 365; ++y; }
  int m = 1;
  while (days >= days_in_month(y, m)) { days -= days_in_month(y, m); ++m; }
  return {y, m, static_cast<int>(days) + 1, static_cast<int>(tod / 3600), static_cast<int>(tod / 60 % 60),
          static_cast<int>(tod % 60)};
}

struct Expr {
  std::string text;
  bool with_seconds = false;
  bool wildcard = false;  // second/minute/hour text starts with '*'
  std::set<int> sec{0}, min, hour, month;
  std::set<int> dom;       // plain days
  bool dom_star = false;   // '*'-prefixed or '?'
  std::set<int> last_minus;  // L-n (0 = L)
  std::set<int> nearest;     // nW
  bool last_weekday = false;
  std::set<int> dow;       // 0..6
  bool dow_star = false;
  std::set<std::pair<int, int>> nth;  // (weekday, n)
  std::set<int> last_of;   // weekday
};

inline bool day_matches(const Expr& e, int64_t y, int m, int d) {
  const int dim = days_in_month(y, m);
  const int wd = weekday(y, m, d);
  bool dom_hit = e.dom.count(d) > 0;
  for (int n : e.last_minus) dom_hit = dom_hit || d == dim - n;
  for (int n : e.nearest) {
    if (n > dim) continue;
    int target = n;
    const int w = weekday(y, m, n);
    if (w == 6) target = n == 1 ? 3 : n - 1;
    if (w == 0) target = n == dim ? n - 2 : n + 1;
    dom_hit = dom_hit || d == target;
  }
  if (e.last_weekday) {
    int last = dim;
    while (weekday(y, m, last) == 0 || weekday(y, m, last) == 6) --last;
    dom_hit = dom_hit || d == last;
  }
  bool dow_hit = e.dow.count(wd) > 0;
  for (const auto& [w, n] : e.nth) dow_hit = dow_hit || (wd == w && (d - 1) / 7 + 1 == n);
  for (int w : e.last_of) dow_hit = dow_hit || (wd == w && d + 7 > dim);
  if (!e.month.count(m)) return false;
  return (!e.dom_star && !e.dow_star) ? (dom_hit || dow_hit) : (dom_hit && dow_hit);
}

inline bool matches(const Expr& e, int64_t local_s) {
  const Civil c = civil_from_local(local_s);
  return day_matches(e, c.y, c.m, c.d) && e.hour.count(c.hh) && e.min.count(c.mm) && e.sec.count(c.ss);
}

// First local second >= from_local_s that matches, scanning day by day and then every
// second of a matching day (minute by minute when there is no seconds field); nullopt if
// none within horizon_days.
inline std::optional<int64_t> next_local(const Expr& e, int64_t from_local_s, int64_t horizon_days) {
  Civil c = civil_from_local(from_local_s);
  int64_t day_start = from_local_s - (c.hh * 3600 + c.mm * 60 + c.ss);
  int64_t first_tod = from_local_s - day_start;
  for (int64_t i = 0; i <= horizon_days; ++i) {
    if (day_matches(e, c.y, c.m, c.d)) {
      const int step = e.with_seconds ? 1 : 60;
      for (int64_t tod = (e.with_seconds ? first_tod : (first_tod + 59) / 60 * 60); tod < 86400; tod += step) {
        const int hh = static_cast<int>(tod / 3600), mm = static_cast<int>(tod / 60 % 60), ss = static_cast<int>(tod % 60);
        if (e.hour.count(hh) && e.min.count(mm) && e.sec.count(ss)) return day_start + tod;
      }
    }
    day_start += 86400;
    first_tod = 0;
    if (++c.d > days_in_month(c.y, c.m)) {
      c.d = 1;
      if (++c.m > 12) { c.m = 1; ++c.y; }
    }
  }
  return std::nullopt;
}

// Does any day in a full 400-year cycle match?  (Exact "ever fires" for the day fields.)
inline bool any_day_in_cycle(const Expr& e) {
  for (int64_t y = 2000; y < 2400; ++y) {
    for (int m = 1; m <= 12; ++m) {
      if (!e.month.count(m)) continue;
      for (int d = 1; d <= days_in_month(y, m); ++d) {
        if (day_matches(e, y, m, d)) return true;
      }
    }
  }
  return false;
}

// ---- generator ----

inline const char* const kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
inline const char* const kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

inline std::string random_case(caesium::Rng& rng, std::string s) {
  for (auto& ch : s) {
    if (rng.chance(0.5)) ch = static_cast<char>(ch - 'a' + 'A');
  }
  return s;
}

struct FieldShape {
  int lo, hi;        // values of '*'
  int max_value;     // largest literal (7 for day-of-week)
  bool months, days;
};

// Renders one value: a number, or a name for months / weekdays.
inline std::string render_value(caesium::Rng& rng, const FieldShape& f, int v) {
  if (f.months && rng.chance(0.4)) return random_case(rng, kMonthNames[v - 1]);
  if (f.days && v <= 6 && rng.chance(0.4)) return random_case(rng, kDayNames[v]);
  return std::to_string(v);
}

inline void add(std::set<int>& out, const FieldShape& f, int lo, int hi, int step) {
  for (int v = lo; v <= hi; v += step) out.insert(f.days && v == 7 ? 0 : v);
}

// One ordinary list item; returns its text and adds its values to `out`.
inline std::string random_item(caesium::Rng& rng, const FieldShape& f, std::set<int>& out) {
  const int kind = static_cast<int>(rng.below(4));
  const int a = static_cast<int>(rng.between(f.lo, f.max_value));
  if (kind == 0) {
    add(out, f, a, a, 1);
    return render_value(rng, f, a);
  }
  const int b = static_cast<int>(rng.between(a, f.max_value));
  if (kind == 1) {
    add(out, f, a, b, 1);
    return render_value(rng, f, a) + "-" + render_value(rng, f, b);
  }
  const int step = static_cast<int>(rng.between(1, f.hi - f.lo + 1));
  if (kind == 2) {
    add(out, f, a, b, step);
    return render_value(rng, f, a) + "-" + render_value(rng, f, b) + "/" + std::to_string(step);
  }
  // a/n = a-max/n (for day-of-week the max is 6; 7/n is just Sunday)
  add(out, f, a, a <= f.hi ? f.hi : a, step);
  return render_value(rng, f, a) + "/" + std::to_string(step);
}

// A whole field: '*', '*/n', or a list of 1..3 items (plus specials for the day fields,
// appended by the caller).  Returns the text; sets `star`.
inline std::string random_field(caesium::Rng& rng, const FieldShape& f, std::set<int>& out, bool& star,
                                double p_star) {
  star = false;
  if (rng.chance(p_star)) {
    star = true;
    if (rng.chance(0.5)) {
      add(out, f, f.lo, f.hi, 1);
      return "*";
    }
    const int step = static_cast<int>(rng.between(1, f.hi - f.lo + 1));
    add(out, f, f.lo, f.hi, step);
    return "*/" + std::to_string(step);
  }
  std::string text;
  const int items = static_cast<int>(rng.between(1, 3));
  for (int i = 0; i < items; ++i) {
    if (i > 0) text += ",";
    text += random_item(rng, f, out);
  }
  return text;
}

inline Expr random_expr(caesium::Rng& rng, bool allow_seconds = true) {
  Expr e;
  const FieldShape sec{0, 59, 59, false, false}, min{0, 59, 59, false, false}, hour{0, 23, 23, false, false},
      dom{1, 31, 31, false, false}, month{1, 12, 12, true, false}, dow{0, 6, 7, false, true};
  bool s_star = false, m_star = false, h_star = false, mo_star = false;
  std::string text;
  e.with_seconds = allow_seconds && rng.chance(0.25);
  if (e.with_seconds) {
    e.sec.clear();
    text += random_field(rng, sec, e.sec, s_star, 0.4) + " ";
  }
  text += random_field(rng, min, e.min, m_star, 0.3) + " ";
  text += random_field(rng, hour, e.hour, h_star, 0.4) + " ";
  e.wildcard = s_star || m_star || h_star;
  // day-of-month: '?', or a field with optional L / L-n / nW / LW items appended
  std::string dom_text;
  if (rng.chance(0.1)) {
    dom_text = "?";
    e.dom_star = true;
    add(e.dom, dom, 1, 31, 1);
  } else {
    dom_text = random_field(rng, dom, e.dom, e.dom_star, 0.45);
    if (!e.dom_star && rng.chance(0.35)) {
      const int kind = static_cast<int>(rng.below(4));
      if (kind == 0) { dom_text += ",L"; e.last_minus.insert(0); }
      if (kind == 1) { const int n = static_cast<int>(rng.between(0, 30)); dom_text += ",L-" + std::to_string(n); e.last_minus.insert(n); }
      if (kind == 2) { const int n = static_cast<int>(rng.between(1, 31)); dom_text += "," + std::to_string(n) + "W"; e.nearest.insert(n); }
      if (kind == 3) { dom_text += ",LW"; e.last_weekday = true; }
      if (rng.chance(0.5)) dom_text = dom_text.substr(dom_text.rfind(',') + 1), e.dom.clear();  // special alone
    }
  }
  text += dom_text + " ";
  text += random_field(rng, month, e.month, mo_star, 0.5) + " ";
  std::string dow_text;
  if (rng.chance(0.1)) {
    dow_text = "?";
    e.dow_star = true;
    add(e.dow, dow, 0, 6, 1);
  } else {
    dow_text = random_field(rng, dow, e.dow, e.dow_star, 0.5);
    if (!e.dow_star && rng.chance(0.35)) {
      const int w = static_cast<int>(rng.between(0, 7));
      const std::string wt = render_value(rng, dow, w);
      if (rng.chance(0.5)) {
        const int n = static_cast<int>(rng.between(1, 5));
        dow_text += "," + wt + "#" + std::to_string(n);
        e.nth.insert({w % 7, n});
      } else {
        dow_text += "," + wt + "L";
        e.last_of.insert(w % 7);
      }
      if (rng.chance(0.5)) dow_text = dow_text.substr(dow_text.rfind(',') + 1), e.dow.clear();
    }
  }
  text += dow_text;
  e.text = text;
  return e;
}

}  // namespace cron_oracle
