// The retry policy an entry carries (docs/entries.md, Controls, Retries): its validation,
// its binary form (controls flag 32, written only when it is not the default), its JSON
// form, and the back-off it asks for (retry_backoff_ms).
#include <catch2/catch.hpp>

#include <string>

#include "schedule/entry_codec.h"
#include "schedule/entry_json.h"
#include "tests/unit/entry_fixture.h"

using namespace caesium::schedule;
using nlohmann::json;
using caesium::test::every_minute;
using caesium::test::kNow;

namespace {

constexpr int64_t kDay = 24 * 60 * 60 * 1000;

Entry with_retry(RetryPolicy r) {
  Entry e = every_minute();
  e.retry = r;
  return e;
}

// The field a validation error names, or "(valid)".
std::string invalid_field(const RetryPolicy& r) {
  const caesium::Status s = validate(with_retry(r));
  return s.ok() ? "(valid)" : s.error().field;
}

// Version 1 bytes of the plain entry turned into version 2 with a controls block of
// flag 32 (retry), timeout 0 and `policy`: hand-made, possibly hostile, retry bytes.
std::string hand_made(const std::string& policy) {
  std::string bytes = encode_entry(every_minute());
  bytes[2] = 2;
  return bytes + std::string("\x20\x00", 2) + policy;
}

const json kCron = {{"cron", "* * * * *"}, {"handler", "noop"}};

caesium::Result<Entry> parse(const json& retry) {
  json j = kCron;
  j["retry"] = retry;
  return entry_from_json(j, "ops", "tick", kNow, "n1");
}

}  // namespace

TEST_CASE("retry: validate's ranges, each error naming its field", "[entry][retry]") {
  CHECK(invalid_field(RetryPolicy{}) == "(valid)");
  CHECK(invalid_field({100, 0, 0, 1000}) == "(valid)");  // the edges: 100 runs, no wait, full jitter
  CHECK(invalid_field({3, kDay, kDay, 0}) == "(valid)");
  CHECK(invalid_field({0, 1000, 60000, 0}) == "retry.attempts");
  CHECK(invalid_field({101, 1000, 60000, 0}) == "retry.attempts");
  CHECK(invalid_field({3, -1, 60000, 0}) == "retry.backoff");
  CHECK(invalid_field({3, kDay + 1, kDay + 1, 0}) == "retry.backoff");
  CHECK(invalid_field({3, 2000, 1000, 0}) == "retry.max_backoff");
  CHECK(invalid_field({3, 1000, kDay + 1, 0}) == "retry.max_backoff");
  CHECK(invalid_field({3, 1000, 60000, 1001}) == "retry.jitter");
  CHECK(validate(with_retry({3, -1, 60000, 0})).error().message == "retry.backoff: must not be negative");
  CHECK(validate(with_retry({3, 2000, 1000, 0})).error().message ==
        "retry.max_backoff: is shorter than retry.backoff (2s)");
}

TEST_CASE("retry codec: the default policy keeps the old bytes, any other is flag 32 and four values",
          "[entry][retry][codec]") {
  const Entry plain = every_minute();
  const Entry defaulted = with_retry(RetryPolicy{});
  CHECK(encode_entry(defaulted) == encode_entry(plain));  // byte-identical: version 1, no controls
  CHECK(encode_entry(defaulted)[2] == 1);

  const Entry e = with_retry({3, 2'000, 60'000, 200});
  REQUIRE(validate(e).ok());
  const std::string bytes = encode_entry(e);
  CHECK(bytes[2] == 2);
  // flags 32, timeout 0, attempts 3, backoff 2000 and max_backoff 60000 (zigzag), jitter 200.
  const std::string tail("\x20\x00\x03\xa0\x1f\xc0\xa9\x07\xc8\x01", 10);
  CHECK(bytes.substr(0, bytes.size() - tail.size()) == encode_entry(plain).replace(2, 1, "\x02"));
  CHECK(bytes.substr(bytes.size() - tail.size()) == tail);
  auto back = decode_entry(bytes);
  REQUIRE(back.ok());
  CHECK(*back == e);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_entry(std::string_view(bytes).substr(0, n)).ok());

  // Not the default although one run: still written.  And among the other controls the
  // policy sits after overlap's byte and before the triggers.
  const Entry one_run = with_retry({1, 5'000, 60'000, 0});
  auto one_back = decode_entry(encode_entry(one_run));
  REQUIRE(one_back.ok());
  CHECK(*one_back == one_run);
  Entry all = with_retry({100, 0, kDay, 1000});
  all.paused = true;
  all.timeout_ms = 30'000;
  all.overlap = OverlapPolicy::forbid;
  all.triggers.push_back(Trigger{"k0123456789abcdef", kNow + 5});
  REQUIRE(validate(all).ok());
  auto all_back = decode_entry(encode_entry(all));
  REQUIRE(all_back.ok());
  CHECK(*all_back == all);
}

