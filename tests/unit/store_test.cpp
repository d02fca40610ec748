// VolumeStore: local writes, the LWW merge as a CRDT, digests, tombstones, observers,
// scans, the merge filter.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/rng.h"
#include "schedule/store.h"

using caesium::Rng;
using namespace caesium::schedule;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kDay = 24 * 3600 * 1000;

uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("CAESIUM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

// Everything the store holds, tombstones included, in key order.
std::vector<Record> contents(const VolumeStore& s) {
  std::vector<Record> out;
  s.scan("", "", SIZE_MAX, [&](const RecordView& v) { out.push_back(v.to_record()); }, true);
  return out;
}

// Random local writes on three replicas over a small key space, with clocks that jump
// back and forth; returns every record produced (what would be persisted and pushed).
std::vector<Record> random_history(Rng& rng, size_t ops) {
  std::vector<Record> out;
  VolumeStore a("v", "node-a"), b("v", "node-b"), c("v", "node-c");
  VolumeStore* rs[3] = {&a, &b, &c};
  int64_t now = kT0;
  for (size_t i = 0; i < ops; ++i) {
    now += rng.between(-3, 5);
    VolumeStore& r = *rs[rng.below(3)];
    const std::string key = "e" + std::to_string(rng.below(40)) + "/caesium/schedule/x";
    if (rng.chance(0.25)) {
      out.push_back(r.erase(key, now));
    } else {
      out.push_back(r.put(key, std::string(rng.below(20), static_cast<char>('a' + rng.below(26))), now));
    }
    // Sometimes a replica hears of another's write before writing itself.
    if (rng.chance(0.3)) (void)rs[rng.below(3)]->merge(out[rng.below(out.size())], now);
  }
  return out;
}

}  // namespace

TEST_CASE("put, get, erase and sizes", "[store]") {
  VolumeStore s("v", "n1");
  const Record r1 = s.put("k1", "one", kT0);
  CHECK(r1.key == "k1");
  CHECK(r1.value == std::optional<std::string>("one"));
  CHECK(r1.version.origin == "n1");
  CHECK(s.get("k1") == r1);
  (void)s.put("k2", "", kT0);
  CHECK(s.get("k2")->value == std::optional<std::string>(""));  // empty value is not a tombstone
  const Record t = s.erase("k1", kT0);
  CHECK_FALSE(t.value.has_value());
  CHECK(r1.version < t.version);
  CHECK(s.get("k1") == t);
  CHECK(s.live_size() == 1);
  CHECK(s.tombstone_count() == 1);
  CHECK_FALSE(s.get("nope").has_value());
  CHECK(s.check_invariants());
}

TEST_CASE("a local write overwrites even a record from a runaway clock", "[store]") {
  VolumeStore s("v", "n1");
  const Record future{"k", std::string("from the future"), Version{kT0 + 365 * kDay, 4, "rogue"}};
  CHECK(s.merge(future, kT0));
  CHECK(s.clock().clamped_observations() == 1);
  const Record mine = s.put("k", "now", kT0);
  CHECK(future.version < mine.version);
  CHECK(s.get("k")->value == std::optional<std::string>("now"));
  // Other keys are still stamped with the local clock, not the runaway one.
  CHECK(s.put("other", "x", kT0).version.physical_ms == kT0);
}

