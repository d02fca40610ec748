// CronExpr: a parsed cron expression and the search for its next occurrence.
//
// Syntax (docs/cron.md has the full reference with examples):
//   5 fields   minute hour day-of-month month day-of-week
//   6 fields   second minute hour day-of-month month day-of-week
//   items      *  n  a-b  */n  a-b/n  a/n (= a-max/n)  lists "1,5,10-20/2"
//   names      JAN..DEC, SUN..SAT in any case; day-of-week 0 and 7 are both Sunday
//   ?          in day-of-month or day-of-week: "no restriction" (same as *)
//   dom        L (last day), L-n (n days before the last), nW (weekday nearest day n,
//              within the month), LW (last weekday)
//   dow        d#n (n-th weekday d of the month, n = 1..5), dL (last weekday d)
//   hash       H  H(a-b)  H/n  H(a-b)/n  (Jenkins): H is one value of the field (or of
//              a..b) chosen by a hash of the entry key; H/n is every n-th value from an
//              offset 0..n-1 chosen the same way.  Rangeless H spans 1-28 in day-of-month
//              (every month has those days) and 0-6 in day-of-week.  Needs the key: see
//              parse(text, hash_key).
//   macros     @yearly @annually @monthly @weekly @daily @midnight @hourly
//              @every <duration>   (whole seconds, >= 1s; see next_after's anchor)
//
// Hash spreading: every H item draws its own number, splitmix64 of
// (xxh3-64 of the key bytes with a fixed seed) + a stream for (field, item).  Both are
// fixed algorithms on bytes and integers, so every node and platform picks the same
// values for the same key, and different keys spread over the range.  An H field is a
// restriction like a number (it does not start with '*'), both for the day rule and for
// daylight saving.
//
// Day rule (Debian/Vixie cron): when both day-of-month and day-of-week are restricted, a
// day matches if EITHER matches; a field whose text starts with '*' (or is '?') counts as
// unrestricted, so "0 0 */2 * MON" is odd days that are Mondays, while "0 0 1,15 * MON"
// is the 1st, the 15th and every Monday.
//
// Time zones and daylight saving (Debian cron(8)): fields are matched against local wall
// time in the entry's zone.
//   - A fixed-time expression (no '*' at the start of its second, minute or hour field)
//     whose local time falls in a skipped interval fires at the instant the gap ends; one
//     whose local time falls in a repeated interval fires once, in the first copy.
//     Which day matches is decided on the local calendar first, so this holds the same
//     for every day form: a plain day, L, L-n, nW, LW, d#n and dL.
//   - An expression with '*' in its second, minute or hour field ("wildcard", e.g.
//     @hourly, "*/15 * * * *") follows real time: local times in a gap do not exist and
//     do not fire; times in a repeated interval fire in both copies.
//   - @every ignores zones: it is a fixed interval of real time.
//
// Invariants of a parsed CronExpr: months_ != 0, hours_ != 0, minutes_ != 0,
// seconds_ != 0, and some (month, days-in-month, weekday-of-the-1st) combination that
// occurs in the Gregorian calendar has a non-empty day mask — so a calendar match exists
// in every 400-year window.  (A default-constructed CronExpr is empty and never fires.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "schedule/zone.h"

namespace caesium::schedule {

// Instants outside [year 1, year 9999] are not searched (next_after returns nullopt).
inline constexpr int64_t kCronMinUtcMs = -62135596800000;  // 0001-01-01T00:00:00Z
inline constexpr int64_t kCronMaxUtcMs = 253402300799000;  // 9999-12-31T23:59:59Z

// The seed H items draw from: xxh3-64 of the key bytes with a fixed seed.  Stable across
// processes, releases and platforms (XXH3's output is specified; the seed is a number,
// not memory), unlike std::hash.
uint64_t cron_hash_key_digest(std::string_view hash_key);

class CronExpr {
 public:
  // An empty expression: never fires.  Use parse() to get a real one.
  CronExpr() = default;

