// Unit tests of the membership building blocks: the SWIM/Lifeguard timing maths,
// Suspicion, Awareness, the BroadcastQueue, the IdIndex and the wire-size estimates.  The state
// machine itself is tested in membership_test (by hand) and membership_cluster_test.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "base/rng.h"
#include "gossip/awareness.h"
#include "gossip/broadcast.h"
#include "gossip/id_index.h"
#include "gossip/membership_wire_size.h"
#include "gossip/suspicion.h"
#include "tests/unit/test_seed.h"

using namespace caesium;
using namespace caesium::gossip;

TEST_CASE("SWIM/Lifeguard timing maths match memberlist's formulas", "[membership]") {
  CHECK(suspicion_timeout_min_ms(4, 1, 1000) == 4000);
  CHECK(suspicion_timeout_min_ms(4, 9, 1000) == 4000);     // log10(9) < 1
  CHECK(suspicion_timeout_min_ms(4, 100, 1000) == 8000);   // log10(100) = 2
  CHECK(suspicion_timeout_min_ms(4, 1000, 1000) == 12000);
  CHECK(retransmit_limit(4, 1) == 4);
  CHECK(retransmit_limit(4, 9) == 4);
  CHECK(retransmit_limit(4, 10) == 8);  // ceil(log10(11)) = 2
  CHECK(retransmit_limit(4, 99) == 8);
  CHECK(retransmit_limit(4, 100) == 12);
  CHECK(push_pull_interval_ms(30000, 32) == 30000);
  CHECK(push_pull_interval_ms(30000, 33) == 60000);
  CHECK(push_pull_interval_ms(30000, 64) == 60000);
  CHECK(push_pull_interval_ms(30000, 65) == 90000);
  CHECK(push_pull_interval_ms(30000, 1000) == 6 * 30000);  // ceil(9.97 - 5) + 1
  // Lifeguard: max - (max - min) * log(C+1) / log(K+1), never below min.
  CHECK(suspicion_timeout_ms(0, 3, 4000, 24000) == 24000);
  CHECK(suspicion_timeout_ms(1, 3, 4000, 24000) == 14000);  // log 2 / log 4 = 1/2
  CHECK(suspicion_timeout_ms(3, 3, 4000, 24000) == 4000);
  CHECK(suspicion_timeout_ms(9, 3, 4000, 24000) == 4000);
}

TEST_CASE("a Suspicion shrinks with independent confirmations only", "[membership]") {
  Suspicion s("origin", 3, 4000, 24000, 1000);
  CHECK(s.deadline_ms() == 25000);
  CHECK_FALSE(s.confirm("origin"));  // our own suspicion coming back is no confirmation
  CHECK(s.confirm("a"));
  CHECK_FALSE(s.confirm("a"));       // one vote per member
  CHECK(s.deadline_ms() == 15000);
  CHECK(s.confirm("b"));
  CHECK(s.deadline_ms() < 15000);
  CHECK(s.confirm("c"));
  CHECK(s.deadline_ms() == 5000);
  CHECK_FALSE(s.confirm("d"));       // at K the timeout is already Min
  CHECK(s.confirmations() == 3);
  s.check_invariants();

  Suspicion none("origin", 0, 4000, 24000, 0);  // too few members to expect confirmations
  CHECK_FALSE(none.confirm("a"));
  CHECK(none.deadline_ms() == 24000);
}

TEST_CASE("Awareness clamps the score and scales timeouts by score + 1", "[membership]") {
  Awareness a(8);
  CHECK(a.scale(500) == 500);
  CHECK_FALSE(a.apply(-1));
  CHECK(a.apply(3));
  CHECK(a.scale(500) == 2000);
  a.apply(100);
  CHECK(a.score() == 7);
  CHECK(a.scale(1000) == 8000);
  a.apply(-2);
  CHECK(a.score() == 5);
  Awareness off(1);
  off.apply(5);
  CHECK(off.score() == 0);
}

namespace {

Update alive_update(const std::string& node, uint64_t inc, size_t tags = 0) {
  MemberMeta meta;
  for (size_t i = 0; i < tags; ++i) meta.tags.push_back("tag" + std::to_string(i));
  return Alive{node, inc, node + ":7946", meta};
}

std::vector<std::string> subjects(const std::vector<Update>& updates) {
  std::vector<std::string> out;
  for (const auto& u : updates) out.push_back(subject_of(u));
  return out;
}

}  // namespace

