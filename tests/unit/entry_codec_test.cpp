// Entry encodings: the binary store value (round trips, every truncation and random
// corruption rejected cleanly) and the JSON API form (round trips, field errors).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "base/base64.h"
#include "base/rng.h"
#include "tests/unit/test_seed.h"
#include "base/time.h"
#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"

using namespace caesium::schedule;
using caesium::Rng;
using caesium::base64_encode;
using nlohmann::json;

namespace {

using caesium::test::seed_or;

constexpr int64_t kNow = 1'767'225'600'123;  // 2026-01-01T00:00:00.123Z

Entry cron_entry() {
  Entry e;
  e.entity = "billing";
  e.name = "nightly-report";
  e.timing = CronTiming::make("30 2 * * MON-FRI", "Europe/London").value();
  e.jitter_ms = 30'000;
  e.handler = "report";
  e.semantics = Semantics::at_most_once;
  e.bind = {"n1", "tag:eu"};
  e.prefer_origin = true;
  e.origin = "n1";
  e.created_utc_ms = kNow;
  e.accept_timeout_ms = 5'000;
  e.complete_time_ms = 3'600'000;
  e.misfire_window_ms = 0;
  e.misfire = MisfirePolicy::skip;
  e.payload = std::string("binary\0\xff\xfe payload", 17);
  return e;
}

Entry timer_entry(TimerKind kind) {
  Entry e;
  e.entity = "acct-7";
  e.name = "t1";
  Timer t;
  t.kind = kind;
  t.at_utc_ms = kNow + 5'000;
  t.after_ms = kind == TimerKind::after ? 90'000 : 0;
  t.interval_ms = kind == TimerKind::interval ? 20'000 : 0;
  t.repeat_for_ms = kind == TimerKind::interval ? 120'000 : 0;
  if (kind != TimerKind::at) t.at_utc_ms = 0;
  e.timing = t;
  e.jitter_ms = kind == TimerKind::interval ? 1'000 : 0;
  e.handler = "callback";
  e.created_utc_ms = kNow;
  e.origin = "n2";
  e.payload = "{\"call\": \"abc\"}";
  return e;
}

}  // namespace

TEST_CASE("binary encoding round trips cron and timer entries", "[entry][codec]") {
  for (const Entry& e : {cron_entry(), timer_entry(TimerKind::at), timer_entry(TimerKind::after),
                         timer_entry(TimerKind::interval)}) {
    REQUIRE(validate(e).ok());
    const std::string bytes = encode_entry(e);
    auto back = decode_entry(bytes);
    REQUIRE(back.ok());
    CHECK(*back == e);
    CHECK(encode_entry(*back) == bytes);
  }
  // The cron expression is recompiled on decode: the decoded entry computes occurrences.
  auto back = decode_entry(encode_entry(cron_entry())).value();
  CHECK(next_occurrence(back, kNow) == next_occurrence(cron_entry(), kNow));
  // Compact: the fixed part beyond keys, strings and payload is small.
  const Entry e = timer_entry(TimerKind::interval);
  const size_t strings = e.entity.size() + e.name.size() + e.handler.size() + e.origin.size() + e.payload.size();
  CHECK(encode_entry(e).size() - strings < 48);
}

TEST_CASE("binary decoding rejects every truncation, trailing bytes and bad versions", "[entry][codec]") {
  const std::string bytes = encode_entry(cron_entry());
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    auto d = decode_entry(std::string_view(bytes).substr(0, n));
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.rfind("entry encoding: ", 0) == 0);
  }
  CHECK(decode_entry(bytes + "x").error().message ==
        "entry encoding: entry: unexpected bytes after the payload");
  std::string v3 = bytes;
  v3[2] = 3;
  CHECK(decode_entry(v3).error().message ==
        "entry encoding: unsupported version 3 (this node reads version 2 and older)");
  CHECK(decode_entry("hello").error().message == "entry encoding: not an entry (bad magic)");
  // The entity length (7) written as a two-byte varint decodes to the same entry, but it
  // is not the one encoding of it.
  std::string padded = bytes;
  REQUIRE(padded[3] == 7);
  padded.replace(3, 1, "\x87\x00", 2);
  CHECK(decode_entry(padded).error().message == "entry encoding: not in canonical form");
  CHECK(decode_entry("").error().field == "encoding");
}

TEST_CASE("binary decoding accepts only the one encoding: every byte padded as a varint", "[entry][codec]") {
  // Each byte below 0x80 written as two (b | 0x80, 0x00): where it ends a varint this is
  // a redundant form of the same value, elsewhere it breaks the structure.  Whatever
  // still decodes must be the encoding of what it decodes to.
  for (const Entry& e : {cron_entry(), timer_entry(TimerKind::at), timer_entry(TimerKind::interval)}) {
    const std::string bytes = encode_entry(e);
    int not_canonical = 0;
    for (size_t i = 3; i < bytes.size(); ++i) {
      const auto b = static_cast<uint8_t>(bytes[i]);
      if (b >= 0x80) continue;
      std::string padded = bytes;
      const char two[2] = {static_cast<char>(b | 0x80), '\0'};
      padded.replace(i, 1, two, 2);
      INFO("byte " << i);
      auto d = decode_entry(padded);
      if (d.ok()) {
        CHECK(encode_entry(*d) == padded);
      } else if (d.error().message == "entry encoding: not in canonical form") {
        ++not_canonical;
      }
    }
    // At least the ones known to be varints: lengths of entity, name, handler, origin,
    // payload, the bind count and the svarints of every entry.
    CHECK(not_canonical >= 9);
  }
}

