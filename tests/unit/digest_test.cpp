// Digest: range summaries, child summaries and range iteration agree with a brute-force
// model through inserts, updates, replacements, erases and every resize; invariants hold throughout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "base/rng.h"
#include "schedule/digest.h"

using caesium::Rng;
using namespace caesium::schedule;

namespace {

uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("CAESIUM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

struct Model {
  std::vector<std::unique_ptr<DigestItem>> items;

  NodeSummary summarize(HashRange r) const {
    NodeSummary s;
    for (const auto& it : items) {
      if (r.contains(it->key_hash)) s.add(it->entry_hash);
    }
    return s;
  }
  std::vector<std::pair<uint64_t, uint64_t>> in_range(HashRange r) const {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (const auto& it : items) {
      if (r.contains(it->key_hash)) v.emplace_back(it->key_hash, it->entry_hash);
    }
    std::sort(v.begin(), v.end());
    return v;
  }
};

HashRange random_range(Rng& rng, const Model& m) {
  const unsigned bits = static_cast<unsigned>(rng.below(30));
  // Half the time around an existing item, so deep ranges are not all empty.
  uint64_t h = rng.next_u64();
  if (!m.items.empty() && rng.chance(0.5)) h = m.items[rng.below(m.items.size())]->key_hash;
  return HashRange{bits == 0 ? 0 : h & ~(~uint64_t{0} >> bits), bits};
}

void check_against_model(Rng& rng, const Digest& d, const Model& m) {
  REQUIRE(d.check_invariants());
  REQUIRE(d.size() == m.items.size());
  for (int q = 0; q < 20; ++q) {
    const HashRange r = random_range(rng, m);
    INFO("range bits " << r.bits << " prefix " << r.prefix << " depth " << d.depth());
    REQUIRE(d.summarize(r) == m.summarize(r));
    const unsigned step = 1 + static_cast<unsigned>(rng.below(8));
    std::vector<NodeSummary> kids;
    d.child_summaries(r, step, &kids);
    REQUIRE(kids.size() == (size_t{1} << step));
    NodeSummary total;
    for (const NodeSummary& k : kids) total.add(k);
    REQUIRE(total == m.summarize(r));
    for (int k = 0; k < 4; ++k) {
      const size_t i = rng.below(kids.size());
      REQUIRE(kids[i] == m.summarize(r.child(step, i)));
    }
    std::vector<std::pair<uint64_t, uint64_t>> got;
    d.for_each_in(r, r.lo(), [&](const DigestItem& it) {
      got.emplace_back(it.key_hash, it.entry_hash);
      return true;
    });
    REQUIRE(got == m.in_range(r));
  }
}

}  // namespace

TEST_CASE("hash ranges: bounds, children, well-formedness", "[digest]") {
  const HashRange all{0, 0};
  CHECK(all.lo() == 0);
  CHECK(all.hi() == ~uint64_t{0});
  const HashRange c = all.child(4, 0xA);
  CHECK(c == HashRange{0xA000'0000'0000'0000ULL, 4});
  CHECK(c.hi() == 0xAFFF'FFFF'FFFF'FFFFULL);
  CHECK(c.child(2, 3) == HashRange{0xAC00'0000'0000'0000ULL, 6});
  CHECK(HashRange{42, 64}.well_formed());
  CHECK(HashRange{42, 64}.lo() == 42);
  CHECK(HashRange{42, 64}.hi() == 42);
  CHECK_FALSE(HashRange{1, 63}.well_formed());
  CHECK_FALSE(HashRange{0, 65}.well_formed());
}

TEST_CASE("digest agrees with a brute-force model through growth and shrinkage", "[digest]") {
  const uint64_t seed = seed_or(500);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  Digest d;
  Model m;
  unsigned max_depth_seen = 0;
  // Grow to ~20k items (depth 0 -> 2), churn, then shrink to empty.
  for (int phase = 0; phase < 3; ++phase) {
    const int steps = phase == 1 ? 5000 : 22'000;
    for (int i = 0; i < steps; ++i) {
      const uint64_t op = phase == 0 ? rng.below(10) : phase == 1 ? rng.below(3) : 9;
      if (op < 7 || m.items.empty()) {
        if (phase == 2) break;
        auto item = std::make_unique<DigestItem>();
        // A few deliberate 64-bit key-hash collisions.
        item->key_hash = (!m.items.empty() && rng.chance(0.01)) ? m.items[rng.below(m.items.size())]->key_hash
                                                                  : rng.next_u64();
        item->entry_hash = rng.next_u64();
        d.insert(item.get());
        m.items.push_back(std::move(item));
      } else if (op < 8 && phase < 2 && rng.chance(0.5)) {
        DigestItem* it = m.items[rng.below(m.items.size())].get();
        const uint64_t old = it->entry_hash;
        it->entry_hash = rng.next_u64();
        d.update(it, old);
      } else if (op < 8 && phase < 2) {  // a new version as a new item (what the store does)
        const size_t k = rng.below(m.items.size());
        auto fresh = std::make_unique<DigestItem>(DigestItem{m.items[k]->key_hash, rng.next_u64()});
        d.replace(m.items[k].get(), fresh.get());
        m.items[k] = std::move(fresh);
      } else {
        const size_t k = rng.below(m.items.size());
        d.erase(m.items[k].get());
        m.items[k] = std::move(m.items.back());
        m.items.pop_back();
      }
      max_depth_seen = std::max(max_depth_seen, d.depth());
      if (i % 1500 == 0) check_against_model(rng, d, m);
    }
    check_against_model(rng, d, m);
  }
  CHECK(max_depth_seen >= 2);
  CHECK(d.size() == 0);
  CHECK(d.depth() == 0);
  CHECK(d.root() == NodeSummary{});
}

TEST_CASE("digest root depends on the set, not the insertion order", "[digest]") {
  const uint64_t seed = seed_or(501);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  std::vector<DigestItem> items(3000);
  for (auto& it : items) it = DigestItem{rng.next_u64(), rng.next_u64()};
  Digest a, b;
  for (const auto& it : items) a.insert(&it);
  std::vector<const DigestItem*> order;
  for (const auto& it : items) order.push_back(&it);
  rng.shuffle(order.begin(), order.end());
  for (const DigestItem* it : order) b.insert(it);
  CHECK(a.root() == b.root());
  CHECK(a.depth() == b.depth());
  b.erase(order[0]);
  CHECK_FALSE(a.root().fingerprint() == b.root().fingerprint());
}
