#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/base64.h"
#include "base/flat_hash_map.h"
#include "base/hash.h"
#include "base/slot_index.h"
#include "base/sorted_blocks.h"
#include "base/rng.h"
#include "base/time.h"
#include "tests/unit/test_seed.h"

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
  CHECK(r.shortest_varints());  // what ByteWriter writes, UINT64_MAX's ten bytes included
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
  // Redundant forms read the same value but are flagged: 0 as two bytes, 1 as three,
  // and a string length padded the same way.
  const std::string zero2("\x80\x00", 2), one3("\x81\x80\x00", 3), padded_str("\x82\x00" "ab", 4);
  [&] { ByteReader t(zero2); CHECK(t.varint() == 0); CHECK(t.done()); CHECK_FALSE(t.shortest_varints()); }();
  [&] { ByteReader t(one3); CHECK(t.varint() == 1); CHECK(t.done()); CHECK_FALSE(t.shortest_varints()); }();
  [&] { ByteReader t(padded_str); CHECK(t.str() == "ab"); CHECK(t.done()); CHECK_FALSE(t.shortest_varints()); }();
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

// Every key hashes to one of the table's last 13 home slots, so runs are long and wrap
// around the end of the table: the case backward-shift deletion can get wrong.
struct WrappingHash {
  uint64_t operator()(std::string_view s) const { return ~uint64_t{0} - 12 + caesium::hash64(s) % 13; }
};

TEST_CASE("FlatHashMap: erase_if in place matches a reference map, with runs that wrap", "[base]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    caesium::Rng rng(seed);
    caesium::FlatHashMap<std::string, uint64_t, WrappingHash, caesium::StringViewEq> m;
    std::map<std::string, uint64_t> ref;
    for (int round = 0; round < 8; ++round) {
      for (uint64_t i = rng.below(200); i > 0; --i) {
        const std::string key = "k" + std::to_string(rng.below(400));
        const uint64_t v = rng.next_u64();
        m.get_or_insert(key) = v;
        ref[key] = v;
      }
      const uint64_t modulus = 2 + rng.below(4);
      m.erase_if([&](const std::string&, uint64_t v) { return v % modulus == 0; });
      std::erase_if(ref, [&](const auto& kv) { return kv.second % modulus == 0; });
      REQUIRE(m.size() == ref.size());
      for (uint64_t k = 0; k < 400; ++k) {
        const std::string key = "k" + std::to_string(k);
        const uint64_t* v = m.find(std::string_view(key));
        const auto it = ref.find(key);
        REQUIRE((v != nullptr) == (it != ref.end()));
        if (v != nullptr) CHECK(*v == it->second);
      }
    }
  }
}

// SlotIndex against a reference map, with random inserts and erases.  `weak` hashes map
// keys onto 13 values, so runs are long, tags collide, runs wrap around the table end and
// backward-shift deletion is exercised on every kind of run; `strong` is the real hash.
// Like the scheduler, the caller keeps each id's tag and checks it before the key.
TEST_CASE("SlotIndex: finds, erases and grows like a map, also when every hash collides", "[base]") {
  const uint64_t seed = test::seed_or(20261122);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  for (const bool weak : {true, false}) {
    INFO((weak ? "13 distinct hashes" : "xxh3 hashes"));
    Rng rng(seed);
    auto tag_of_key = [&](uint64_t key) { return SlotIndex::tag(weak ? key % 13 : hash64(std::to_string(key))); };
    std::vector<uint64_t> key_of;  // id -> key (UINT64_MAX: free)
    std::vector<uint32_t> tags;    // id -> tag
    std::map<uint64_t, uint32_t> ref;  // key -> id
    SlotIndex index;
    size_t peak = 0;
    auto tag_of = [&](uint32_t id) { return tags.at(id); };
    auto lookup = [&](uint64_t key) {
      const uint32_t t = tag_of_key(key);
      return index.find(t, [&](uint32_t id) { return tags.at(id) == t && key_of.at(id) == key; });
    };
    const int ops = weak ? 3000 : 20000;
    for (int op = 0; op < ops; ++op) {
      const uint64_t key = rng.below(weak ? 400 : 5000);
      auto found = lookup(key);
      auto it = ref.find(key);
      REQUIRE(found.has_value() == (it != ref.end()));
      if (found) REQUIRE(*found == it->second);
      if (!found) {
        const uint32_t id = static_cast<uint32_t>(key_of.size());
        key_of.push_back(key);
        tags.push_back(tag_of_key(key));
        index.insert(tags.back(), id, tag_of);
        ref[key] = id;
      } else if (rng.below(2) == 0) {
        REQUIRE(index.erase(tags[*found], *found, tag_of));
        REQUIRE_FALSE(index.erase(tags[*found], *found, tag_of));  // gone: a second erase finds nothing
        key_of[*found] = UINT64_MAX;
        ref.erase(it);
      }
      REQUIRE(index.size() == ref.size());
      peak = std::max(peak, ref.size());
    }
    for (const auto& [key, id] : ref) CHECK(lookup(key) == std::optional<uint32_t>(id));
    std::vector<uint32_t> seen;
    index.for_each([&](uint32_t id) { seen.push_back(id); });
    std::sort(seen.begin(), seen.end());
    std::vector<uint32_t> want;
    for (const auto& [key, id] : ref) want.push_back(id);
    std::sort(want.begin(), want.end());
    CHECK(seen == want);
    // At most 3/4 full before doubling: never more than 8/3 cells per id at the peak.
    CHECK(index.memory_bytes() <= sizeof(uint32_t) * std::max<size_t>(8, 3 * peak));
  }
}

