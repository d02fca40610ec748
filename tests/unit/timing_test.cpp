// Timers (Chronos semantics), jitter, sequence numbers and the entry-level occurrence
// functions.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>
#include <vector>

#include "base/rng.h"
#include "tests/unit/test_seed.h"
#include "base/time.h"
#include "schedule/entry.h"
#include "schedule/timing.h"

using namespace caesium::schedule;
using caesium::format_rfc3339_utc;
using caesium::parse_rfc3339_ms;
using caesium::Rng;

namespace {

using caesium::test::seed_or;

constexpr int64_t kCreated = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSec = 1000;

Timer interval(int64_t interval_ms, int64_t repeat_for_ms, uint64_t count = 0) {
  Timer t;
  t.kind = TimerKind::interval;
  t.interval_ms = interval_ms;
  t.repeat_for_ms = repeat_for_ms;
  t.count = count;
  return t;
}

// Every pop, by walking timer_next_after from before creation.
std::vector<int64_t> pops(const Timer& t, int64_t created) {
  std::vector<int64_t> out;
  int64_t after = created - 1;
  while (auto next = timer_next_after(t, created, after)) {
    out.push_back(*next - created);
    after = *next;
    REQUIRE(out.size() < 100000);
  }
  return out;
}

Entry timer_entry(const Timer& t, int64_t jitter_ms = 0) {
  Entry e;
  e.entity = "acct-7";
  e.name = "renewal";
  e.handler = "http-callback";
  e.timing = t;
  e.jitter_ms = jitter_ms;
  e.created_utc_ms = kCreated;
  return e;
}

}  // namespace

