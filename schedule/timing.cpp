#include "schedule/timing.h"

#include <algorithm>

#include "base/hash.h"
#include "schedule/entry.h"

namespace caesium::schedule {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Error timer_error(const char* field, const std::string& why) {
  return Error(std::string("timer.") + field + ": " + why, std::string("timer.") + field);
}

Status duration_in_range(const char* field, int64_t ms) {
  if (ms < 0) return timer_error(field, "must not be negative");
  if (ms > kMaxEntryDurationMs) return timer_error(field, "must be at most 100 years");
  return Status::success();
}

// The number of pops of an interval timer (>= 1 for a valid timer).
uint64_t pop_count(const Timer& t) {
  if (t.interval_ms == 0) return 1;
  if (t.count > 0) return t.count;
  return static_cast<uint64_t>(t.repeat_for_ms / t.interval_ms);
}

}  // namespace

namespace {

Result<CronTiming> compile_cron(std::string_view text, std::string_view tz, Result<CronExpr> expr) {
  if (!expr.ok()) return Error("cron: " + expr.error().message, "cron");
  auto zone = Zone::find(tz);
  if (!zone.ok()) return Error("tz: " + zone.error().message, "tz");
  return CronTiming{std::string(text), std::string(tz), std::move(*expr), *zone};
}

}  // namespace

Result<CronTiming> CronTiming::make(std::string_view text, std::string_view tz) {
  return compile_cron(text, tz, CronExpr::parse(text));
}

Result<CronTiming> CronTiming::make(std::string_view text, std::string_view tz, std::string_view entry_key) {
  return compile_cron(text, tz, CronExpr::parse(text, entry_key));
}

Status validate_timer(const Timer& t, int64_t jitter_ms) {
  // Fields of other kinds must be unset, so one timer has exactly one encoding.
  if (t.kind != TimerKind::at && t.at_utc_ms != 0) return timer_error("at", "only applies to an \"at\" timer");
  if (t.kind != TimerKind::after && t.after_ms != 0) return timer_error("after", "only applies to an \"after\" timer");
  if (t.kind != TimerKind::interval && (t.interval_ms != 0 || t.repeat_for_ms != 0 || t.count != 0)) {
    return timer_error(t.interval_ms != 0 ? "interval" : t.repeat_for_ms != 0 ? "repeat_for" : "count",
                       "only applies to an \"interval\" timer");
  }
  switch (t.kind) {
    case TimerKind::at:
      if (t.at_utc_ms < kCronMinUtcMs || t.at_utc_ms > kCronMaxUtcMs) {
        return timer_error("at", "must be between years 0001 and 9999");
      }
      break;
    case TimerKind::after:
      if (Status s = duration_in_range("after", t.after_ms); !s.ok()) return s;
      break;
    case TimerKind::interval:
      if (Status s = duration_in_range("interval", t.interval_ms); !s.ok()) return s;
      if (Status s = duration_in_range("repeat_for", t.repeat_for_ms); !s.ok()) return s;
      if (t.count > 0 && t.repeat_for_ms > 0) {
        return timer_error("count", "give repeat_for or count, not both");
      }
      if (t.count > (uint64_t{1} << 32)) return timer_error("count", "must be at most 4294967296");
      if (t.interval_ms == 0) {
        if (t.repeat_for_ms > 0 || t.count > 1) {
          return timer_error("interval", "an interval of 0 pops once, at creation; it cannot repeat "
                                         "(set repeat_for to 0 or count to 1)");
        }
        break;
      }
      if (t.count == 0 && t.repeat_for_ms < t.interval_ms) {
        return timer_error("repeat_for", "is shorter than interval, so the timer would never pop");
      }
      if (t.count > 0 && t.count > static_cast<uint64_t>(kMaxEntryDurationMs / t.interval_ms)) {
        return timer_error("count", "count x interval must be at most 100 years");
      }
      if (jitter_ms >= t.interval_ms) {
        return timer_error("jitter", "must be shorter than interval so pops stay in order");
      }
      break;
    default:
      return timer_error("kind", "unknown timer kind");
  }
  if (jitter_ms < 0 || jitter_ms > kMaxJitterMs) {
    return timer_error("jitter", "must be between 0 and 1 day");
  }
  return Status::success();
}

std::optional<int64_t> timer_next_after(const Timer& t, int64_t created_utc_ms, int64_t after_utc_ms) {
  switch (t.kind) {
    case TimerKind::at: {
      const int64_t when = std::max(t.at_utc_ms, created_utc_ms);
      return when > after_utc_ms ? std::optional<int64_t>(when) : std::nullopt;
    }
    case TimerKind::after: {
      const int64_t when = created_utc_ms + t.after_ms;
      return when > after_utc_ms ? std::optional<int64_t>(when) : std::nullopt;
    }
    case TimerKind::interval: {
      if (t.interval_ms == 0) {
        return created_utc_ms > after_utc_ms ? std::optional<int64_t>(created_utc_ms) : std::nullopt;
      }
      // Smallest k >= 1 with created + k·interval > after.
      const int64_t k = std::max<int64_t>(1, floor_div(after_utc_ms - created_utc_ms, t.interval_ms) + 1);
      if (static_cast<uint64_t>(k) > pop_count(t)) return std::nullopt;
      return created_utc_ms + k * t.interval_ms;
    }
  }
  return std::nullopt;
}

