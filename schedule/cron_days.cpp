// Folding of the day fields into day masks (cron_days.h).
#include "schedule/cron_days.h"

#include <utility>

namespace caesium::schedule::cron_days {
namespace {

uint32_t days_mask(int dim) { return ((uint32_t{1} << dim) - 1) << 1; }

// The day mask of a month with `dim` days whose 1st is weekday `w1` (0 = Sunday).
uint32_t fold_days(const FieldSet& dom, const FieldSet& dow, int dim, int w1) {
  auto weekday = [&](int d) { return (w1 + d - 1) % 7; };
  uint32_t dom_part = static_cast<uint32_t>(dom.bits) & days_mask(dim);
  for (int n = 0; n <= 30; ++n) {
    if ((dom.last_minus >> n & 1u) && dim - n >= 1) dom_part |= 1u << (dim - n);
  }
  for (int d = 1; d <= 31; ++d) {
    if (!(dom.nearest >> d & 1u) || d > dim) continue;
    int target = d;
    // Nearest weekday, never leaving the month (like Quartz): a Saturday 1st moves to
    // Monday the 3rd, a Sunday last day moves back to Friday.
    if (weekday(d) == 6) target = d > 1 ? d - 1 : d + 2;
    if (weekday(d) == 0) target = d < dim ? d + 1 : d - 2;
    dom_part |= 1u << target;
  }
  if (dom.last_weekday) {
    const int wl = weekday(dim);
    dom_part |= 1u << (wl == 6 ? dim - 1 : wl == 0 ? dim - 2 : dim);
  }
  uint32_t dow_part = 0;
  for (int d = 1; d <= dim; ++d) {
    if (dow.bits >> weekday(d) & 1u) dow_part |= 1u << d;
  }
  for (int n = 1; n <= 5; ++n) {
    for (int w = 0; w < 7; ++w) {
      if (!(dow.nth[static_cast<size_t>(n)] >> w & 1u)) continue;
      const int d = 1 + (w - w1 + 7) % 7 + 7 * (n - 1);
      if (d <= dim) dow_part |= 1u << d;
    }
  }
  for (int w = 0; w < 7; ++w) {
    if (dow.last_of >> w & 1u) dow_part |= 1u << (dim - (weekday(dim) - w + 7) % 7);
  }
  // Vixie/Debian: both restricted -> either matches; otherwise both must match.
  return (!dom.star && !dow.star) ? (dom_part | dow_part) : (dom_part & dow_part);
}

}  // namespace

bool fold_day_fields(const FieldSet& dom, const FieldSet& dow, uint16_t months, DayMasks& out) {
  for (int dim = 28; dim <= 31; ++dim) {
    for (int w1 = 0; w1 < 7; ++w1) {
      out[static_cast<size_t>(dim - 28)][static_cast<size_t>(w1)] = fold_days(dom, dow, dim, w1);
    }
  }
  // Every (month, length, weekday of the 1st) shape occurs in each 400-year cycle, so the
  // expression fires iff one selected shape has a matching day.
  static constexpr int kMonthDays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  for (int m = 1; m <= 12; ++m) {
    if (!(months >> m & 1u)) continue;
    const int longest = m == 2 ? 29 : kMonthDays[m];
    for (int dim = kMonthDays[m]; dim <= longest; ++dim) {
      for (const uint32_t mask : out[static_cast<size_t>(dim - 28)]) {
        if (mask != 0) return true;
      }
    }
  }
  return false;
}

std::string hash_picks(const FieldSet& dom, const FieldSet& dow) {
  std::string out;
  for (const auto& [set, name] : {std::pair{&dom, "day-of-month"}, std::pair{&dow, "day-of-week"}}) {
    if (!set->hashed) continue;
    std::string values;
    for (int v = 0; v < 32; ++v) {
      if (set->hashed_bits >> v & 1u) values += (values.empty() ? "" : ",") + std::to_string(v);
    }
    out += (out.empty() ? " (for this entry's key, H picked " : " and ") + values + " in " + name;
  }
  return out.empty() ? out : out + ")";
}

}  // namespace caesium::schedule::cron_days