TEST_CASE("Chronos interval/repeat_for: pops at created + k*interval while <= repeat_for", "[timing]") {
  // The seed's example: interval 20 s, repeat for 120 s -> 6 pops, the last exactly at 120 s.
  CHECK(pops(interval(20 * kSec, 120 * kSec), kCreated) ==
        std::vector<int64_t>{20'000, 40'000, 60'000, 80'000, 100'000, 120'000});
  // repeat_for defaults to interval (the JSON layer fills it in): one pop.
  CHECK(pops(interval(30 * kSec, 30 * kSec), kCreated) == std::vector<int64_t>{30'000});
  // A pop that would land after repeat_for does not happen.
  CHECK(pops(interval(20 * kSec, 119 * kSec), kCreated).size() == 5);
  // Interval 0, repeat_for 0: once, at creation ("at once").
  CHECK(pops(interval(0, 0), kCreated) == std::vector<int64_t>{0});
  // count instead of repeat_for.
  CHECK(pops(interval(10 * kSec, 0, 3), kCreated) == std::vector<int64_t>{10'000, 20'000, 30'000});
  CHECK(pops(interval(0, 0, 1), kCreated) == std::vector<int64_t>{0});
}

TEST_CASE("one-shot timers: at and after", "[timing]") {
  Timer after;
  after.kind = TimerKind::after;
  after.after_ms = 90 * kSec;
  CHECK(pops(after, kCreated) == std::vector<int64_t>{90'000});
  Timer at;
  at.kind = TimerKind::at;
  at.at_utc_ms = kCreated + 5 * kSec;
  CHECK(pops(at, kCreated) == std::vector<int64_t>{5'000});
  // An `at` already in the past when the entry is created pops at creation (late, not lost).
  at.at_utc_ms = kCreated - 3600 * kSec;
  CHECK(pops(at, kCreated) == std::vector<int64_t>{0});
  CHECK(timer_sequence(at, kCreated, kCreated) == 1);
}

TEST_CASE("sequence numbers are 1-based pop indices", "[timing]") {
  const Timer t = interval(20 * kSec, 120 * kSec);
  for (uint64_t k = 1; k <= 6; ++k) CHECK(timer_sequence(t, kCreated, kCreated + static_cast<int64_t>(k) * 20 * kSec) == k);
  CHECK(timer_sequence(t, kCreated, kCreated + 140 * kSec) == 0);  // past repeat_for
  CHECK(timer_sequence(t, kCreated, kCreated + 21 * kSec) == 0);   // not a pop
  CHECK(timer_sequence(t, kCreated, kCreated) == 0);
  CHECK(timer_sequence(interval(0, 0), kCreated, kCreated) == 1);
  const Entry e = timer_entry(t);
  CHECK(occurrence_sequence(e, kCreated + 60 * kSec) == 3);
}

TEST_CASE("random interval timers pop exactly their count, in order, with sequences 1..n", "[timing]") {
  const uint64_t seed = seed_or(99);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  for (int r = 0; r < 500; ++r) {
    const int64_t iv = rng.between(1, 5000);
    const bool by_count = rng.chance(0.5);
    const Timer t = by_count ? interval(iv, 0, static_cast<uint64_t>(rng.between(1, 50)))
                             : interval(iv, rng.between(iv, 60 * iv));
    REQUIRE(validate_timer(t, 0).ok());
    const uint64_t expected = by_count ? t.count : static_cast<uint64_t>(t.repeat_for_ms / iv);
    const auto all = pops(t, kCreated);
    INFO("interval " << iv << " repeat_for " << t.repeat_for_ms << " count " << t.count);
    REQUIRE(all.size() == expected);
    for (size_t k = 0; k < all.size(); ++k) {
      CHECK(all[k] == static_cast<int64_t>(k + 1) * iv);
      CHECK(timer_sequence(t, kCreated, kCreated + all[k]) == k + 1);
    }
    // Asking from an arbitrary instant gives the first pop strictly after it.
    const int64_t probe = rng.between(-iv, all.back() + iv);
    const auto next = timer_next_after(t, kCreated, kCreated + probe);
    const auto it = std::upper_bound(all.begin(), all.end(), probe);
    if (it == all.end()) {
      CHECK_FALSE(next.has_value());
    } else {
      REQUIRE(next.has_value());
      CHECK(*next - kCreated == *it);
    }
  }
}

TEST_CASE("timer validation names the field and says why", "[timing]") {
  struct Case {
    Timer timer;
    int64_t jitter_ms;
    const char* field;
  };
  Timer negative_after;
  negative_after.after_ms = -1;
  Timer far_at;
  far_at.kind = TimerKind::at;
  far_at.at_utc_ms = caesium::schedule::kCronMaxUtcMs + 1;
  Timer at_with_interval = far_at;
  at_with_interval.at_utc_ms = 0;
  at_with_interval.interval_ms = 5;
  Timer after_with_at;
  after_with_at.at_utc_ms = 5;
  const Case cases[] = {
      {interval(0, 10 * kSec), 0, "timer.interval"},       // interval 0 cannot repeat
      {interval(0, 0, 2), 0, "timer.interval"},
      {interval(20 * kSec, 10 * kSec), 0, "timer.repeat_for"},  // never pops
      {interval(20 * kSec, 40 * kSec, 2), 0, "timer.count"},    // both
      {interval(-5, 0), 0, "timer.interval"},
      {interval(20 * kSec, 40 * kSec), 20 * kSec, "timer.jitter"},  // jitter >= interval
      {interval(20 * kSec, kMaxEntryDurationMs + 1), 0, "timer.repeat_for"},
      {negative_after, 0, "timer.after"},
      {far_at, 0, "timer.at"},
      {Timer{}, -1, "timer.jitter"},
      {at_with_interval, 0, "timer.interval"},  // fields of another kind must be unset
      {after_with_at, 0, "timer.at"},
      {Timer{}, kMaxJitterMs + 1, "timer.jitter"},
  };
  for (const auto& c : cases) {
    INFO("expected field " << c.field);
    const auto s = validate_timer(c.timer, c.jitter_ms);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().field == c.field);
    CHECK(s.error().message.rfind(std::string(c.field) + ": ", 0) == 0);
  }
  CHECK(validate_timer(interval(20 * kSec, 40 * kSec), 19 * kSec).ok());
  CHECK(validate_timer(interval(0, 0), kMaxJitterMs).ok());
}

TEST_CASE("jitter is deterministic, in range, and spreads across occurrences", "[timing]") {
  const Entry e = timer_entry(interval(60 * kSec, 3600 * kSec), 10 * kSec);
  std::set<int64_t> offsets;
  int64_t total = 0;
  for (int k = 1; k <= 1000; ++k) {
    const int64_t scheduled = kCreated + k * 60 * kSec;
    const int64_t fire = fire_time(e, scheduled);
    CHECK(fire >= scheduled);
    CHECK(fire <= scheduled + 10 * kSec);
    CHECK(fire == fire_time(e, scheduled));  // every replica computes the same
    CHECK(fire - scheduled == jitter_offset_ms(entry_key(e), scheduled, 10 * kSec));
    offsets.insert(fire - scheduled);
    total += fire - scheduled;
  }
  CHECK(offsets.size() > 900);  // not a constant or a few values
  CHECK(total / 1000 > 4000);   // mean near 5 s
  CHECK(total / 1000 < 6000);
  // Another entry gets different offsets for the same instants.
  Entry other = e;
  other.name = "renewal-2";
  int same = 0;
  for (int k = 1; k <= 100; ++k) same += fire_time(other, kCreated + k * 60 * kSec) == fire_time(e, kCreated + k * 60 * kSec);
  CHECK(same < 5);
  // No jitter: fire at the scheduled instant.
  CHECK(fire_time(timer_entry(interval(60 * kSec, 3600 * kSec)), kCreated + 60 * kSec) == kCreated + 60 * kSec);
  CHECK(jitter_offset_ms("k", 123, 0) == 0);
}

TEST_CASE("next_occurrence for cron entries starts at creation and anchors @every there", "[timing]") {
  Entry e = timer_entry(Timer{});
  e.timing = CronTiming::make("0 9 * * *", "Europe/London").value();
  e.created_utc_ms = parse_rfc3339_ms("2026-06-01T08:00:00Z").value();  // 09:00 BST: exactly now
  // Nothing before creation: the occurrence at the creation instant itself counts.
  CHECK(format_rfc3339_utc(*next_occurrence(e, 0)) == "2026-06-01T08:00:00Z");
  CHECK(format_rfc3339_utc(*next_occurrence(e, e.created_utc_ms)) == "2026-06-02T08:00:00Z");
  CHECK(occurrence_sequence(e, e.created_utc_ms) == 0);
  e.timing = CronTiming::make("@every 45m", "UTC").value();
  e.created_utc_ms = parse_rfc3339_ms("2026-06-01T08:00:10.500Z").value();
  CHECK(format_rfc3339_utc(*next_occurrence(e, 0)) == "2026-06-01T08:45:10Z");
  CHECK(format_rfc3339_utc(*next_occurrence(e, parse_rfc3339_ms("2026-06-01T10:00:00Z").value())) ==
        "2026-06-01T10:15:10Z");
}

TEST_CASE("CronTiming::make reports which part is wrong", "[timing]") {
  auto bad_expr = CronTiming::make("61 * * * *", "UTC");
  REQUIRE_FALSE(bad_expr.ok());
  CHECK(bad_expr.error().field == "cron");
  CHECK(bad_expr.error().message == "cron: minute at column 1: 61 is out of range; expected a number 0-59");
  auto bad_zone = CronTiming::make("@daily", "Europe/Lundon");
  REQUIRE_FALSE(bad_zone.ok());
  CHECK(bad_zone.error().field == "tz");
}