uint64_t timer_sequence(const Timer& t, int64_t created_utc_ms, int64_t scheduled_utc_ms) {
  switch (t.kind) {
    case TimerKind::at:
      return scheduled_utc_ms == std::max(t.at_utc_ms, created_utc_ms) ? 1 : 0;
    case TimerKind::after:
      return scheduled_utc_ms == created_utc_ms + t.after_ms ? 1 : 0;
    case TimerKind::interval: {
      if (t.interval_ms == 0) return scheduled_utc_ms == created_utc_ms ? 1 : 0;
      const int64_t delta = scheduled_utc_ms - created_utc_ms;
      if (delta <= 0 || delta % t.interval_ms != 0) return 0;
      const auto k = static_cast<uint64_t>(delta / t.interval_ms);
      return k <= pop_count(t) ? k : 0;
    }
  }
  return 0;
}

int64_t jitter_offset_ms(std::string_view entry_key, int64_t scheduled_utc_ms, int64_t jitter_ms) {
  if (jitter_ms <= 0) return 0;
  const uint64_t h = hash_combine(hash64(entry_key), static_cast<uint64_t>(scheduled_utc_ms));
  return static_cast<int64_t>(h % (static_cast<uint64_t>(jitter_ms) + 1));
}

std::optional<int64_t> next_occurrence(const Entry& entry, int64_t after_utc_ms) {
  if (entry.paused) return std::nullopt;
  std::optional<int64_t> next = next_scheduled_occurrence(entry, after_utc_ms);
  if (entry.triggers.empty()) return next;
  // Manual occurrences join the timing's (docs/entries.md, Controls).  They ignore the
  // active window (an operator asked for them), but not a resume under misfire = skip:
  // what fell due before it, triggers included, is skipped.
  if (entry.resumed_utc_ms && entry.misfire == MisfirePolicy::skip && *entry.resumed_utc_ms > kCronMinUtcMs) {
    after_utc_ms = std::max(after_utc_ms, *entry.resumed_utc_ms - 1);
  }
  const auto t = std::upper_bound(entry.triggers.begin(), entry.triggers.end(), after_utc_ms,
                                  [](int64_t after, const Trigger& tr) { return after < tr.at_utc_ms; });
  if (t != entry.triggers.end() && (!next || t->at_utc_ms < *next)) return t->at_utc_ms;
  return next;
}

std::optional<int64_t> next_scheduled_occurrence(const Entry& entry, int64_t after_utc_ms) {
  if (entry.paused) return std::nullopt;
  // not_before: the search starts just before it (the entry's own cadence is kept: a
  // timer's interval still counts from its creation).
  if (entry.not_before_utc_ms && *entry.not_before_utc_ms > kCronMinUtcMs) {
    after_utc_ms = std::max(after_utc_ms, *entry.not_before_utc_ms - 1);
  }
  // Resumed, under misfire = skip: nothing from before the resume (what fell due while
  // it was paused is skipped).  The other policies see those occurrences and judge them
  // as after an outage (fire_once: the latest; fire_all: all within the window).
  if (entry.resumed_utc_ms && entry.misfire == MisfirePolicy::skip && *entry.resumed_utc_ms > kCronMinUtcMs) {
    after_utc_ms = std::max(after_utc_ms, *entry.resumed_utc_ms - 1);
  }
  std::optional<int64_t> next;
  if (const auto* cron = std::get_if<CronTiming>(&entry.timing)) {
    // Strictly after max(after, created - 1): every occurrence is >= created.
    const int64_t floor_ms = entry.created_utc_ms > kCronMinUtcMs ? entry.created_utc_ms - 1 : kCronMinUtcMs;
    next = cron->expr.next_after(std::max(after_utc_ms, floor_ms), cron->zone, entry.created_utc_ms);
  } else {
    next = timer_next_after(std::get<Timer>(entry.timing), entry.created_utc_ms, after_utc_ms);
  }
  if (next && entry.not_after_utc_ms && *next > *entry.not_after_utc_ms) return std::nullopt;
  return next;
}

int64_t fire_time(const Entry& entry, int64_t scheduled_utc_ms) {
  if (entry.jitter_ms <= 0) return scheduled_utc_ms;  // most entries: no key to build and hash
  // A manual occurrence runs when asked: no jitter.
  if (!entry.triggers.empty() && entry.trigger_at(scheduled_utc_ms) != nullptr) return scheduled_utc_ms;
  return scheduled_utc_ms + jitter_offset_ms(entry_key(entry), scheduled_utc_ms, entry.jitter_ms);
}

uint64_t occurrence_sequence(const Entry& entry, int64_t scheduled_utc_ms) {
  if (const auto* timer = std::get_if<Timer>(&entry.timing)) {
    return timer_sequence(*timer, entry.created_utc_ms, scheduled_utc_ms);
  }
  return 0;
}

}  // namespace caesium::schedule
