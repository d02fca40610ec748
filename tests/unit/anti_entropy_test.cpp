// Anti-entropy sessions between two in-memory stores: convergence for every kind of
// difference, cost bounds (1 RT / < 100 B for equal stores, <= 3 RTs and <= 16 KiB for 10
// differences), dropped sessions, concurrent writes, paging, and garbage from the peer.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "gossip/anti_entropy.h"

using caesium::Rng;
using namespace caesium::gossip;
using caesium::schedule::Record;
using caesium::schedule::RecordView;
using caesium::schedule::Version;
using caesium::schedule::VolumeStore;

namespace {

constexpr int64_t kNow = 1'700'000'000'000;

uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("CAESIUM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

std::string key_of(uint64_t i) { return "e" + std::to_string(i % 97) + "/caesium/schedule/" + std::to_string(i); }

Record record(uint64_t i, int64_t physical_ms, const std::string& origin, bool tombstone = false) {
  Record r{key_of(i), std::nullopt, Version{physical_ms, 0, origin}};
  if (!tombstone) r.value = "payload-" + std::to_string(i) + "-" + std::to_string(physical_ms);
  return r;
}

// n records on both stores, then d differences of every kind: missing on either side,
// newer on either side, deleted on either side, a tombstone the other never saw.
void fill(Rng& rng, VolumeStore& a, VolumeStore& b, uint64_t n, uint64_t d) {
  for (uint64_t i = 0; i < n; ++i) {
    const Record r = record(i, kNow - 1'000'000 + static_cast<int64_t>(rng.below(500'000)), "n" + std::to_string(rng.below(3)));
    (void)a.merge(r, kNow);
    (void)b.merge(r, kNow);
  }
  for (uint64_t k = 0; k < d; ++k) {
    const uint64_t existing = n == 0 ? 0 : (k * 7919 + rng.below(7)) % n;  // distinct enough
    const int64_t later = kNow - 1000 + static_cast<int64_t>(k);
    switch (n == 0 ? k % 2 : k % 7) {
      case 0: (void)a.merge(record(n + k, later, "n1"), kNow); break;
      case 1: (void)b.merge(record(n + k, later, "n2"), kNow); break;
      case 2: (void)a.merge(record(existing, later, "n1"), kNow); break;
      case 3: (void)b.merge(record(existing, later, "n2"), kNow); break;
      case 4: (void)a.merge(record(existing, later, "n1", true), kNow); break;
      case 5: (void)b.merge(record(existing, later, "n2", true), kNow); break;
      default: (void)a.merge(record(n + k, later, "n1", true), kNow); break;
    }
  }
}

struct Outcome {
  bool completed = false;   // both sides done, no error
  std::string error;
  uint32_t round_trips = 0;
  uint64_t bytes = 0;       // both directions
  uint32_t messages = 0;
};

// Passes messages between an initiator on `a` and a responder on `b`.  Stops (abandoning
// both sessions) after `drop_after` messages; calls `between` after each delivery.
Outcome run(VolumeStore& a, VolumeStore& b, uint64_t session_id, const SyncOptions& options = {},
            uint32_t drop_after = UINT32_MAX, const std::function<void()>& between = {}) {
  SyncSession init(SyncSession::Role::kInitiator, &a, session_id, options);
  SyncSession resp(SyncSession::Role::kResponder, &b, session_id, options);
  Outcome out;
  std::optional<SyncMessage> msg = init.start(kNow);
  bool to_responder = true;
  uint32_t sent = 1;
  while (msg) {
    if (sent > drop_after) return out;  // lost: both sides simply forget the session
    SyncSession& rx = to_responder ? resp : init;
    auto reply = rx.on_message(*msg, kNow);
    if (!reply.ok()) {
      out.error = reply.error().message;
      return out;
    }
    msg = std::move(*reply);
    to_responder = !to_responder;
    if (msg) ++sent;
    if (between) between();
  }
  out.completed = init.done() && resp.done() && !init.failed() && !resp.failed();
  out.round_trips = init.stats().round_trips();
  out.bytes = init.stats().bytes_sent + resp.stats().bytes_sent;
  out.messages = init.stats().messages_sent + resp.stats().messages_sent;
  CHECK(init.stats().round_trips() == resp.stats().round_trips());
  CHECK(init.stats().bytes_sent == resp.stats().bytes_received);
  return out;
}

std::vector<Record> contents(const VolumeStore& s) {
  std::vector<Record> out;
  s.scan("", "", SIZE_MAX, [&](const RecordView& v) { out.push_back(v.to_record()); }, true);
  return out;
}

void require_converged(const VolumeStore& a, const VolumeStore& b) {
  REQUIRE(a.root_digest() == b.root_digest());
  REQUIRE(contents(a) == contents(b));
  REQUIRE(a.check_invariants());
  REQUIRE(b.check_invariants());
}

}  // namespace

TEST_CASE("equal stores cost one round trip under 100 bytes", "[anti_entropy]") {
  const uint64_t seed = seed_or(1);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  for (uint64_t n : {0, 1, 1000, 20'000}) {
    INFO("n " << n);
    Rng rng(seed + n);
    VolumeStore a("default", "n1"), b("default", "n2");
    fill(rng, a, b, n, 0);
    const Outcome o = run(a, b, rng.next_u64());
    REQUIRE(o.completed);
    CHECK(o.round_trips == 1);
    CHECK(o.messages == 2);
    CHECK(o.bytes < 100);
  }
}

TEST_CASE("d differences among n converge, with bounded round trips and bytes", "[anti_entropy]") {
  const uint64_t base = seed_or(10);
  for (uint64_t n : {1000, 100'000}) {
    for (uint64_t d : {1, 10, 1000}) {
      for (uint64_t seed = base; seed < base + (n > 1000 ? 1 : 6); ++seed) {
        INFO("seed " << seed << " n " << n << " d " << d << " (replay: CAESIUM_SEED=" << seed << ")");
        Rng rng(seed * 1000 + d);
        VolumeStore a("default", "n1"), b("default", "n2");
        fill(rng, a, b, n, d);
        REQUIRE(a.root_digest() != b.root_digest());
        const Outcome o = run(a, b, rng.next_u64());
        INFO("round trips " << o.round_trips << " bytes " << o.bytes << " error " << o.error);
        REQUIRE(o.completed);
        require_converged(a, b);
        if (d <= 10) {
          CHECK(o.round_trips <= 3);
          CHECK(o.bytes <= 16 * 1024);
        }
        // Cost grows with d, not n: far below exchanging every key hash and version.
        CHECK(o.bytes < 12 * n + 400 * d);
        // A second session finds nothing to do.
        const Outcome again = run(a, b, rng.next_u64());
        CHECK(again.round_trips == 1);
      }
    }
  }
}

TEST_CASE("differences only on one side, or everything different", "[anti_entropy]") {
  const uint64_t seed = seed_or(20);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  SyncOptions small;
  small.max_message_bytes = 16 * 1024;  // forces paging
  for (int direction = 0; direction < 2; ++direction) {
    VolumeStore full("default", "n1"), empty("default", "n2");
    VolumeStore scratch("default", "n3");
    fill(rng, full, scratch, 5000, 0);
    const Outcome o = direction == 0 ? run(full, empty, rng.next_u64(), small) : run(empty, full, rng.next_u64(), small);
    INFO("direction " << direction << " messages " << o.messages << " error " << o.error);
    REQUIRE(o.completed);
    CHECK(o.messages > 4);  // paged
    require_converged(full, empty);
  }
  // Disjoint stores of equal size: every record moves.
  VolumeStore a("default", "n1"), b("default", "n2");
  for (uint64_t i = 0; i < 3000; ++i) (void)(i % 2 ? a : b).merge(record(i, kNow - 5, "n1"), kNow);
  const Outcome o = run(a, b, 77);
  REQUIRE(o.completed);
  require_converged(a, b);
}

TEST_CASE("a session dropped at any point leaves valid stores, a new one converges", "[anti_entropy]") {
  const uint64_t base = seed_or(30);
  // Drop after 1, 2, ... messages until the session is short enough to finish anyway.
  uint32_t drop_points = 0;
  for (uint32_t drop_after = 1;; ++drop_after) {
    const uint64_t seed = base + drop_after;
    INFO("seed " << seed << " drop after " << drop_after << " (replay: CAESIUM_SEED=" << base << ")");
    Rng rng(seed);
    VolumeStore a("default", "n1"), b("default", "n2");
    fill(rng, a, b, 20'000, 40);
    const Outcome dropped = run(a, b, rng.next_u64(), {}, drop_after);
    REQUIRE(a.check_invariants());
    REQUIRE(b.check_invariants());
    if (dropped.completed) break;
    ++drop_points;
    const Outcome o = run(b, a, rng.next_u64());  // the other side initiates this time
    REQUIRE(o.completed);
    require_converged(a, b);
  }
  CHECK(drop_points >= 4);
}

TEST_CASE("local writes during a session are safe, a later session repairs them", "[anti_entropy]") {
  const uint64_t seed = seed_or(40);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  VolumeStore a("default", "n1"), b("default", "n2");
  fill(rng, a, b, 10'000, 100);
  int64_t t = kNow;
  auto writes = [&] {
    for (int i = 0; i < 5; ++i) {
      VolumeStore& s = rng.chance(0.5) ? a : b;
      const std::string key = key_of(rng.below(12'000));
      if (rng.chance(0.3)) (void)s.erase(key, ++t);
      else (void)s.put(key, "concurrent", ++t);
    }
  };
  const Outcome during = run(a, b, rng.next_u64(), {}, UINT32_MAX, writes);
  INFO("error " << during.error);
  REQUIRE(during.completed);
  REQUIRE(a.check_invariants());
  REQUIRE(b.check_invariants());
  for (int i = 0; i < 3 && a.root_digest() != b.root_digest(); ++i) REQUIRE(run(a, b, rng.next_u64()).completed);
  require_converged(a, b);
}

TEST_CASE("malformed peer messages are errors, not crashes", "[anti_entropy][garbage]") {
  VolumeStore store("default", "n1");
  Rng rng(seed_or(50));
  VolumeStore other("default", "n2");
  fill(rng, store, other, 2000, 0);
  SyncMessage valid;
  valid.volume = "default";
  valid.session_id = 9;
  valid.seq = 0;
  valid.sender_done = true;
  valid.root = SyncRoot{1, 1};
  using Mutation = std::function<void(SyncMessage&)>;
  const std::vector<std::pair<const char*, Mutation>> cases{
      {"wrong volume", [](SyncMessage& m) { m.volume = "other"; }},
      {"wrong session", [](SyncMessage& m) { m.session_id = 10; }},
      {"out of sequence", [](SyncMessage& m) { m.seq = 3; }},
      {"no root in the opening", [](SyncMessage& m) { m.root.reset(); }},
      {"step 0", [](SyncMessage& m) { m.fingerprints.push_back({0, 0, 0, {}}); }},
      {"step too large", [](SyncMessage& m) { m.fingerprints.push_back({0, 0, 13, std::vector<uint32_t>(8192)}); }},
      {"range deeper than 64 bits", [](SyncMessage& m) { m.fingerprints.push_back({0, 63, 2, std::vector<uint32_t>(4)}); }},
      {"bits below the prefix", [](SyncMessage& m) { m.fingerprints.push_back({1, 4, 1, std::vector<uint32_t>(2)}); }},
      {"wrong fingerprint count", [](SyncMessage& m) { m.fingerprints.push_back({0, 0, 4, std::vector<uint32_t>(15)}); }},
      {"list prefix bits 65", [](SyncMessage& m) { m.item_lists.push_back({0, 65, {}}); }},
      {"unsorted items", [](SyncMessage& m) { m.item_lists.push_back({0, 0, {{5, 1}, {4, 1}}}); }},
      {"repeated item", [](SyncMessage& m) { m.item_lists.push_back({0, 0, {{5, 1}, {5, 1}}}); }},
      {"item outside its range", [](SyncMessage& m) { m.item_lists.push_back({0x8000'0000'0000'0000ULL, 1, {{5, 1}}}); }},
      {"huge item list", [](SyncMessage& m) { m.item_lists.push_back({0, 0, std::vector<SyncItem>(300'000)}); }},
      {"too many wanted", [](SyncMessage& m) { m.wanted.assign(300'000, 1); }},
      {"record without origin", [](SyncMessage& m) { m.records.push_back(Record{"k", std::string("v"), Version{1, 0, ""}}); }},
      {"record key too large", [](SyncMessage& m) { m.records.push_back(Record{std::string(70'000, 'k'), std::nullopt, Version{1, 0, "x"}}); }},
      {"final that asks for an answer", [](SyncMessage& m) { m.final = true; }},
  };
  for (const auto& [name, mutate] : cases) {
    INFO(name);
    SyncMessage m = valid;
    mutate(m);
    SyncSession resp(SyncSession::Role::kResponder, &store, 9);
    auto r = resp.on_message(m, kNow);
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(r.error().message.empty());
    CHECK(resp.failed());
    CHECK(resp.done());
  }
  // The valid message itself is fine.
  SyncSession resp(SyncSession::Role::kResponder, &store, 9);
  CHECK(resp.on_message(valid, kNow).ok());
  CHECK(store.check_invariants());
}

TEST_CASE("a peer cannot make a session queue unbounded work", "[anti_entropy][garbage]") {
  VolumeStore store("default", "n1");
  for (uint64_t i = 0; i < 5000; ++i) (void)store.merge(record(i, kNow - 10, "n1"), kNow);
  SyncOptions options;
  options.max_pending_work = 1000;
  SyncSession init(SyncSession::Role::kInitiator, &store, 5, options);
  (void)init.start(kNow);
  // 64 ranges x 4096 sub-ranges that all differ: far more than 1000 units of work.
  SyncMessage m{"default", 5, 1, false, false, std::nullopt, {}, {}, {}, {}};
  for (uint64_t r = 0; r < 64; ++r) m.fingerprints.push_back({r << 58, 6, 12, std::vector<uint32_t>(4096, 0xdead)});
  auto reply = init.on_message(m, kNow);
  REQUIRE_FALSE(reply.ok());
  CHECK(init.failed());
}

TEST_CASE("random garbage sequences never crash a session or corrupt the store", "[anti_entropy][garbage]") {
  const uint64_t base = seed_or(60);
  for (uint64_t seed = base; seed < base + 300; ++seed) {
    INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
    Rng rng(seed);
    VolumeStore store("default", "n1");
    for (uint64_t i = 0; i < 300; ++i) (void)store.merge(record(i, kNow - 10, "n1"), kNow);
    SyncSession resp(SyncSession::Role::kResponder, &store, 3);
    for (uint32_t seq = 0; seq < 40 && !resp.done(); seq += 2) {
      SyncMessage m;
      m.volume = rng.chance(0.95) ? "default" : "x";
      m.session_id = rng.chance(0.95) ? 3 : rng.next_u64();
      m.seq = rng.chance(0.95) ? seq : static_cast<uint32_t>(rng.below(50));
      m.sender_done = rng.chance(0.5);
      m.final = rng.chance(0.1);
      if (seq == 0 || rng.chance(0.05)) m.root = SyncRoot{rng.next_u64(), rng.below(1000)};
      for (uint64_t k = rng.below(3); k > 0; --k) {
        const auto bits = static_cast<uint8_t>(rng.below(70));
        const auto step = static_cast<uint8_t>(rng.below(14));
        const uint64_t prefix = bits == 0 || bits >= 64 || rng.chance(0.1) ? rng.next_u64() : rng.next_u64() & ~(~uint64_t{0} >> bits);
        std::vector<uint32_t> fps(rng.chance(0.9) && step < 14 ? (size_t{1} << step) : rng.below(100));
        for (auto& f : fps) f = static_cast<uint32_t>(rng.next_u64());
        m.fingerprints.push_back({prefix, bits, step, std::move(fps)});
      }
      for (uint64_t k = rng.below(3); k > 0; --k) {
        SyncItemList l{0, static_cast<uint8_t>(rng.below(3)), {}};
        for (uint64_t j = rng.below(30); j > 0; --j) l.items.push_back({rng.next_u64() >> l.prefix_bits, static_cast<uint32_t>(rng.next_u64())});
        if (rng.chance(0.8)) std::sort(l.items.begin(), l.items.end());
        m.item_lists.push_back(std::move(l));
      }
      for (uint64_t k = rng.below(5); k > 0; --k) m.wanted.push_back(store.key_hash(key_of(rng.below(400))));
      for (uint64_t k = rng.below(5); k > 0; --k) m.records.push_back(record(rng.below(400), kNow - rng.between(-100, 100), rng.chance(0.95) ? "n9" : ""));
      auto reply = resp.on_message(m, kNow);
      if (!reply.ok()) {
        CHECK(resp.failed());
        break;
      }
      if (!reply->has_value()) break;
    }
    REQUIRE(store.check_invariants());
  }
}