TEST_CASE("retry codec: hostile policies are errors naming the field, never a crash", "[entry][retry][codec]") {
  REQUIRE(decode_entry(hand_made(std::string("\x03\xa0\x1f\xc0\xa9\x07\xc8\x01", 8))).ok());  // the good one
  struct Case {
    std::string policy;
    const char* field;
  };
  const Case cases[] = {
      {std::string("\x00\x02\x04\x00", 4), "retry.attempts"},                      // attempts 0
      {std::string("\x65\x02\x04\x00", 4), "retry.attempts"},                      // attempts 101
      {std::string("\x83\x80\x80\x80\x10\x02\x04\x00", 8), "retry.attempts"},      // 2^32 + 3, not cut to 3
      {std::string("\x03\xcf\x0f\xc0\xa9\x07\x00", 7), "retry.backoff"},           // backoff -1000
      {std::string("\x03\x80\xe0\xe5\xa4\x01\x80\xe0\xe5\xa4\x01\x00", 12), "retry.backoff"},  // 2 days
      {std::string("\x03\xa0\x1f\xd0\x0f\x00", 6), "retry.max_backoff"},           // max 1000 < backoff 2000
      {std::string("\x03\x02\x04\xe9\x07", 5), "retry.jitter"},                    // jitter 1001
      {std::string("\x03\x02\x04\xff\xff\xff\xff\x0f", 8), "retry.jitter"},        // 2^32 - 1
      {std::string("\x01\xd0\x0f\xc0\xa9\x07\x00", 7), "retry"},                   // the default, flagged
      {std::string("\x03\x02\x04", 3), "retry.jitter"},                            // truncated
      {std::string("\x03\x02\x04\x00\x00", 5), "entry"},                           // trailing byte
  };
  for (const Case& c : cases) {
    auto d = decode_entry(hand_made(c.policy));
    INFO(c.field);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.rfind("entry encoding: ", 0) == 0);
    CHECK(d.error().message.find(std::string(c.field) + ": ") != std::string::npos);
  }

  // Every single-byte change of a retry entry decodes to an error or to an entry whose
  // encoding is exactly the changed bytes.
  const std::string bytes = encode_entry(with_retry({7, 250, 4'000, 500}));
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int delta : {1, 0x40, 0x80, 0xff}) {
      std::string changed = bytes;
      changed[i] = static_cast<char>(static_cast<uint8_t>(changed[i]) + delta);
      auto d = decode_entry(changed);
      if (d.ok()) CHECK(encode_entry(*d) == changed);
    }
  }
}

