// The master rule: the reachable replica with the highest priority, the smaller node id
// breaking ties; the local node always counts itself reachable.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "base/rng.h"
#include "gossip/master.h"
#include "gossip/membership.h"

using namespace caesium;
using namespace caesium::gossip;

TEST_CASE("the highest priority reachable replica is master and the smaller id breaks ties", "[master]") {
  CHECK(choose_master({{"a", true, 1}, {"b", true, 5}, {"c", true, 3}}) == "b");
  CHECK(choose_master({{"a", true, 1}, {"b", false, 5}, {"c", true, 3}}) == "c");
  CHECK(choose_master({{"n2", true, 5}, {"n10", true, 5}, {"n3", true, 5}}) == "n10");  // byte order
  CHECK(choose_master({{"b", true, -1}, {"a", true, -1}}) == "a");
  CHECK(choose_master({{"a", false, 9}, {"b", false, 1}}) == std::nullopt);
  CHECK(choose_master({}) == std::nullopt);
  CHECK(choose_master({{"a", true, 2}, {"a", true, 2}}) == "a");
  CHECK(outranks({"z", true, 2}, {"a", true, 1}));
  CHECK(outranks({"a", true, 1}, {"b", true, 1}));
  CHECK_FALSE(outranks({"b", true, 1}, {"a", true, 1}));
}

TEST_CASE("the master does not depend on the order of the replica list", "[master]") {
  uint64_t seed = 1;
  if (const char* env = std::getenv("CAESIUM_SEED")) seed = std::strtoull(env, nullptr, 10);
  CAPTURE(seed);
  Rng rng(seed);
  for (int round = 0; round < 200; ++round) {
    std::vector<MasterCandidate> candidates;
    const auto n = static_cast<size_t>(rng.between(1, 8));
    for (size_t i = 0; i < n; ++i) {
      candidates.push_back({"n" + std::to_string(rng.below(20)), rng.chance(0.7), rng.between(0, 3)});
    }
    // Same id means same node: give duplicates one reachability and priority.
    for (auto& c : candidates) {
      for (const auto& d : candidates) {
        if (d.id == c.id) {
          c.reachable = d.reachable;
          c.priority = d.priority;
          break;
        }
      }
    }
    const auto expected = choose_master(candidates);
    for (int shuffle = 0; shuffle < 5; ++shuffle) {
      rng.shuffle(candidates.begin(), candidates.end());
      CHECK(choose_master(candidates) == expected);
    }
    // The master is reachable and nobody reachable outranks it.
    if (expected) {
      for (const auto& c : candidates) {
        if (c.id == *expected) CHECK(c.reachable);
        if (c.reachable && c.id != *expected) {
          const MasterCandidate* m = nullptr;
          for (const auto& x : candidates)
            if (x.id == *expected) m = &x;
          REQUIRE(m != nullptr);
          CHECK_FALSE(outranks(c, *m));
        }
      }
    } else {
      for (const auto& c : candidates) CHECK_FALSE(c.reachable);
    }
  }
}

namespace {

MemberRecord record(const std::string& id, int64_t priority, MemberState state) {
  MemberRecord r;
  r.node = id;
  r.addr = id + ":g";
  r.incarnation = 1;
  r.state = state;
  r.meta.priority = priority;
  r.meta.stream_addr = id + ":s";
  return r;
}

}  // namespace

TEST_CASE("master_of reads reachability and priority from the membership view", "[master]") {
  MemberMeta self_meta;
  self_meta.priority = 3;
  self_meta.stream_addr = "a:s";
  Membership view("a", "a:g", self_meta, 0, MembershipConfig{}, Rng(1));
  PushPull pp;
  pp.reply_wanted = false;
  pp.members = {record("b", 9, MemberState::kAlive), record("c", 5, MemberState::kAlive),
                record("d", 7, MemberState::kAlive)};
  view.on_push_pull(Peer{"b", "b:g"}, pp, 0);
  REQUIRE(view.state_of("d") == MemberState::kAlive);

  CHECK(master_of({"a", "b", "c"}, view) == "b");
  CHECK(master_of({"a", "c"}, view) == "c");
  CHECK(master_of({"a"}, view) == "a");              // ourselves: always reachable
  CHECK(master_of({"a", "zz"}, view) == "a");        // unknown replicas are unreachable
  CHECK(master_of({"zz", "yy"}, view) == std::nullopt);

  // A suspect is still reachable; a dead member is not.
  view.on_packet(Peer{"c", "c:g"}, Packet{GossipOnly{}, {Suspect{"d", 1, "c"}}}, 10);
  CHECK(master_of({"a", "c", "d"}, view) == "d");
  view.on_packet(Peer{"c", "c:g"}, Packet{GossipOnly{}, {Dead{"b", 1, "c"}}}, 20);
  CHECK(master_of({"a", "b", "c"}, view) == "c");

  // Our own priority comes from our current meta.
  self_meta.priority = 100;
  REQUIRE(view.set_meta(self_meta, 30).ok());
  CHECK(master_of({"a", "c", "d"}, view) == "a");
  view.check_invariants();
}
