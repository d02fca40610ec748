// The search for a cron expression's next occurrence.
//
// Two layers:
//   calendar_next  finds the first local wall-clock time >= a bound that matches the
//                  fields, jumping by field: month (bit scan over months_), day (one
//                  table lookup gives the month's matching days, then a bit scan), hour,
//                  minute, second (bit scans).  Cost is O(months skipped), never
//                  O(minutes): a yearly job costs ~12 month steps at worst.
//   next_after     walks the zone's segments of constant UTC offset, starting with the
//                  one holding the search start.  Inside a segment local time is UTC plus
//                  a constant, so a calendar match inside the segment's local range is the
//                  answer.  Segment boundaries apply the cron(8) daylight-saving rule
//                  (see cron.h): a fixed-time job whose match falls in a gap fires when the
//                  gap ends; in the second copy of a repeated interval a fixed-time job
//                  skips the times the first copy already covered.  A calendar match is
//                  reused across segments whenever it is still the first match, so a
//                  rare expression in a DST zone costs one calendar search plus one cheap
//                  step per transition crossed.
#include <algorithm>
#include <bit>

#include <date/date.h>

#include "base/time.h"
#include "schedule/cron.h"

namespace caesium::schedule {
namespace {

constexpr int64_t kSecondsPerDay = 86400;
// One Gregorian cycle: the calendar repeats exactly every 400 years.
constexpr int64_t kCycleSeconds = int64_t{146097} * kSecondsPerDay;

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Lowest set bit at index >= from, or -1.
int next_bit(uint64_t mask, int from) {
  if (from >= 64) return -1;
  const uint64_t m = mask >> from << from;
  return m == 0 ? -1 : std::countr_zero(m);
}

int64_t days_from_civil(int y, unsigned m, unsigned d) {
  return date::sys_days{date::year{y} / date::month{m} / date::day{d}}.time_since_epoch().count();
}

}  // namespace

uint32_t CronExpr::day_mask(int year, unsigned month) const {
  const int64_t first = days_from_civil(year, month, 1);
  const unsigned w1 = date::weekday{date::sys_days{date::days{first}}}.c_encoding();
  const auto dim = static_cast<unsigned>((date::year{year} / date::month{month} / date::last).day());
  return day_masks_[dim - 28][w1];
}

int64_t CronExpr::time_of_day_at_or_after(int64_t tod_s) const {
  const int h = static_cast<int>(tod_s / 3600);
  const int mi = static_cast<int>(tod_s / 60 % 60);
  const int s = static_cast<int>(tod_s % 60);
  const int first_min = std::countr_zero(minutes_);
  const int first_sec = std::countr_zero(seconds_);
  const int hh = next_bit(hours_, h);
  if (hh < 0) return -1;
  if (hh > h) return int64_t{hh} * 3600 + first_min * 60 + first_sec;
  // Same hour: a later second this minute, else a later minute, else a later hour.
  const int mm = next_bit(minutes_, mi);
  if (mm == mi) {
    const int ss = next_bit(seconds_, s);
    if (ss >= 0) return int64_t{h} * 3600 + mi * 60 + ss;
  }
  const int mm2 = mm > mi ? mm : next_bit(minutes_, mi + 1);
  if (mm2 >= 0) return int64_t{h} * 3600 + mm2 * 60 + first_sec;
  const int hh2 = next_bit(hours_, h + 1);
  if (hh2 < 0) return -1;
  return int64_t{hh2} * 3600 + first_min * 60 + first_sec;
}

std::optional<int64_t> CronExpr::calendar_next(int64_t from_local_s, int64_t limit_local_s) const {
  int64_t days = floor_div(from_local_s, kSecondsPerDay);
  int64_t tod = from_local_s - days * kSecondsPerDay;
  const date::year_month_day ymd{date::sys_days{date::days{days}}};
  int y = static_cast<int>(ymd.year());
  auto m = static_cast<unsigned>(ymd.month());
  auto d = static_cast<unsigned>(ymd.day());
  const int limit_year =
      static_cast<int>(date::year_month_day{date::sys_days{date::days{floor_div(limit_local_s, kSecondsPerDay)}}}.year());
  for (;;) {
    if (y > limit_year) return std::nullopt;
    if (!(months_ >> m & 1u)) {
      const int nm = next_bit(months_, static_cast<int>(m) + 1);
      if (nm < 0) {
        ++y;
        m = static_cast<unsigned>(std::countr_zero(months_));
      } else {
        m = static_cast<unsigned>(nm);
      }
      d = 1;
      tod = 0;
      continue;
    }
    const int nd = next_bit(day_mask(y, m), static_cast<int>(d));
    if (nd < 0) {
      if (++m > 12) {
        m = 1;
        ++y;
      }
      d = 1;
      tod = 0;
      continue;
    }
    if (static_cast<unsigned>(nd) != d) {
      d = static_cast<unsigned>(nd);
      tod = 0;
    }
    const int64_t t = time_of_day_at_or_after(tod);
    if (t < 0) {
      ++d;  // may pass the month's end; the day mask then has no bit >= d
      tod = 0;
      continue;
    }
    const int64_t result = days_from_civil(y, m, d) * kSecondsPerDay + t;
    if (result > limit_local_s) return std::nullopt;
    return result;
  }
}

std::optional<int64_t> CronExpr::next_after(int64_t after_utc_ms, const Zone& zone,
                                            int64_t anchor_utc_ms) const {
  if (!valid_ || after_utc_ms >= kCronMaxUtcMs) return std::nullopt;
  after_utc_ms = std::max(after_utc_ms, kCronMinUtcMs - 1000);
  int64_t s = floor_div(after_utc_ms, 1000) + 1;  // first admissible whole second
  const int64_t max_s = kCronMaxUtcMs / 1000;

  if (every_s_ > 0) {
    const int64_t anchor_s = floor_div(std::clamp(anchor_utc_ms, kCronMinUtcMs, kCronMaxUtcMs), 1000);
    const int64_t k = std::max<int64_t>(1, floor_div(s - 1 - anchor_s, every_s_) + 1);
    if (k > (max_s - anchor_s) / every_s_) return std::nullopt;
    return (anchor_s + k * every_s_) * 1000;
  }

  ZoneSegment seg = zone.segment_at(s);
  const int64_t limit_local = std::min(s + seg.offset_s + kCycleSeconds, max_s + 2 * kSecondsPerDay);
  std::optional<int64_t> m;  // the first calendar match >= m_from
  int64_t m_from = 0;
  for (;;) {
    int64_t from = s + seg.offset_s;
    // Second copy of a repeated interval: fixed-time jobs already ran in the first.
    if (!wildcard_time_ && seg.has_prev() && seg.prev_offset_s > seg.offset_s) {
      from = std::max(from, seg.start_utc_s + seg.prev_offset_s);
    }
    if (!m || from < m_from || from > *m) {
      m = calendar_next(from, limit_local);
      if (!m) return std::nullopt;
    }
    m_from = from;
    int64_t result_s = 0;
    if (!seg.has_next() || *m < seg.end_utc_s + seg.offset_s) {
      result_s = *m - seg.offset_s;
    } else if (!wildcard_time_ && seg.next_offset_s > seg.offset_s &&
               *m < seg.end_utc_s + seg.next_offset_s) {
      // The match lies in the local times skipped when clocks jump forward.
      result_s = seg.end_utc_s;
    } else {
      s = seg.end_utc_s;
      seg = zone.next_segment(seg);
      continue;
    }
    if (result_s > max_s) return std::nullopt;
    return result_s * 1000;
  }
}

bool CronExpr::matches_local(int64_t local_s) const {
  if (!valid_ || every_s_ > 0) return false;
  const int64_t days = floor_div(local_s, kSecondsPerDay);
  const int64_t tod = local_s - days * kSecondsPerDay;
  const date::year_month_day ymd{date::sys_days{date::days{days}}};
  const auto m = static_cast<unsigned>(ymd.month());
  if (!(months_ >> m & 1u)) return false;
  if (!(day_mask(static_cast<int>(ymd.year()), m) >> static_cast<unsigned>(ymd.day()) & 1u)) return false;
  return (hours_ >> (tod / 3600) & 1u) && (minutes_ >> (tod / 60 % 60) & 1u) && (seconds_ >> (tod % 60) & 1u);
}

}  // namespace caesium::schedule
