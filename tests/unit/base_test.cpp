#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/flat_hash_map.h"
#include "base/rng.h"
#include "base/time.h"

using namespace caesium;

TEST_CASE("durations parse and format", "[base]") {
  CHECK(parse_duration_ms("250ms").value() == 250);
  CHECK(parse_duration_ms("10s").value() == 10'000);
  CHECK(parse_duration_ms("1h30m").value() == 90 * kMsPerMinute);
  CHECK(parse_duration_ms("1.5s").value() == 1500);
  CHECK(parse_duration_ms("7d").value() == 7 * kMsPerDay);
  CHECK(parse_duration_ms("0").value() == 0);
  CHECK_FALSE(parse_duration_ms("").ok());
  CHECK_FALSE(parse_duration_ms("10").ok());
  CHECK_FALSE(parse_duration_ms("10x").ok());
  CHECK_FALSE(parse_duration_ms("-5s").ok());
  CHECK_FALSE(parse_duration_ms("1..5s").ok());
  CHECK_FALSE(parse_duration_ms("99999999999999w").ok());
  CHECK(parse_duration_ms("10x").error().message.find("unknown unit") != std::string::npos);
  CHECK(format_duration_ms(90'000) == "1m30s");
  CHECK(format_duration_ms(1'250) == "1s250ms");
  CHECK(format_duration_ms(0) == "0s");
}

TEST_CASE("RFC 3339 round trips and rejects junk", "[base]") {
  const int64_t t = parse_rfc3339_ms("2026-03-29T03:00:00+01:00").value();
  CHECK(t == parse_rfc3339_ms("2026-03-29T02:00:00Z").value());
  CHECK(format_rfc3339_utc(t) == "2026-03-29T02:00:00Z");
  CHECK(format_rfc3339_offset(t, 3600) == "2026-03-29T03:00:00+01:00");
  CHECK(format_rfc3339_offset(t, -(3 * 3600 + 30 * 60)) == "2026-03-28T22:30:00-03:30");
  CHECK(format_rfc3339_utc(parse_rfc3339_ms("1969-12-31T23:59:59.5Z").value()) ==
        "1969-12-31T23:59:59.500Z");
  CHECK(parse_rfc3339_ms("1970-01-01T00:00:00Z").value() == 0);
  for (const char* junk : {"", "2026", "2026-02-30T00:00:00Z", "2026-01-01T25:00:00Z",
                           "2026-01-01T00:00:00", "2026-01-01T00:00:00Zjunk",
                           "2026-01-01T00:00:00+1:00", "x026-01-01T00:00:00Z"}) {
    INFO(junk);
    CHECK_FALSE(parse_rfc3339_ms(junk).ok());
  }
}

TEST_CASE("Rng is deterministic and in range", "[base]") {
  Rng a(42), b(42), c(43);
  std::vector<uint64_t> va, vb, vc;
  for (int i = 0; i < 100; ++i) {
    va.push_back(a.next_u64());
    vb.push_back(b.next_u64());
    vc.push_back(c.next_u64());
  }
  CHECK(va == vb);
  CHECK(va != vc);
  Rng r(7);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100'000; ++i) {
    const uint64_t x = r.below(10);
    REQUIRE(x < 10);
    ++counts[x];
  }
  for (int n : counts) CHECK((n > 9'000 && n < 11'000));
  for (int i = 0; i < 1000; ++i) {
    const int64_t x = r.between(-3, 3);
    REQUIRE((x >= -3 && x <= 3));
  }
  std::vector<int> v{1, 2, 3, 4, 5, 6, 7, 8};
  r.shuffle(v.begin(), v.end());
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8});
}

#include "base/bytes.h"

TEST_CASE("ByteWriter/ByteReader round-trip and refuse hostile input", "[base]") {
  ByteWriter w;
  w.u8(7);
  w.varint(0);
  w.varint(UINT64_MAX);
  w.svarint(-1);
  w.svarint(INT64_MIN);
  w.svarint(INT64_MAX);
  w.str("hello");
  w.str("");
  w.boolean(true);
  const std::string data = w.take();
  ByteReader r(data);
  CHECK(r.u8() == 7);
  CHECK(r.varint() == 0);
  CHECK(r.varint() == UINT64_MAX);
  CHECK(r.svarint() == -1);
  CHECK(r.svarint() == INT64_MIN);
  CHECK(r.svarint() == INT64_MAX);
  CHECK(r.str() == "hello");
  CHECK(r.str().empty());
  CHECK(r.boolean());
  CHECK(r.done());
  // Every truncation fails cleanly, and failure sticks.
  for (size_t n = 0; n < data.size(); ++n) {
    ByteReader t(std::string_view(data).substr(0, n));
    t.u8(); t.varint(); t.varint(); t.svarint(); t.svarint(); t.svarint(); t.str(); t.str(); t.boolean();
    CHECK_FALSE(t.done());
  }
  // A length prefix larger than the input, an over-long varint, a bad bool.
  // (The inputs must outlive the readers: a ByteReader holds a view.)
  const std::string too_long("\x05" "ab", 3), overlong(11, '\xff'), bad_bool("\x02", 1), over_max("\x03" "abc", 4);
  CHECK_FALSE([&] { ByteReader t(too_long); t.str(); return t.ok(); }());
  CHECK_FALSE([&] { ByteReader t(overlong); t.varint(); return t.ok(); }());
  CHECK_FALSE([&] { ByteReader t(bad_bool); t.boolean(); return t.ok(); }());
  CHECK_FALSE([&] { ByteReader t(over_max); t.str(2); return t.ok(); }());
}

TEST_CASE("FlatStringMap: inserts, finds by view, grows and sweeps without losing an entry", "[base]") {
  caesium::FlatStringMap<uint64_t> m;
  CHECK(m.find(std::string_view("absent")) == nullptr);
  for (uint64_t i = 0; i < 5000; ++i) m.get_or_insert("peer-" + std::to_string(i)) = i;  // many grows
  CHECK(m.size() == 5000);
  for (uint64_t i = 0; i < 5000; ++i) {
    const std::string key = "peer-" + std::to_string(i);
    const uint64_t* v = m.find(std::string_view(key));
    REQUIRE(v != nullptr);
    CHECK(*v == i);
  }
  ++m.get_or_insert(std::string_view("peer-7"));  // existing: no new entry
  CHECK(m.size() == 5000);
  CHECK(*m.find(std::string_view("peer-7")) == 8);
  m.erase_if([](const std::string&, uint64_t v) { return v % 3 == 0; });
  CHECK(m.size() == 5000 - 1667);
  for (uint64_t i = 0; i < 5000; ++i) {
    const std::string key = "peer-" + std::to_string(i);
    const bool kept = m.find(std::string_view(key)) != nullptr;
    CHECK(kept == (i % 3 != 0));  // peer-7 now holds 8: kept either way
  }
  CHECK(m.get_or_insert(std::string_view("new")) == 0);  // value-initialized
}
