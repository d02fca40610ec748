// The operator controls an entry carries (docs/entries.md, Controls): paused, timeout,
// not_before / not_after.  Their binary form (version 2, written only when a control is
// set), their JSON form and validation, and what they do to next_occurrence.
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

namespace {

Entry from_json(const json& j) {
  auto e = entry_from_json(j, "ops", "tick", kNow, "n1");
  INFO(j.dump() << ": " << (e.ok() ? "" : e.error().message));
  REQUIRE(e.ok());
  return *e;
}

std::string json_error(json j) {
  auto e = entry_from_json(j, "ops", "tick", kNow, "n1");
  return e.ok() ? "(accepted)" : e.error().message;  // the message names the field
}

}  // namespace

TEST_CASE("an entry without controls keeps the version 1 encoding, with any, version 2", "[entry][controls]") {
  Entry plain = every_minute();
  CHECK_FALSE(plain.has_controls());
  CHECK(encode_entry(plain)[2] == 1);

  Entry paused = plain;
  paused.paused = true;
  Entry timed = plain;
  timed.timeout_ms = 90'000;
  Entry window = plain;
  window.not_before_utc_ms = kNow + 10 * kMinute;
  window.not_after_utc_ms = kNow + 20 * kMinute;
  Entry after_only = plain;
  after_only.not_after_utc_ms = kNow + kMinute;
  for (const Entry& e : {paused, timed, window, after_only}) {
    REQUIRE(validate(e).ok());
    const std::string bytes = encode_entry(e);
    CHECK(bytes[2] == 2);
    auto back = decode_entry(bytes);
    REQUIRE(back.ok());
    CHECK(*back == e);
    CHECK(encode_entry(*back) == bytes);
    // Every truncation is refused, never mis-read as a shorter entry.
    for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_entry(std::string_view(bytes).substr(0, n)).ok());
  }
}

TEST_CASE("a version 2 encoding with no control set, or unknown flags, is refused", "[entry][controls]") {
  // Version 1 bytes with the version byte set to 2 and an all-clear controls block: the
  // same entry has one encoding, version 1, so this one is not canonical.
  std::string bytes = encode_entry(every_minute());
  bytes[2] = 2;
  std::string empty_controls = bytes + std::string("\x00\x00", 2);
  auto d = decode_entry(empty_controls);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message.find("version 2 without any control") != std::string::npos);
  // Version 2 without the controls block at all is truncated.
  CHECK_FALSE(decode_entry(bytes).ok());
  // A flag bit this version does not define (128 says a second flags byte follows).
  auto unknown = decode_entry(bytes + std::string("\x80\x02\x00", 3));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("unknown flag bits") != std::string::npos);
}

TEST_CASE("controls in JSON: read, written back and validated", "[entry][controls][json]") {
  const Entry e = from_json({{"cron", "* * * * *"},
                             {"handler", "noop"},
                             {"paused", true},
                             {"timeout", "90s"},
                             {"not_before", "2026-01-01T00:10:00Z"},
                             {"not_after", "2026-01-01T02:00:00+01:00"}});
  CHECK(e.paused);
  CHECK(e.timeout_ms == 90'000);
  CHECK(e.not_before_utc_ms == kNow + 10 * kMinute);
  CHECK(e.not_after_utc_ms == kNow + 60 * kMinute);  // 02:00+01:00 is 01:00 UTC
  json back = entry_to_json(e);
  CHECK(back["paused"] == true);
  CHECK(back["timeout"] == "1m30s");
  CHECK(back["not_before"] == "2026-01-01T00:10:00Z");
  CHECK(back["not_after"] == "2026-01-01T01:00:00Z");
  CHECK(from_json(back) == e);  // a GET body PUT back is the same entry

  // Defaults: not paused, no timeout, no window; null means "no bound".
  const Entry d = from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"not_before", nullptr}});
  CHECK_FALSE(d.has_controls());
  CHECK(entry_to_json(d)["not_before"].is_null());

  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"paused", "yes"}}) ==
        "paused: expected true or false");
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"timeout", "soon"}}).rfind("timeout: ", 0) == 0);
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"not_before", "yesterday"}}).rfind("not_before: ", 0) ==
        0);
  CHECK(json_error({{"cron", "* * * * *"},
                    {"handler", "noop"},
                    {"not_before", "2026-02-01T00:00:00Z"},
                    {"not_after", "2026-01-01T00:00:00Z"}}) ==
        "not_after: is before not_before (2026-02-01T00:00:00Z)");
}