  // Parses `text`.  On error the Error's message reads
  //   "<field> at column <c>: <what was found>; <what was expected>"
  // (column is 1-based in `text`) and Error::field holds the field name ("minute",
  // "day-of-week", ...).  Expressions that can never fire ("0 0 30 2 *") are errors.
  // This form has no entry key, so an H item is an error naming the missing key.
  static Result<CronExpr> parse(std::string_view text);
  // The same for the entry whose key is `hash_key` (schedule::entry_key(entity, name)):
  // H items take their values from a hash of these bytes.  Whether an H expression
  // fires at all can depend on the key ("H(29-31) in FEB"); the error then says what H
  // picked.
  static Result<CronExpr> parse(std::string_view text, std::string_view hash_key);

  // The first instant strictly after `after_utc_ms` at which the expression fires in
  // `zone`, in UTC ms (always a whole second), or nullopt when there is none within 400
  // years (or outside the supported range).  For @every expressions occurrences are
  // anchor + k·d for k >= 1, with the anchor rounded down to a whole second; the
  // two-argument form anchors at the Unix epoch.  Cost: a few bit scans per field and
  // one binary search in the zone's transitions; never a minute-by-minute scan.
  std::optional<int64_t> next_after(int64_t after_utc_ms, const Zone& zone) const {
    return next_after(after_utc_ms, zone, 0);
  }
  std::optional<int64_t> next_after(int64_t after_utc_ms, const Zone& zone,
                                    int64_t anchor_utc_ms) const;

  // True when local wall time `local_s` (seconds since 1970-01-01T00:00 local) matches
  // the calendar fields, ignoring zones.  Slow path for checks; false for @every.
  bool matches_local(int64_t local_s) const;

  // The text given to parse(), unchanged.
  const std::string& text() const { return text_; }
  bool empty() const { return !valid_; }
  bool has_seconds_field() const { return has_seconds_; }
  // Wildcard in the sense of cron(8): follows real time across daylight-saving changes.
  bool follows_real_time() const { return wildcard_time_; }
  // @every: the interval in ms, else 0.
  int64_t every_ms() const { return every_s_ * 1000; }
  // Whether an H item was resolved, and cron_hash_key_digest() of the key it was
  // resolved with (0 when there is no H), so the holder of an expression can check that
  // it was compiled for its own key.
  bool uses_hash() const { return uses_hash_; }
  uint64_t hash_key_digest() const { return hash_key_digest_; }

  // The same text compiled the same way: with H, for the same key.
  friend bool operator==(const CronExpr& a, const CronExpr& b) {
    return a.text_ == b.text_ && a.uses_hash_ == b.uses_hash_ && a.hash_key_digest_ == b.hash_key_digest_;
  }

 private:
  friend class CronParser;

  // First local time >= from_local_s matching the calendar fields, or nullopt when it
  // would be after limit_local_s.
  std::optional<int64_t> calendar_next(int64_t from_local_s, int64_t limit_local_s) const;
  // First second-of-day >= tod_s whose hour, minute and second match, or -1.
  int64_t time_of_day_at_or_after(int64_t tod_s) const;
  uint32_t day_mask(int year, unsigned month) const;

  std::string text_;
  bool valid_ = false;
  bool uses_hash_ = false;
  uint64_t hash_key_digest_ = 0;
  bool has_seconds_ = false;
  bool wildcard_time_ = false;
  int64_t every_s_ = 0;
  uint64_t seconds_ = 0;  // bit s: second s matches
  uint64_t minutes_ = 0;  // bit m
  uint32_t hours_ = 0;    // bit h
  uint16_t months_ = 0;   // bit m, 1..12
  // Matching days (bit d, 1..31) of a month with (28 + i) days whose 1st is weekday j
  // (0 = Sunday).  Folds day-of-month, day-of-week, L, W, # and the either/both rule into
  // one word per calendar shape, so the search never evaluates field logic per day.
  std::array<std::array<uint32_t, 7>, 4> day_masks_{};
};

}  // namespace caesium::schedule
