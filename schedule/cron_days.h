// Internals of the cron parser (cron_parse.cpp) kept in a file of their own: one parsed
// field, and the folding of the two day fields into CronExpr's day masks.  Not an API:
// use cron.h.
//
// Folding at parse time is what lets the search skip whole months with one table lookup,
// and it makes "can this ever fire?" an exact question: every (month, length, weekday of
// the 1st) shape occurs in every 400-year Gregorian cycle.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace caesium::schedule::cron_days {

// One parsed field.
struct FieldSet {
  uint64_t bits = 0;
  bool star = false;  // text starts with '*' or is '?': unrestricted for the day rule
  // day-of-month specials
  uint32_t last_minus = 0;  // bit n: "L-n" (n = 0 is plain "L")
  uint32_t nearest = 0;     // bit d: "dW"
  bool last_weekday = false;  // "LW"
  // day-of-week specials
  std::array<uint8_t, 6> nth{};  // nth[n] bit w: "w#n"
  uint8_t last_of = 0;           // bit w: "wL"
  // H items: whether there was one, and the bits they chose (also in `bits`).
  bool hashed = false;
  uint64_t hashed_bits = 0;
};

// Day masks indexed [days in month - 28][weekday of the 1st] (CronExpr::day_masks_).
using DayMasks = std::array<std::array<uint32_t, 7>, 4>;

// Fills `out` from the day fields, by the Debian/Vixie rule (both restricted: either
// matches; otherwise both).  Returns whether some month in `months` (bit m, 1..12) has
// a matching day in some year: false means the expression never fires.
bool fold_day_fields(const FieldSet& dom, const FieldSet& dow, uint16_t months, DayMasks& out);

// " (for this entry's key, H picked 30 in day-of-month)", or "" without H in the day
// fields: with H, whether an expression fires can depend on the key, so the never-fires
// message says what this key gave.
std::string hash_picks(const FieldSet& dom, const FieldSet& dow);

}  // namespace caesium::schedule::cron_days