TEST_CASE("next_occurrence: a paused entry has none, the window bounds the others", "[entry][controls]") {
  Entry e = every_minute();
  CHECK(next_occurrence(e, kNow) == kNow + kMinute);

  e.paused = true;
  CHECK_FALSE(next_occurrence(e, kNow).has_value());
  e.paused = false;

  // not_before: the first occurrence at or after it, on the entry's own cadence.
  e.not_before_utc_ms = kNow + 10 * kMinute + 30'000;
  CHECK(next_occurrence(e, kNow) == kNow + 11 * kMinute);
  e.not_before_utc_ms = kNow + 10 * kMinute;  // an occurrence exactly at not_before is in
  CHECK(next_occurrence(e, kNow) == kNow + 10 * kMinute);
  CHECK(next_occurrence(e, kNow + 15 * kMinute) == kNow + 16 * kMinute);

  // not_after: an occurrence exactly at it is in, none after it.
  e.not_after_utc_ms = kNow + 12 * kMinute;
  CHECK(next_occurrence(e, kNow + 11 * kMinute) == kNow + 12 * kMinute);
  CHECK_FALSE(next_occurrence(e, kNow + 12 * kMinute).has_value());

  // A timer keeps counting from its creation: the window removes pops, it does not move them.
  Entry t = every_minute();
  Timer timer;
  timer.kind = TimerKind::interval;
  timer.interval_ms = 20'000;
  timer.repeat_for_ms = 120'000;
  t.timing = timer;
  t.not_before_utc_ms = kNow + 50'000;
  REQUIRE(validate(t).ok());
  CHECK(next_occurrence(t, kNow) == kNow + 60'000);
  CHECK(occurrence_sequence(t, kNow + 60'000) == 3);
}

TEST_CASE("a resume records its instant, under skip nothing due while paused is scheduled", "[entry][controls]") {
  Entry e = every_minute();
  e.misfire = MisfirePolicy::skip;
  apply_pause(e, true, kNow + 5 * kMinute);
  CHECK(e.paused);
  CHECK_FALSE(e.resumed_utc_ms.has_value());  // pausing records nothing
  apply_pause(e, true, kNow + 6 * kMinute);    // pausing a paused entry changes nothing
  CHECK_FALSE(e.resumed_utc_ms.has_value());

  apply_pause(e, false, kNow + 10 * kMinute + 30'000);
  CHECK_FALSE(e.paused);
  CHECK(e.resumed_utc_ms == kNow + 10 * kMinute + 30'000);
  // From an enumeration cursor left where the pause began, the next occurrence is the
  // first at or after the resume.
  CHECK(next_occurrence(e, kNow + 5 * kMinute) == kNow + 11 * kMinute);
  CHECK(e.created_utc_ms == kNow);  // the creation instant is kept
  // Under fire_once (and fire_all) the occurrences due while paused are still scheduled:
  // the scheduler's misfire rules judge them as after an outage.
  Entry once = e;
  once.misfire = MisfirePolicy::fire_once;
  CHECK(next_occurrence(once, kNow + 5 * kMinute) == kNow + 6 * kMinute);

  // Resuming an entry that is not paused keeps the instant of the last real resume.
  apply_pause(e, false, kNow + 20 * kMinute);
  CHECK(e.resumed_utc_ms == kNow + 10 * kMinute + 30'000);

  // It travels in the binary form and the JSON (read-only there: a PUT ignores it).
  auto back = decode_entry(encode_entry(e));
  REQUIRE(back.ok());
  CHECK(*back == e);
  json j = entry_to_json(e);
  CHECK(j["resumed"] == "2026-01-01T00:10:30Z");
  CHECK_FALSE(from_json(j).resumed_utc_ms.has_value());
  CHECK_FALSE(entry_to_json(every_minute()).contains("resumed"));
}

TEST_CASE("overlap: allow keeps the encoding, forbid is flag 16 and a policy byte", "[entry][controls][overlap]") {
  const Entry plain = every_minute();
  CHECK(plain.overlap == OverlapPolicy::allow);
  Entry forbid = plain;
  forbid.overlap = OverlapPolicy::forbid;
  REQUIRE(validate(forbid).ok());
  CHECK(forbid.has_controls());
  const std::string bytes = encode_entry(forbid);
  CHECK(bytes[2] == 2);
  // The controls block: flags = 16, timeout 0, policy 1 (forbid).
  CHECK(bytes.substr(bytes.size() - 3) == std::string("\x10\x00\x01", 3));
  auto back = decode_entry(bytes);
  REQUIRE(back.ok());
  CHECK(*back == forbid);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_entry(std::string_view(bytes).substr(0, n)).ok());
  // With another control the policy byte comes after the others' values.
  Entry both = forbid;
  both.paused = true;
  auto both_back = decode_entry(encode_entry(both));
  REQUIRE(both_back.ok());
  CHECK(*both_back == both);
  // allow is written as the flag's absence: a policy byte of 0 is not canonical, and a
  // policy this node does not know is refused.
  std::string v1 = encode_entry(plain);
  v1[2] = 2;
  for (const auto& [policy, why] : {std::pair{'\x00', "overlap: unknown policy 0"}, {'\x07', "overlap: unknown policy 7"}}) {
    auto bad = decode_entry(v1 + std::string("\x10\x00", 2) + policy);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find(why) != std::string::npos);
  }
}

TEST_CASE("on_failure: flag 128 and the handler's name, in JSON a name or null", "[entry][controls][notify]") {
  Entry e = every_minute();
  e.on_failure = "page-ops";
  REQUIRE(validate(e).ok());
  CHECK(e.has_controls());
  const std::string bytes = encode_entry(e);
  CHECK(bytes[2] == 2);
  // flags = 128 (a second byte follows), second flags = 1, timeout 0, then the name.
  CHECK(bytes.substr(bytes.size() - 12) == std::string("\x80\x01\x00\x08page-ops", 12));
  auto back = decode_entry(bytes);
  REQUIRE(back.ok());
  CHECK(*back == e);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_entry(std::string_view(bytes).substr(0, n)).ok());
  // No handler is written as the flag's absence: an empty name is not canonical.
  std::string v1 = encode_entry(every_minute());
  v1[2] = 2;
  auto empty = decode_entry(v1 + std::string("\x80\x01\x00\x00", 4));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message.find("on_failure") != std::string::npos);
  // The second flags byte is written only with a flag in it.
  auto bare = decode_entry(v1 + std::string("\x81\x00\x00", 3));
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.error().message.find("second flags byte") != std::string::npos);
  // JSON.
  const Entry j = from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"on_failure", "page-ops"}});
  CHECK(j.on_failure == "page-ops");
  CHECK(entry_to_json(j)["on_failure"] == "page-ops");
  CHECK(from_json(entry_to_json(j)) == j);
  const Entry none = from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"on_failure", nullptr}});
  CHECK(none.on_failure.empty());
  CHECK(entry_to_json(none)["on_failure"].is_null());
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"on_failure", 3}}).find("on_failure") == 0);
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"on_failure", "a b"}}).find("on_failure") == 0);
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"on_failure", ""}}) == "on_failure: must not be empty (null: no handler)");
}

