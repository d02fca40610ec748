// Run now (docs/entries.md, Controls): an entry's manual occurrences (Entry::triggers).
// Their binary form (version 2, flag 64), JSON form (read-only), validation, how
// add_trigger places and bounds them, and what they do to next_occurrence and fire_time.
#include <catch2/catch.hpp>

#include <string>

#include "base/time.h"
#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"
#include "schedule/timing.h"
#include "tests/unit/entry_fixture.h"

using namespace caesium::schedule;
using nlohmann::json;
using caesium::test::every_minute;
using caesium::test::kMinute;
using caesium::test::kNow;


TEST_CASE("triggers: version 2 with flag 64, round trip, truncations and bad lists refused", "[entry][trigger]") {
  Entry e = every_minute();
  e.triggers = {{"k0123456789abcdef", kNow + 1'500}, {"t00000000000000aa", kNow + 90'250}};
  REQUIRE(validate(e).ok());
  CHECK(e.has_controls());
  const std::string bytes = encode_entry(e);
  CHECK(bytes[2] == 2);
  auto back = decode_entry(bytes);
  REQUIRE(back.ok());
  CHECK(*back == e);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_entry(std::string_view(bytes).substr(0, n)).ok());

  // With the overlap control too: its policy byte comes before the trigger list (the order
  // of the flag bits), and every prefix is refused.
  Entry both = e;
  both.semantics = Semantics::at_most_once;
  both.overlap = OverlapPolicy::forbid;
  const std::string both_bytes = encode_entry(both);
  auto both_back = decode_entry(both_bytes);
  REQUIRE(both_back.ok());
  CHECK(*both_back == both);
  // u8 overlap (1 forbid), then varint count 2, then the first id (length 17).
  CHECK(both_bytes.find(std::string("\x01\x02\x11k0123456789abcdef")) != std::string::npos);
  for (size_t n = 0; n < both_bytes.size(); ++n) {
    CHECK_FALSE(decode_entry(std::string_view(both_bytes).substr(0, n)).ok());
  }

  // The flags byte follows the payload; bits other than the known ones are refused (32 is
  // the retry policy, entry_retry_test.cpp; 128 says a second flags byte follows).
  Entry plain = every_minute();
  std::string v1 = encode_entry(plain);
  v1[2] = 2;
  auto unknown = decode_entry(v1 + std::string("\x80\x02\x00", 3));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("unknown flag bits") != std::string::npos);
  // Flag 64 with a count of 0 is not canonical (no triggers: the flag is clear).
  auto zero = decode_entry(v1 + std::string("\x40\x00\x00", 3));
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message.find("triggers") != std::string::npos);

  Entry bad = every_minute();
  bad.triggers = {{"Kbad", kNow}};
  CHECK(validate(bad).error().field == "triggers[0].id");
  bad.triggers = {{"a", kNow + 2}, {"b", kNow + 2}};
  CHECK(validate(bad).error().field == "triggers[1].at");
  bad.triggers = {{"a", kNow + 1}, {"a", kNow + 2}};
  CHECK(validate(bad).error().field == "triggers[1].id");
  bad.triggers.clear();
  for (size_t i = 0; i <= kMaxTriggers; ++i) bad.triggers.push_back({"t" + std::to_string(i), kNow + int64_t(i)});
  CHECK(validate(bad).error().field == "triggers");
}