TEST_CASE("BroadcastQueue sends fewest-transmits first, newest first, at most the limit", "[membership]") {
  BroadcastQueue q(1000);
  REQUIRE(q.push(alive_update("a", 1)));
  REQUIRE(q.push(alive_update("b", 1)));
  std::vector<Update> out;
  q.fill(10000, 3, out);
  CHECK(subjects(out) == std::vector<std::string>{"b", "a"});  // newest first
  REQUIRE(q.push(alive_update("c", 1)));
  out.clear();
  q.fill(10000, 3, out);
  CHECK(subjects(out) == std::vector<std::string>{"c", "b", "a"});  // c has fewer transmits
  CHECK(q.transmits_of("a") == 2);
  out.clear();
  q.fill(10000, 3, out);  // a and b reach the limit and leave
  CHECK(q.size() == 1);
  CHECK(q.contains("c"));
  CHECK_FALSE(q.contains("a"));
  q.check_invariants();

  // Newer news about a member replaces older news about it, with a fresh count.
  REQUIRE(q.push(Suspect{"c", 1, "x"}));
  CHECK(q.size() == 1);
  CHECK(q.transmits_of("c") == 0);
  out.clear();
  q.fill(10000, 3, out);
  REQUIRE(out.size() == 1);
  CHECK(std::holds_alternative<Suspect>(out[0]));

  // The budget is respected, and an update that fits is not blocked by one that does not.
  BroadcastQueue small(1000);
  REQUIRE(small.push(alive_update("big", 1, 10)));
  REQUIRE(small.push(Dead{"d", 1, "x"}));
  const size_t dead_bytes = estimated_wire_size(Update{Dead{"d", 1, "x"}});
  out.clear();
  CHECK(small.fill(dead_bytes + 10, 4, out) == dead_bytes);
  CHECK(subjects(out) == std::vector<std::string>{"d"});

  // An update that could never fit a datagram is refused.
  BroadcastQueue tiny(100);
  CHECK_FALSE(tiny.push(alive_update("big", 1, 10)));
  CHECK(tiny.empty());
}

TEST_CASE("wire-size estimates are additive and grow with content", "[membership]") {
  const Update small = alive_update("n1", 1);
  const Update tagged = alive_update("n1", 1, 5);
  CHECK(estimated_wire_size(tagged) > estimated_wire_size(small));
  CHECK(estimated_text_size("") == 16);
  CHECK(estimated_text_size("1234567") == 16);
  CHECK(estimated_text_size("12345678") == 24);  // the NUL needs another word
  Packet p{Ping{1, "target"}, {small, tagged, Update{Suspect{"x", 2, "y"}}}};
  CHECK(estimated_wire_size(p) == estimated_base_size(p.primary) + estimated_wire_size(small) +
                                      estimated_wire_size(tagged) + estimated_wire_size(p.updates[2]));
  // Never below the raw bytes of the strings it carries.
  const Alive& a = std::get<Alive>(tagged);
  size_t raw = a.node.size() + a.addr.size();
  for (const auto& t : a.meta.tags) raw += t.size();
  CHECK(estimated_wire_size(tagged) > raw);
}

TEST_CASE("IdIndex finds exactly the indexed entries and their marks through inserts and erases", "[membership]") {
  // Checked against a std::map under a seeded random mix of operations; erase must keep
  // every remaining entry reachable (backward shift, no tombstones).
  // Marks too: each entry's mark must follow it through growth and backward shifts.
  std::map<std::string, int> truth;
  std::map<std::string, bool> marks;
  IdIndex<std::pair<const std::string, int>> index;
  const uint64_t seed = test::seed_or(20261122);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  for (int step = 0; step < 20'000; ++step) {
    const std::string id = "n" + std::to_string(rng.below(300));
    switch (rng.below(4)) {
      case 0: {
        auto [it, inserted] = truth.emplace(id, step);
        if (inserted) {
          index.insert(&*it);
          marks[id] = false;
        }
        break;
      }
      case 1: {
        auto it = truth.find(id);
        index.erase(id);
        if (it != truth.end()) truth.erase(it);
        marks.erase(id);
        break;
      }
      case 2: {
        if (truth.count(id) == 0) break;
        const bool mark = rng.chance(0.5);
        index.set_mark(id, mark);
        marks[id] = mark;
        break;
      }
      default: {
        auto it = truth.find(id);
        auto* found = index.find(id);
        REQUIRE((found == nullptr) == (it == truth.end()));
        if (found != nullptr) REQUIRE(found == &*it);
        REQUIRE(index.maybe_marked(id) == (found != nullptr && marks[id]));
        break;
      }
    }
    REQUIRE(index.size() == truth.size());
  }
  for (auto& entry : truth) {
    REQUIRE(index.find(entry.first) == &entry);
    REQUIRE(index.maybe_marked(entry.first) == marks[entry.first]);
  }
}