TEST_CASE("overlap in JSON: read, written back and validated", "[entry][controls][overlap][json]") {
  const Entry e = from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"overlap", "forbid"}});
  CHECK(e.overlap == OverlapPolicy::forbid);
  CHECK(entry_to_json(e)["overlap"] == "forbid");
  CHECK(from_json(entry_to_json(e)) == e);
  const Entry d = from_json({{"cron", "* * * * *"}, {"handler", "noop"}});
  CHECK(entry_to_json(d)["overlap"] == "allow");
  CHECK_FALSE(d.has_controls());
  CHECK(from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"overlap", "allow"}}) == d);
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"overlap", "sometimes"}}) ==
        "overlap: expected allow or forbid or replace");
  CHECK(json_error({{"cron", "* * * * *"}, {"handler", "noop"}, {"overlap", true}}) ==
        "overlap: expected allow or forbid or replace");
  const Entry r = from_json({{"cron", "* * * * *"}, {"handler", "noop"}, {"overlap", "replace"}});
  CHECK(r.overlap == OverlapPolicy::replace);
  CHECK(entry_to_json(r)["overlap"] == "replace");
  CHECK(from_json(entry_to_json(r)) == r);
  const auto back = decode_entry(encode_entry(r));
  REQUIRE(back.ok());
  CHECK(*back == r);
}
