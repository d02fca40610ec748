// Time as the core sees it: plain integer milliseconds, passed in, never read.
//
// Two clocks come into every state machine as values (docs/design.md §2):
//   - monotonic ms  (protocol timeouts: probes, suspicion, accept/complete timers)
//   - realtime ms since the Unix epoch, UTC  (calendar: when occurrences are due)
// Names carry the unit last (`probe_interval_ms`, `now_ms`, `due_utc_ms`).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/result.h"

namespace caesium {

inline constexpr int64_t kMsPerSecond = 1000;
inline constexpr int64_t kMsPerMinute = 60 * kMsPerSecond;
inline constexpr int64_t kMsPerHour = 60 * kMsPerMinute;
inline constexpr int64_t kMsPerDay = 24 * kMsPerHour;
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Both clocks, read once by a driver per input and passed down as a value.  In the
// simulator each node's realtime may be skewed and drift; monotonic never goes back.
struct Clock {
  int64_t mono_ms = 0;  // protocol timeouts
  int64_t utc_ms = 0;   // calendar: Unix epoch ms, UTC
};

// Parses a duration: a sequence of <number><unit> with units ms, s, m, h, d, w
// ("1h30m", "250ms", "10s", "7d").  A bare "0" is zero.  Fractions are allowed per
// component ("1.5s").  Negative durations, unknown units and overflow are errors.
Result<int64_t> parse_duration_ms(std::string_view text);

// Formats a duration with the largest units that divide it exactly: 90000 -> "1m30s".
std::string format_duration_ms(int64_t ms);

// RFC 3339 / ISO 8601 instants: "2026-03-29T03:00:00Z", "2026-03-29T03:00:00.250+01:00".
// Parsing accepts 'T' or ' ' as separator, an optional fraction, 'Z' or +hh:mm.
Result<int64_t> parse_rfc3339_ms(std::string_view text);
// Formats in UTC with a 'Z'; milliseconds are printed only when non-zero.
std::string format_rfc3339_utc(int64_t utc_ms);
// Formats with a fixed UTC offset in seconds ("+01:00").
std::string format_rfc3339_offset(int64_t utc_ms, int32_t offset_seconds);

}  // namespace caesium
