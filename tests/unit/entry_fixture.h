// What the entry tests share: a fixed instant and a plain every-minute cron entry.
#pragma once

#include <cstdint>

#include "schedule/entry.h"
#include "schedule/timing.h"

namespace caesium::test {

inline constexpr int64_t kNow = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
inline constexpr int64_t kMinute = 60'000;

// "* * * * *" in UTC, created at kNow by n1, with no control set.
inline schedule::Entry every_minute() {
  schedule::Entry e;
  e.entity = "ops";
  e.name = "tick";
  e.timing = schedule::CronTiming::make("* * * * *", "UTC").value();
  e.handler = "noop";
  e.origin = "n1";
  e.created_utc_ms = kNow;
  return e;
}

}  // namespace caesium::test