TEST_CASE("retry JSON: read, written back, defaults", "[entry][retry][json]") {
  auto e = parse({{"attempts", 3}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.2}});
  REQUIRE(e.ok());
  CHECK(e->retry == RetryPolicy{3, 1'000, 60'000, 200});
  const json out = entry_to_json(*e);
  CHECK(out["retry"] == json{{"attempts", 3}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.2}});
  CHECK(out["retry"].dump() == R"({"attempts":3,"backoff":"1s","jitter":0.2,"max_backoff":"1m"})");
  auto again = entry_from_json(out, "ops", "tick", kNow, "n1");  // a GET body PUT back
  REQUIRE(again.ok());
  CHECK(*again == *e);

  // Every sub-field is optional; an empty object is the default, as is no "retry" at all.
  auto some = parse({{"attempts", 5}, {"backoff", "250ms"}});
  REQUIRE(some.ok());
  CHECK(some->retry == RetryPolicy{5, 250, 60'000, 0});
  auto none = parse(json::object());
  REQUIRE(none.ok());
  CHECK(none->retry == RetryPolicy{});
  CHECK_FALSE(none->has_controls());
  auto absent = entry_from_json(kCron, "ops", "tick", kNow, "n1");
  REQUIRE(absent.ok());
  CHECK(entry_to_json(*absent)["retry"] ==
        json{{"attempts", 1}, {"backoff", "1s"}, {"max_backoff", "1m"}, {"jitter", 0.0}});
  // The jitter is kept as permille, rounded to the nearest; 0 and 1 may be integers.
  CHECK(parse({{"jitter", 0.2006}})->retry.jitter_permille == 201);
  CHECK(parse({{"jitter", 0.0004}})->retry.jitter_permille == 0);
  CHECK(parse({{"jitter", 1}})->retry.jitter_permille == 1000);
  CHECK(parse({{"jitter", 0}})->retry.jitter_permille == 0);
}

TEST_CASE("retry JSON: each bad value is an error naming the field", "[entry][retry][json]") {
  struct Case {
    json retry;
    const char* field;
    const char* says;  // a substring of the message
  };
  const Case cases[] = {
      {{{"backoff", "-1s"}}, "retry.backoff", "retry.backoff: must not be negative"},
      {{{"max_backoff", "-5m"}}, "retry.max_backoff", "retry.max_backoff: must not be negative"},
      {{{"backoff", "2m"}, {"max_backoff", "1m"}}, "retry.max_backoff", "is shorter than retry.backoff (2m)"},
      {{{"backoff", "2m"}}, "retry.max_backoff", "is shorter than retry.backoff"},  // the default max is 1m
      {{{"backoff", "2d"}, {"max_backoff", "2d"}}, "retry.backoff", "at most 1 day"},
      {{{"max_backoff", "25h"}}, "retry.max_backoff", "at most 1 day"},
      {{{"jitter", 1.5}}, "retry.jitter", "from 0 to 1"},
      {{{"jitter", -0.1}}, "retry.jitter", "from 0 to 1"},
      {{{"jitter", "0.2"}}, "retry.jitter", "from 0 to 1"},
      {{{"attempts", 0}}, "retry.attempts", "from 1 to 100"},
      {{{"attempts", 101}}, "retry.attempts", "from 1 to 100"},
      {{{"attempts", -3}}, "retry.attempts", "from 1 to 100"},
      {{{"attempts", 2.5}}, "retry.attempts", "whole number"},
      {{{"attempts", "3"}}, "retry.attempts", "whole number"},
      {{{"backoff", 5}}, "retry.backoff", "duration string"},
      {{{"backoff", "soon"}}, "retry.backoff", "retry.backoff: "},
      {{{"tries", 3}}, "retry.tries", "unknown field; expected attempts, backoff, max_backoff or jitter"},
      {json(3), "retry", "expected an object"},
      {json("3 times"), "retry", "expected an object"},
      {json(nullptr), "retry", "expected an object"},
  };
  for (const Case& c : cases) {
    auto e = parse(c.retry);
    INFO(c.retry.dump());
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().field == c.field);
    CHECK(e.error().message.rfind(std::string(c.field) + ": ", 0) == 0);
    CHECK(e.error().message.find(c.says) != std::string::npos);
  }
  // The top-level unknown-field message lists retry.
  json colour = kCron;
  colour["colour"] = "red";
  auto bad = entry_from_json(colour, "ops", "tick", kNow, "n1");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("overlap, retry, payload") != std::string::npos);
}

TEST_CASE("retry_backoff_ms: doubling, the cap, a deterministic jitter", "[entry][retry]") {
  const RetryPolicy plain{10, 1'000, 60'000, 0};
  CHECK(retry_backoff_ms(plain, 1, 7) == 1'000);
  CHECK(retry_backoff_ms(plain, 2, 7) == 2'000);
  CHECK(retry_backoff_ms(plain, 3, 7) == 4'000);
  CHECK(retry_backoff_ms(plain, 6, 7) == 32'000);
  CHECK(retry_backoff_ms(plain, 7, 7) == 60'000);   // 64 s, capped
  CHECK(retry_backoff_ms(plain, 99, 7) == 60'000);  // and stays there
  for (uint64_t seed : {0ull, 1ull, 0xdeadbeefull, ~0ull}) CHECK(retry_backoff_ms(plain, 3, seed) == 4'000);  // exact
  CHECK(retry_backoff_ms({3, 0, 0, 500}, 2, 7) == 0);  // no back-off: nothing to shorten
  CHECK(retry_backoff_ms({3, 1'500, 1'500, 0}, 5, 7) == 1'500);  // max = backoff: no doubling

  const RetryPolicy jittered{10, 1'000, 60'000, 250};
  bool varies = false;
  for (uint32_t failed = 1; failed <= 8; ++failed) {
    const int64_t wait = retry_backoff_ms(plain, failed, 0);
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const int64_t w = retry_backoff_ms(jittered, failed, seed * 0x9e3779b97f4a7c15ull);
      CHECK(w <= wait);
      CHECK(w >= wait - wait * 250 / 1000);
      CHECK(w == retry_backoff_ms(jittered, failed, seed * 0x9e3779b97f4a7c15ull));  // same seed, same wait
      varies |= w != wait;
    }
  }
  CHECK(varies);
  // Full jitter may shorten a wait to nothing, never below.
  const RetryPolicy full{3, 1'000, 1'000, 1000};
  for (uint64_t seed = 0; seed < 2'002; ++seed) {
    const int64_t w = retry_backoff_ms(full, 1, seed);
    CHECK(w >= 0);
    CHECK(w <= 1'000);
  }
  CHECK(retry_backoff_ms(full, 1, 1'000) == 0);  // seed % 1001 == 1000: the whole wait is cut
}
