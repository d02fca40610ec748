// Timing: when an entry is due — a cron expression in a zone, or a Chronos-style timer —
// and the occurrence arithmetic built on it (next occurrence, jittered fire time,
// sequence number).  Pure functions of the entry and the instants passed in, so every
// replica computes the same occurrences.
//
// Occurrence identity is (volume, entry key, scheduled UTC instant): the nominal instant
// before jitter.  Jitter only moves the fire time, never the identity.
//
// Timer semantics (Chronos, docs/entries.md):
//   at         one pop at `at_utc_ms` (an `at` before the entry's creation pops at
//              creation: it is late, not lost)
//   after      one pop at created + after_ms
//   interval   pops at created + k·interval for k = 1, 2, ... while k·interval <=
//              repeat_for (Chronos "repeat-for", default = interval, i.e. one pop), or for
//              k = 1..count.  interval 0 with repeat_for 0 (or count 1) pops once, at
//              creation ("at once").  A pop exactly at created + repeat_for happens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/result.h"
#include "schedule/cron.h"
#include "schedule/zone.h"

namespace caesium::schedule {

// Durations in entries are bounded so that instant arithmetic can never overflow.
inline constexpr int64_t kMaxEntryDurationMs = int64_t{100} * 366 * 24 * 3600 * 1000;  // ~100 years
inline constexpr int64_t kMaxJitterMs = int64_t{24} * 3600 * 1000;                     // 1 day

enum class TimerKind : uint8_t { at = 0, after = 1, interval = 2 };

struct Timer {
  TimerKind kind = TimerKind::after;
  int64_t at_utc_ms = 0;      // kind at
  int64_t after_ms = 0;       // kind after; >= 0
  int64_t interval_ms = 0;    // kind interval; >= 0
  int64_t repeat_for_ms = 0;  // kind interval, when count == 0
  uint64_t count = 0;         // kind interval; > 0 means "exactly count pops"

  friend bool operator==(const Timer&, const Timer&) = default;
};

// A cron expression with its zone, both compiled.  text/tz are what the user wrote and
// what is stored; expr/zone are derived from them.
struct CronTiming {
  std::string text;
  std::string tz = "UTC";
  CronExpr expr;
  Zone zone;

  // Compiles text and tz.  Errors carry field "cron" or "tz" and the parser's message.
  // The two-argument form has no entry key, so an expression with H is an error; an
  // entry's timing is made with its key (entry_key(entity, name)), which H hashes.
  static Result<CronTiming> make(std::string_view text, std::string_view tz);
  static Result<CronTiming> make(std::string_view text, std::string_view tz, std::string_view entry_key);

  friend bool operator==(const CronTiming& a, const CronTiming& b) {
    return a.text == b.text && a.tz == b.tz;
  }
};

using Timing = std::variant<CronTiming, Timer>;

// Checks a timer's fields (and jitter, which must be shorter than a recurring timer's
// interval so pops stay in order).  Error::field is "timer.<name>".
Status validate_timer(const Timer& timer, int64_t jitter_ms);

// The first scheduled instant of `timer` strictly after `after_utc_ms`, for an entry
// created at `created_utc_ms`; nullopt when the timer has no more pops.
// REQUIRES: validate_timer(timer, ...) succeeded.
std::optional<int64_t> timer_next_after(const Timer& timer, int64_t created_utc_ms, int64_t after_utc_ms);

// The 1-based pop number of `scheduled_utc_ms` (Chronos X-Sequence-Number): k for the
// pop at created + k·interval, 1 for one-shot timers.  0 when scheduled_utc_ms is not
// one of the timer's pops.
uint64_t timer_sequence(const Timer& timer, int64_t created_utc_ms, int64_t scheduled_utc_ms);

// Deterministic jitter: an offset in [0, jitter_ms] from xxh3 of (entry key, scheduled
// instant), so every replica picks the same fire time for the same occurrence.
int64_t jitter_offset_ms(std::string_view entry_key, int64_t scheduled_utc_ms, int64_t jitter_ms);

struct Entry;

// Entry-level occurrence functions.  All occurrences of an entry are at or after its
// created_utc_ms.
//
// next_occurrence: the first scheduled (nominal, unjittered) instant strictly after
// `after_utc_ms`, or nullopt when there is none (a paused entry, a finished timer, a cron
// expression with no occurrence within 400 years, or none within not_before..not_after
// inclusive).  Cron instants are whole seconds.
//
// Manual occurrences (Entry::triggers, "run now") are occurrences too: next_occurrence
// yields the timing's occurrences and the triggers' instants in one increasing sequence
// (a trigger is never at a scheduled instant), so every rule that applies to an
// occurrence — claims, overlap, misfire, pause, edits, history — applies to them.
// next_scheduled_occurrence is the timing's alone.
std::optional<int64_t> next_occurrence(const Entry& entry, int64_t after_utc_ms);
std::optional<int64_t> next_scheduled_occurrence(const Entry& entry, int64_t after_utc_ms);
// The instant the occurrence scheduled at `scheduled_utc_ms` should fire: scheduled plus
// the deterministic jitter offset (none for a trigger).
int64_t fire_time(const Entry& entry, int64_t scheduled_utc_ms);
// Timers: timer_sequence().  Cron entries: 0 (a cron occurrence is named by its
// scheduled instant; there is no meaningful count from creation).
uint64_t occurrence_sequence(const Entry& entry, int64_t scheduled_utc_ms);

}  // namespace caesium::schedule