TEST_CASE("binary decoding survives random corruption", "[entry][codec]") {
  const uint64_t seed = seed_or(31337);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  const std::string good[] = {encode_entry(cron_entry()), encode_entry(timer_entry(TimerKind::interval))};
  int rejected = 0;
  for (int r = 0; r < 3000; ++r) {
    std::string b = good[rng.below(2)];
    const int flips = static_cast<int>(rng.between(1, 4));
    for (int i = 0; i < flips; ++i) b[rng.below(b.size())] = static_cast<char>(rng.below(256));
    auto d = decode_entry(b);
    if (!d.ok()) {
      ++rejected;
      CHECK_FALSE(d.error().message.empty());
      continue;
    }
    // Whatever decodes is a valid entry that re-encodes to the same bytes.
    CHECK(validate(*d).ok());
    CHECK(encode_entry(*d) == b);
  }
  CHECK(rejected > 1000);
  // Pure garbage.
  for (int r = 0; r < 2000; ++r) {
    std::string b(rng.below(64), '\0');
    for (auto& c : b) c = static_cast<char>(rng.below(256));
    if (rng.chance(0.5) && b.size() >= 3) b.replace(0, 3, "CE\x01");
    CHECK_FALSE(decode_entry(b).ok());
  }
}

TEST_CASE("JSON round trips through entry_to_json and entry_from_json", "[entry][json]") {
  for (const Entry& e : {cron_entry(), timer_entry(TimerKind::at), timer_entry(TimerKind::after),
                         timer_entry(TimerKind::interval)}) {
    const json j = entry_to_json(e);
    // Through text too, as the HTTP API does.
    const json reparsed = json::parse(j.dump());
    auto back = entry_from_json(reparsed, e.entity, e.name, e.created_utc_ms, e.origin);
    INFO(j.dump());
    REQUIRE(back.ok());
    CHECK(*back == e);
  }
  const json j = entry_to_json(cron_entry());
  CHECK(j["key"] == "billing/caesium/schedule/nightly-report");
  CHECK(j["cron"] == "30 2 * * MON-FRI");
  CHECK(j["tz"] == "Europe/London");
  CHECK(j["jitter"] == "30s");
  CHECK(j["semantics"] == "at_most_once");
  CHECK(j["created"] == "2026-01-01T00:00:00.123Z");
  CHECK(j["payload_base64"] == base64_encode(cron_entry().payload));
  CHECK_FALSE(j.contains("payload"));
  const json t = entry_to_json(timer_entry(TimerKind::interval));
  CHECK(t["timer"] == json::parse(R"({"interval": "20s", "repeat_for": "2m", "jitter": "1s"})"));
  CHECK(t["payload"] == "{\"call\": \"abc\"}");
}

