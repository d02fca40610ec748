// POSIX TZ rules ("EST5EDT,M3.2.0,M11.1.0", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"), as
// found in the footer of a TZif file (RFC 8536 §3.3).  They describe the daylight-saving
// transitions after the file's last explicit one; zone.cpp uses them to extend a zone's
// transition table past 2037.  Internal to schedule/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "schedule/zone.h"

namespace caesium::schedule {

// A day of the year as a POSIX rule names it.
struct PosixRuleDate {
  enum class Kind : uint8_t {
    julian_no_leap,  // "Jn": 1..365, February 29 is never counted
    zero_based,      // "n": 0..365, February 29 counted in leap years
    month_week_day,  // "Mm.w.d": weekday d (0 = Sunday) of week w (5 = last) of month m
  };
  Kind kind = Kind::month_week_day;
  int day = 0;  // n for the first two kinds
  int month = 0, week = 0, weekday = 0;
  int32_t time_s = 2 * 3600;  // local time of the change; may be negative or > 24h
};

struct PosixTzRule {
  int32_t std_offset_s = 0;  // seconds east of UTC (the POSIX sign is inverted on parse)
  bool has_dst = false;
  int32_t dst_offset_s = 0;
  PosixRuleDate start;  // standard -> daylight, in local standard time
  PosixRuleDate end;    // daylight -> standard, in local daylight time
};

// Parses a POSIX TZ string.  Errors name what was malformed; the caller treats an error
// as "no rule" and keeps the last explicit offset.
Result<PosixTzRule> parse_posix_tz(std::string_view text);

// Appends to `out` the transitions the rule produces in years [from_year, to_year] that
// come strictly after out.back() (or after `current_offset_s` when out is empty) and
// change the offset.  Keeps `out` strictly increasing.
void append_posix_transitions(const PosixTzRule& rule, int from_year, int to_year,
                              int32_t current_offset_s, std::vector<ZoneTransition>& out);

}  // namespace caesium::schedule