TEST_CASE("triggers in JSON: shown read-only, ignored when sent back", "[entry][trigger][json]") {
  Entry e = every_minute();
  e.triggers = {{"k0123456789abcdef", kNow + 1'500}};
  const json j = entry_to_json(e);
  REQUIRE(j.contains("triggers"));
  CHECK(j["triggers"] == json::array({{{"id", "k0123456789abcdef"}, {"at", "2026-01-01T00:00:01.500Z"}}}));
  CHECK_FALSE(entry_to_json(every_minute()).contains("triggers"));
  // A GET body PUT back: the server's triggers are not taken from it (even malformed).
  json back = j;
  back["triggers"] = "anything";
  auto parsed = entry_from_json(back, "ops", "tick", kNow, "n1");
  REQUIRE(parsed.ok());
  CHECK(parsed->triggers.empty());
}

TEST_CASE("add_trigger: due at the write, never on a scheduled instant, bounded", "[entry][trigger]") {
  Entry e = every_minute();
  // The floor is a scheduled instant (a whole minute): the trigger moves one ms on.
  auto t = add_trigger(e, "a", kNow + kMinute, kNow + kMinute - 5);
  REQUIRE(t.ok());
  CHECK(t->at_utc_ms == kNow + kMinute + 1);
  // A second at the same floor goes after the first (due order, distinct instants).
  auto t2 = add_trigger(e, "b", kNow + kMinute, kNow + kMinute - 5);
  REQUIRE(t2.ok());
  CHECK(t2->at_utc_ms == kNow + kMinute + 2);
  CHECK(e.trigger_named("b")->at_utc_ms == t2->at_utc_ms);
  CHECK(e.trigger_at(kNow + kMinute + 1)->id == "a");
  CHECK(e.trigger_at(kNow + kMinute) == nullptr);
  REQUIRE(validate(e).ok());

  // kMaxTriggers that may all still run: the next is refused, naming the field.
  Entry full = every_minute();
  full.misfire_window_ms = 5 * kMinute;
  for (size_t i = 0; i < kMaxTriggers; ++i) REQUIRE(add_trigger(full, "t" + std::to_string(i), kNow + 10, kNow).ok());
  auto refused = add_trigger(full, "late", kNow + 10, kNow);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().field == "triggers");
  // Past their misfire window the oldest gives way; past the memory all are forgotten.
  auto later = add_trigger(full, "later", kNow + 6 * kMinute, kNow + 6 * kMinute);
  REQUIRE(later.ok());
  CHECK(full.triggers.size() == kMaxTriggers);
  CHECK(full.trigger_named("t0") == nullptr);
  CHECK(full.trigger_named("t1") != nullptr);
  auto much_later = add_trigger(full, "much", kNow + 30 * kMinute, kNow + 30 * kMinute);
  REQUIRE(much_later.ok());
  CHECK(full.triggers.size() == 1);
  // An Idempotency-Key is remembered at least kTriggerMemoryMs, even with no misfire window.
  Entry strict = every_minute();
  strict.misfire_window_ms = 0;
  REQUIRE(add_trigger(strict, "x", kNow, kNow).ok());
  REQUIRE(add_trigger(strict, "y", kNow + kTriggerMemoryMs, kNow + kTriggerMemoryMs).ok());
  CHECK(strict.trigger_named("x") != nullptr);
}

TEST_CASE("next_occurrence yields triggers among scheduled instants, no jitter, pause and skip-resume apply",
          "[entry][trigger]") {
  Entry e = every_minute();
  e.jitter_ms = 30'000;
  e.not_after_utc_ms = kNow + 2 * kMinute;  // the window bounds the timing, not the triggers
  e.triggers = {{"a", kNow + 30'001}, {"b", kNow + 5 * kMinute + 7}};
  REQUIRE(validate(e).ok());
  CHECK(next_occurrence(e, kNow) == kNow + 30'001);
  CHECK(next_occurrence(e, kNow + 30'001) == kNow + kMinute);
  CHECK(next_occurrence(e, kNow + 2 * kMinute) == kNow + 5 * kMinute + 7);
  CHECK_FALSE(next_occurrence(e, kNow + 5 * kMinute + 7).has_value());
  CHECK(next_scheduled_occurrence(e, kNow) == kNow + kMinute);
  CHECK(fire_time(e, kNow + 30'001) == kNow + 30'001);
  CHECK(fire_time(e, kNow + kMinute) == kNow + kMinute + jitter_offset_ms(entry_key(e), kNow + kMinute, 30'000));
  CHECK(occurrence_sequence(e, kNow + 30'001) == 0);

  Entry paused = e;
  paused.paused = true;
  CHECK_FALSE(next_occurrence(paused, kNow).has_value());
  Entry skipped = e;
  skipped.misfire = MisfirePolicy::skip;
  skipped.resumed_utc_ms = kNow + 4 * kMinute;
  CHECK(next_occurrence(skipped, kNow) == kNow + 5 * kMinute + 7);

  // A finished one-shot timer can run again by hand.
  Entry timer = every_minute();
  timer.timing = Timer{TimerKind::after, 0, 1'000, 0, 0, 0};
  timer.triggers = {{"a", kNow + kMinute}};
  REQUIRE(validate(timer).ok());
  CHECK(next_occurrence(timer, kNow + 1'000) == kNow + kMinute);
}

TEST_CASE("Idempotency-Key: visible ASCII, 1..200 bytes, the id is a hash of it", "[entry][trigger]") {
  CHECK(validate_idempotency_key("deploy-4711").ok());
  CHECK(validate_idempotency_key(std::string(200, 'k')).ok());
  CHECK_FALSE(validate_idempotency_key("").ok());
  CHECK_FALSE(validate_idempotency_key(std::string(201, 'k')).ok());
  CHECK_FALSE(validate_idempotency_key("a b").ok());
  CHECK_FALSE(validate_idempotency_key("a\x01").ok());
  CHECK_FALSE(validate_idempotency_key("caf\xc3\xa9").ok());
  CHECK(validate_idempotency_key("a\tb").error().field == "Idempotency-Key");
  const std::string id = trigger_id_for_key("deploy-4711");
  CHECK(id.size() == 17);
  CHECK(id[0] == 'k');
  CHECK(id == trigger_id_for_key("deploy-4711"));
  CHECK(id != trigger_id_for_key("deploy-4712"));
}