TEST_CASE("JSON defaults follow the documentation", "[entry][json]") {
  auto e = entry_from_json(json::parse(R"({"cron": "@hourly", "handler": "h"})"), "ent", "n", kNow, "n9");
  REQUIRE(e.ok());
  CHECK(std::get<CronTiming>(e->timing).tz == "UTC");
  CHECK(e->semantics == Semantics::at_least_once);
  CHECK(e->accept_timeout_ms == 10'000);
  CHECK(e->complete_time_ms == 0);
  CHECK(e->misfire_window_ms == 600'000);
  CHECK(e->misfire == MisfirePolicy::fire_once);
  CHECK(e->bind.empty());
  CHECK(e->origin == "n9");
  CHECK(e->created_utc_ms == kNow);
  // Chronos: an interval without repeat_for pops once.
  auto t = entry_from_json(json::parse(R"({"timer": {"interval": "30s"}, "handler": "h"})"), "ent", "n", kNow, "");
  REQUIRE(t.ok());
  CHECK(std::get<Timer>(t->timing).repeat_for_ms == 30'000);
  CHECK(next_occurrence(*t, kNow) == kNow + 30'000);
  CHECK_FALSE(next_occurrence(*t, kNow + 30'000).has_value());
  // Read-only fields from a GET body are accepted back.
  auto again = entry_from_json(entry_to_json(*t), "ent", "n", kNow + 5, "n3");
  REQUIRE(again.ok());
  CHECK(again->created_utc_ms == kNow + 5);
  CHECK(again->origin == "n3");
}

TEST_CASE("JSON errors name the field", "[entry][json]") {
  struct Case {
    const char* body;
    const char* field;
    const char* message;  // exact, or nullptr to check only the field
  };
  const Case cases[] = {
      {R"({"cron": "@daily", "handler": "h", "colour": "red"})", "colour", nullptr},
      {R"({"handler": "h"})", "cron", "cron: missing; give \"cron\" (with optional \"tz\") or \"timer\""},
      {R"({"cron": "@daily", "timer": {"after": "1s"}, "handler": "h"})", "timer",
       "timer: give \"cron\" or \"timer\", not both"},
      {R"({"cron": "@daily"})", "handler", "handler: missing; name the handler that runs this entry"},
      {R"({"cron": "0 9 * * FRX", "handler": "h"})", "cron",
       "cron: day-of-week at column 9: 'FRX' is not a day name (expected SUN-SAT or 0-7)"},
      {R"({"cron": "@daily", "tz": "Mars/Base", "handler": "h"})", "tz", nullptr},
      {R"({"cron": 5, "handler": "h"})", "cron", "cron: expected a string, got number"},
      {R"({"cron": "@daily", "handler": "h", "accept_timeout": 10})", "accept_timeout",
       "accept_timeout: expected a duration string such as \"30s\" or \"1h30m\""},
      {R"({"cron": "@daily", "handler": "h", "accept_timeout": "0s"})", "accept_timeout",
       "accept_timeout: must be greater than 0"},
      {R"({"cron": "@daily", "handler": "h", "misfire_window": "10 minutes"})", "misfire_window", nullptr},
      {R"({"cron": "@daily", "handler": "h", "semantics": "exactly_once"})", "semantics",
       "semantics: expected at_least_once or at_most_once"},
      {R"({"cron": "@daily", "handler": "h", "misfire": "all"})", "misfire",
       "misfire: expected skip or fire_once or fire_all"},
      {R"({"cron": "@daily", "handler": "h", "bind": "n1"})", "bind", nullptr},
      {R"({"cron": "@daily", "handler": "h", "bind": ["n1", 2]})", "bind[1]", nullptr},
      {R"({"cron": "@daily", "handler": "h", "prefer_origin": "yes"})", "prefer_origin", nullptr},
      {R"({"cron": "@daily", "handler": "h", "payload": "a", "payload_base64": "YQ=="})", "payload_base64", nullptr},
      {R"({"cron": "@daily", "handler": "h", "payload_base64": "a!=="})", "payload_base64",
       "payload_base64: invalid base64 character at position 2"},
      {R"({"cron": "@daily", "handler": "h", "entity": "other"})", "entity",
       "entity: is \"other\" but the request is for \"ent\""},
      {R"({"timer": {"after": "1s"}, "handler": "h", "tz": "UTC"})", "tz", nullptr},
      {R"({"timer": {"after": "1s"}, "handler": "h", "jitter": "1s"})", "jitter", nullptr},
      {R"({"timer": {}, "handler": "h"})", "timer", "timer: expected one of \"at\", \"after\" or \"interval\""},
      {R"({"timer": [], "handler": "h"})", "timer", nullptr},
      {R"({"timer": {"at": "2026-01-01T00:00:00Z", "after": "1s"}, "handler": "h"})", "timer.at", nullptr},
      {R"({"timer": {"at": "tomorrow"}, "handler": "h"})", "timer.at", nullptr},
      {R"({"timer": {"after": "1s", "count": 3}, "handler": "h"})", "timer.count",
       "timer.count: only applies to an \"interval\" timer"},
      {R"({"timer": {"interval": "1s", "count": 0}, "handler": "h"})", "timer.count", nullptr},
      {R"({"timer": {"interval": "1s", "count": -2}, "handler": "h"})", "timer.count", nullptr},
      {R"({"timer": {"interval": "10s", "count": 2, "repeat_for": "20s"}, "handler": "h"})", "timer.count", nullptr},
      {R"({"timer": {"interval": "10s", "repeat_for": "5s"}, "handler": "h"})", "timer.repeat_for",
       "timer.repeat_for: is shorter than interval, so the timer would never pop"},
      {R"({"timer": {"interval": "0s", "repeat_for": "5s"}, "handler": "h"})", "timer.interval", nullptr},
      {R"({"timer": {"interval": "10s", "every": "5s"}, "handler": "h"})", "timer.every", nullptr},
      {R"({"timer": {"interval": "10s", "jitter": "10s"}, "handler": "h"})", "timer.jitter", nullptr},
      {R"([1, 2])", "entry", "entry: expected a JSON object, got array"},
      {R"({"": 1, "cron": "@daily", "handler": "h"})", "\"\"", nullptr},
  };
  for (const auto& c : cases) {
    INFO("body " << c.body);
    auto e = entry_from_json(json::parse(c.body), "ent", "n", kNow, "n1");
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().field == c.field);
    if (c.message != nullptr) CHECK(e.error().message == c.message);
  }
}

TEST_CASE("UTF-8 check", "[entry][json]") {
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xc3"));          // truncated
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));  // surrogate
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xff"));
}