// SortedBlocks against std::set: ascending and descending runs (the split-at-the-end rule
// and front inserts), random inserts and erases (splits and merges), bounds for keys
// present and absent, and full iteration after every phase.
TEST_CASE("SortedBlocks: orders, bounds and erases like std::set through splits and merges", "[base]") {
  const uint64_t seed = test::seed_or(20261122);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  SortedBlocks<uint32_t, std::less<>> blocks;
  std::set<uint32_t> ref;
  auto same = [&] {
    REQUIRE(blocks.check());
    REQUIRE(blocks.size() == ref.size());
    REQUIRE(std::equal(blocks.begin(), blocks.end(), ref.begin(), ref.end()));
    for (int q = 0; q < 200; ++q) {
      const uint32_t k = static_cast<uint32_t>(rng.below(2'000'002));
      auto lb = blocks.lower_bound(k);
      auto rl = ref.lower_bound(k);
      REQUIRE((lb == blocks.end()) == (rl == ref.end()));
      if (rl != ref.end()) REQUIRE(*lb == *rl);
      auto ub = blocks.upper_bound(k);
      auto ru = ref.upper_bound(k);
      REQUIRE((ub == blocks.end()) == (ru == ref.end()));
      if (ru != ref.end()) REQUIRE(*ub == *ru);
    }
    for (uint32_t k : {0u, 1u, 2'000'001u}) {  // the ends
      REQUIRE((blocks.lower_bound(k) == blocks.end()) == (ref.lower_bound(k) == ref.end()));
    }
  };
  auto add = [&](uint32_t k) {
    if (ref.insert(k).second) blocks.insert(k);
  };
  for (uint32_t k = 1000; k < 3000; k += 2) add(k);  // ascending: blocks fill completely
  same();
  CHECK(blocks.block_count() == (1000 + SortedBlocks<uint32_t, std::less<>>::kBlock - 1) / SortedBlocks<uint32_t, std::less<>>::kBlock);
  for (uint32_t k = 999; k > 1; k -= 2) add(k);  // descending: front inserts and splits
  same();
  for (uint32_t k = 1001; k < 3000; k += 2) add(k);  // into the middle of full blocks
  same();
  for (int op = 0; op < 30000; ++op) {
    const uint32_t k = static_cast<uint32_t>(rng.below(2'000'000)) + 1;
    if (rng.below(3) == 0) add(k);
    auto it = ref.lower_bound(static_cast<uint32_t>(rng.below(2'000'000)));
    if (it != ref.end() && rng.below(2) == 0) {
      const uint32_t victim = *it;
      ref.erase(it);
      REQUIRE(blocks.erase(victim));
      REQUIRE_FALSE(blocks.erase(victim));
    }
    if (op % 5000 == 0) same();
  }
  same();
  while (!ref.empty()) {  // erase everything, in random order: merges down to nothing
    auto it = ref.lower_bound(static_cast<uint32_t>(rng.below(2'000'001)));
    if (it == ref.end()) it = ref.begin();
    REQUIRE(blocks.erase(*it));
    ref.erase(it);
    if (ref.size() % 500 == 0) same();
  }
  CHECK(blocks.block_count() == 0);
  CHECK(blocks.begin() == blocks.end());
  CHECK_FALSE(blocks.replace(5, 5));
}

// replace() swaps an item for an equal one in place: here pointers to strings, ordered
// by the strings, as the volume store uses it (a new version of a key is a new block).
TEST_CASE("SortedBlocks: replace puts an equal item in the old one's place", "[base]") {
  struct ByText {
    bool operator()(const std::string* a, const std::string* b) const { return *a < *b; }
    bool operator()(const std::string* a, std::string_view b) const { return *a < b; }
    bool operator()(std::string_view a, const std::string* b) const { return a < *b; }
  };
  std::vector<std::string> first, second;
  for (int i = 0; i < 1000; ++i) first.push_back("k" + std::to_string(i));
  second = first;
  SortedBlocks<const std::string*, ByText> blocks;
  for (const auto& s : first) blocks.insert(&s);
  for (size_t i = 0; i < second.size(); i += 3) REQUIRE(blocks.replace(&first[i], &second[i]));
  const std::string absent = "zz";
  CHECK_FALSE(blocks.replace(&absent, &absent));
  REQUIRE(blocks.check());
  CHECK(blocks.size() == 1000);
  for (size_t i = 0; i < first.size(); ++i) {
    auto it = blocks.lower_bound(std::string_view(first[i]));
    REQUIRE(it != blocks.end());
    CHECK(*it == (i % 3 == 0 ? &second[i] : &first[i]));  // the new pointer where replaced
  }
}

TEST_CASE("base64: RFC 4648 vectors, strict decoding with the position of the fault", "[base][base64]") {
  // RFC 4648 §10 test vectors.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},     {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded).value() == plain);
  }
  CHECK(base64_encode(std::string("\x00\xff\xfe", 3)) == "AP/+");
  const std::pair<const char*, const char*> bad[] = {
      {"Zg=", "base64 length must be a multiple of 4"},
      {"Z===", "invalid base64 padding at position 2"},
      {"Zh==", "invalid base64 padding at position 3"},  // bits left over
      {"Zg==Zg==", "invalid base64 character at position 5"},
      {"Zm9v!AAA", "invalid base64 character at position 5"},
      {"a!==", "invalid base64 character at position 2"},
      {"Zm 9", "invalid base64 character at position 3"},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    auto r = base64_decode(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == message);
  }
}