TEST_CASE("merge is commutative, associative and idempotent over random histories", "[store][crdt]") {
  const uint64_t base = seed_or(100);
  for (uint64_t seed = base; seed < base + 20; ++seed) {
    INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
    Rng rng(seed);
    const std::vector<Record> history = random_history(rng, 300);
    const int64_t now = kT0 + 1000;

    // Reference: everything merged in production order.
    VolumeStore ref("v", "r0");
    for (const Record& r : history) (void)ref.merge(r, now);
    REQUIRE(ref.check_invariants());

    // Commutative + idempotent: any order, with repeats.
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<Record> shuffled = history;
      for (size_t i = 0; i < history.size() / 3; ++i) shuffled.push_back(history[rng.below(history.size())]);
      rng.shuffle(shuffled.begin(), shuffled.end());
      VolumeStore s("v", "r1");
      for (const Record& r : shuffled) (void)s.merge(r, now);
      REQUIRE(s.root_digest() == ref.root_digest());
      REQUIRE(contents(s) == contents(ref));
    }

    // Associative: merge random groups separately, then merge the groups' states.
    VolumeStore g0("v", "g0"), g1("v", "g1"), g2("v", "g2"), g3("v", "g3");
    VolumeStore* groups[4] = {&g0, &g1, &g2, &g3};
    for (const Record& r : history) (void)groups[rng.below(4)]->merge(r, now);
    VolumeStore left("v", "l"), right("v", "r");
    for (const Record& r : contents(g0)) (void)left.merge(r, now);
    for (const Record& r : contents(g1)) (void)left.merge(r, now);   // (g0 + g1)
    for (const Record& r : contents(g2)) (void)right.merge(r, now);
    for (const Record& r : contents(g3)) (void)right.merge(r, now);  // (g2 + g3)
    VolumeStore all("v", "x");
    for (const Record& r : contents(right)) (void)all.merge(r, now);
    for (const Record& r : contents(left)) (void)all.merge(r, now);
    REQUIRE(all.root_digest() == ref.root_digest());
    REQUIRE(contents(all) == contents(ref));

    // Idempotent as a whole: merging the state into itself changes nothing.
    const uint64_t before = ref.root_digest();
    for (const Record& r : contents(ref)) REQUIRE_FALSE(ref.merge(r, now));
    REQUIRE(ref.root_digest() == before);
  }
}

TEST_CASE("digests are equal iff contents are equal", "[store][digest]") {
  const uint64_t base = seed_or(200);
  for (uint64_t seed = base; seed < base + 50; ++seed) {
    INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
    Rng rng(seed);
    const std::vector<Record> history = random_history(rng, 60);
    VolumeStore a("v", "a"), b("v", "b");
    for (const Record& r : history) {
      if (rng.chance(0.8)) (void)a.merge(r, kT0);
      if (rng.chance(0.8)) (void)b.merge(r, kT0);
    }
    REQUIRE((a.root_digest() == b.root_digest()) == (contents(a) == contents(b)));
  }
  // Adversarial: one key, records that differ in exactly one respect.
  const Version v{kT0, 1, "n1"};
  const std::vector<Record> variants{
      {"k", std::string("x"), v},
      {"k", std::string("x"), Version{kT0, 2, "n1"}},      // logical
      {"k", std::string("x"), Version{kT0 + 1, 1, "n1"}},  // physical
      {"k", std::string("x"), Version{kT0, 1, "n2"}},      // origin
      {"k", std::nullopt, v},                              // tombstone vs value, same version
      {"k", std::string(""), v},                           // empty value vs tombstone
      {"k", std::string("y"), v},                          // value, same version
      {"k2", std::string("x"), v},                         // key
  };
  std::vector<uint64_t> digests;
  for (const Record& r : variants) {
    VolumeStore s("v", "z");
    REQUIRE(s.merge(r, kT0));
    digests.push_back(s.root_digest());
  }
  std::sort(digests.begin(), digests.end());
  CHECK(std::adjacent_find(digests.begin(), digests.end()) == digests.end());
  VolumeStore empty("v", "z");
  CHECK(std::find(digests.begin(), digests.end(), empty.root_digest()) == digests.end());
}

TEST_CASE("records with the same version converge whatever the order (content breaks ties)", "[store][crdt]") {
  const Version v{kT0, 1, "n1"};
  const Record tomb{"k", std::nullopt, v}, x{"k", std::string("x"), v}, y{"k", std::string("y"), v};
  VolumeStore a("v", "a"), b("v", "b");
  for (const Record* r : {&tomb, &x, &y}) (void)a.merge(*r, kT0);
  for (const Record* r : {&y, &tomb, &x}) (void)b.merge(*r, kT0);
  CHECK(a.get("k") == y);
  CHECK(b.get("k") == y);
  CHECK(a.root_digest() == b.root_digest());
}

TEST_CASE("tombstones are purged after the grace and never come back", "[store][tombstone]") {
  VolumeStore s("v", "n1", VolumeStoreOptions{7 * kDay, 60'000});
  (void)s.put("k", "v", kT0);
  const Record tomb = s.erase("k", kT0 + 10);
  CHECK(s.purge_tombstones(kT0 + 10 + 7 * kDay) == 0);  // exactly the grace: kept
  CHECK(s.tombstone_count() == 1);
  CHECK(s.purge_tombstones(kT0 + 11 + 7 * kDay) == 1);
  CHECK(s.size() == 0);
  // A peer that has not purged yet sends it again: not stored.
  CHECK(s.merge_record(tomb, kT0 + 8 * kDay) == MergeOutcome::kExpired);
  CHECK(s.size() == 0);
  // But an expired tombstone still deletes an older record it finds.
  VolumeStore t("v", "n2");
  (void)t.merge(Record{"k", std::string("old"), Version{kT0, 0, "n1"}}, kT0 + 8 * kDay);
  CHECK(t.merge_record(tomb, kT0 + 8 * kDay) == MergeOutcome::kRemoved);
  CHECK(t.size() == 0);
  CHECK(t.tombstone_count() == 0);
  // ...and not a newer one.
  (void)t.merge(Record{"k", std::string("new"), Version{kT0 + 20, 0, "n3"}}, kT0 + 8 * kDay);
  CHECK(t.merge_record(tomb, kT0 + 8 * kDay) == MergeOutcome::kExpired);
  CHECK(t.get("k")->value == std::optional<std::string>("new"));
  // Purge goes oldest first and leaves young tombstones alone.
  VolumeStore u("v", "n1", VolumeStoreOptions{kDay, 60'000});
  for (int i = 0; i < 10; ++i) (void)u.erase("k" + std::to_string(i), kT0 + i * 1000);
  CHECK(u.purge_tombstones(kT0 + kDay + 4500) == 5);
  CHECK(u.tombstone_count() == 5);
  CHECK_FALSE(u.get("k4").has_value());
  CHECK(u.get("k5").has_value());
  CHECK(u.check_invariants());
}

TEST_CASE("observers see every change with the old and new record", "[store][observer]") {
  VolumeStore s("v", "n1", VolumeStoreOptions{kDay, 60'000});
  struct Event {
    std::string key;
    std::optional<Record> before, after;
  };
  std::vector<Event> events;
  s.set_observer([&](const Change& c) {
    Event e{std::string(c.key), std::nullopt, std::nullopt};
    if (c.old_record) e.before = c.old_record->to_record();
    if (c.new_record) e.after = c.new_record->to_record();
    events.push_back(std::move(e));
  });
  const Record r1 = s.put("a", "1", kT0);
  const Record r2 = s.put("a", "2", kT0);
  const Record t = s.erase("a", kT0);
  REQUIRE(events.size() == 3);
  CHECK((!events[0].before && events[0].after == r1));
  CHECK((events[1].before == r1 && events[1].after == r2));
  CHECK((events[2].before == r2 && events[2].after == t));
  CHECK_FALSE(s.merge(r1, kT0));  // stale: no event
  CHECK(events.size() == 3);
  const Record remote{"b", std::string("x"), Version{kT0, 0, "n2"}};
  CHECK(s.merge(remote, kT0));
  REQUIRE(events.size() == 4);
  CHECK((!events[3].before && events[3].after == remote));
  CHECK(s.remove_local("b"));
  CHECK_FALSE(s.remove_local("b"));
  REQUIRE(events.size() == 5);
  CHECK((events[4].before == remote && !events[4].after));
  CHECK(s.purge_tombstones(kT0 + 2 * kDay) == 1);
  REQUIRE(events.size() == 6);
  CHECK((events[5].key == "a" && events[5].before == t && !events[5].after));

  // A version that outgrows the record's block moves to a new one, and so does one that
  // would leave most of it unused; either way observers see the old record intact, and
  // the key may be a view into the record being replaced.  (Same-size versions, "1" then
  // "2" above, are rewritten in place.)
  const Record c1 = s.put("c", "small", kT0);
  const Record c2 = s.put(s.find("c")->key, std::string(500, 'L'), kT0);
  const Record c3 = s.put(s.find("c")->key, "tiny", kT0);
  REQUIRE(events.size() == 9);
  CHECK((events[7].before == c1 && events[7].after == c2));
  CHECK((events[8].before == c2 && events[8].after == c3));
  CHECK(c2.key == "c");
  CHECK(s.get("c") == c3);
  CHECK(s.check_invariants());
}

TEST_CASE("scan visits keys in order with prefix and paging", "[store][scan]") {
  const uint64_t seed = seed_or(300);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  VolumeStore s("v", "n1");
  std::map<std::string, bool> expected;  // key -> live
  for (int i = 0; i < 2000; ++i) {
    const std::string key = (rng.chance(0.5) ? "e1/caesium/schedule/" : "e2/occ/") + std::to_string(rng.below(5000));
    if (rng.chance(0.2)) {
      (void)s.erase(key, kT0);
      expected[key] = false;
    } else {
      (void)s.put(key, "v", kT0);
      expected[key] = true;
    }
  }
  for (bool with_tombstones : {false, true}) {
    std::vector<std::string> want;
    for (const auto& [k, live] : expected) {
      if (k.rfind("e1/", 0) == 0 && (live || with_tombstones)) want.push_back(k);
    }
    std::vector<std::string> got;
    std::string cursor;
    for (;;) {
      const size_t page_size = 1 + rng.below(50);
      const size_t n = s.scan("e1/", cursor, page_size, [&](const RecordView& v) {
        CHECK(v.tombstone() == !expected[std::string(v.key)]);
        got.emplace_back(v.key);
      }, with_tombstones);
      REQUIRE(n <= page_size);
      if (n == 0) break;
      cursor = got.back();
    }
    CHECK(got == want);
  }
  // A cursor before the prefix starts at the prefix; one past it yields nothing.
  size_t n = s.scan("e2/", "a", 3, [](const RecordView& v) { CHECK(v.key.substr(0, 3) == "e2/"); });
  CHECK(n == 3);
  CHECK(s.scan("e1/", "e1/\xff", 10, [](const RecordView&) {}) == 0);
}

TEST_CASE("the merge filter refuses records, local writes are not filtered", "[store][filter]") {
  VolumeStore s("v", "n1");
  s.set_merge_filter([](const Record& r) { return r.key.rfind("expired/", 0) != 0; });
  CHECK(s.merge_record(Record{"expired/1", std::string("x"), Version{kT0, 0, "n2"}}, kT0) == MergeOutcome::kRefused);
  CHECK_FALSE(s.get("expired/1").has_value());
  CHECK(s.merge(Record{"fine/1", std::string("x"), Version{kT0, 0, "n2"}}, kT0));
  (void)s.put("expired/2", "local", kT0);
  CHECK(s.get("expired/2").has_value());
}

TEST_CASE("indexes stay consistent through random operations", "[store][invariants]") {
  const uint64_t seed = seed_or(400);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  VolumeStore s("v", "n1", VolumeStoreOptions{kDay, 60'000});
  std::map<std::string, std::optional<std::string>> ref;  // key -> value (nullopt: tombstone)
  int64_t now = kT0;
  for (int i = 0; i < 20'000; ++i) {
    now += rng.between(0, 20'000);
    const std::string key = "k" + std::to_string(rng.below(3000));
    switch (rng.below(6)) {
      case 0: (void)s.erase(key, now); break;
      case 1: (void)s.remove_local(key); break;
      case 2: (void)s.purge_tombstones(now); break;
      case 3: (void)s.merge(Record{key, std::string("m"), Version{now - rng.between(0, 50'000), 0, "p"}}, now); break;
      default: (void)s.put(key, std::string(rng.below(40), 'v'), now); break;
    }
    if (i % 2000 == 0) REQUIRE(s.check_invariants());
  }
  REQUIRE(s.check_invariants());
  // Every key is found exactly when a scan (tombstones included) shows it, with its value.
  s.scan("", "", SIZE_MAX, [&](const RecordView& v) {
    ref[std::string(v.key)] = v.value ? std::optional<std::string>(*v.value) : std::nullopt;
  }, true);
  REQUIRE(ref.size() > 100);
  for (int k = 0; k < 3000; ++k) {
    const std::string key = "k" + std::to_string(k);
    const auto found = s.get(key);
    const auto it = ref.find(key);
    REQUIRE(found.has_value() == (it != ref.end()));
    if (found) REQUIRE(found->value == it->second);
  }
  // Emptying the store shrinks the digest back and leaves the empty digest.
  for (const auto& [k, v] : ref) REQUIRE(s.remove_local(k));
  CHECK(s.size() == 0);
  CHECK(s.get("k1") == std::nullopt);
  CHECK(s.digest().depth() == 0);
  CHECK(s.root_digest() == VolumeStore("v", "other").root_digest());
  CHECK(s.check_invariants());
}
