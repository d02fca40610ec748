// The periodic push-pull exchange (anti-entropy of the member view), driven by hand
// between two or three Memberships: the digest push-pull of protocol version 2 and the
// cases that must still exchange full states.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "gossip/membership.h"

using namespace caesium;
using namespace caesium::gossip;

namespace {

MemberMeta meta_of(const std::string& id, uint32_t version = kProtocolVersion) {
  MemberMeta meta;
  meta.stream_addr = id + ":s";
  meta.protocol_version = version;
  return meta;
}

// A few Memberships named by id ("a", "b", ...), each at "<id>:g" / "<id>:s".  Stream
// messages (push-pulls) are delivered between them in order, with no loss; datagrams
// are dropped (they matter not here, and nobody is ever suspected by them within the
// short spans these tests run).
struct Net {
  std::map<std::string, Membership> nodes;
  std::vector<std::pair<std::string, PushPull>> delivered;  // (receiver, message), in order
  int64_t now_ms = 0;

  Membership& add(const std::string& id, uint32_t version = kProtocolVersion, uint64_t seed = 1) {
    auto [it, inserted] = nodes.try_emplace(id, id, id + ":g", meta_of(id, version), 0, MembershipConfig{}, Rng(seed));
    REQUIRE(inserted);
    return it->second;
  }

  // Delivers every queued stream message, and what those provoke, until all is quiet.
  void settle() {
    for (int round = 0; round < 20; ++round) {
      bool any = false;
      for (auto& [id, m] : nodes) {
        m.check_invariants();
        Outgoing out;
        while (m.poll_send(out)) {
          if (out.channel != Outgoing::Channel::kStream) continue;
          const std::string to = out.to_addr.substr(0, out.to_addr.size() - 2);  // "<id>:s"
          auto target = nodes.find(to);
          if (target == nodes.end()) continue;  // connection refused
          const auto& pp = std::get<PushPull>(out.msg);
          delivered.emplace_back(to, pp);
          target->second.on_push_pull(Peer{id, id + ":g"}, pp, now_ms);
          any = true;
        }
      }
      if (!any) return;
    }
    FAIL("push-pull messages still flowing after 20 rounds");
  }

  // Runs one node's timers at `t` (and only that node's: the others stay quiet).
  void tick(const std::string& id, int64_t t) {
    now_ms = t;
    nodes.at(id).on_tick(t);
  }

  // Every node's push-pull tick fires at least once in this span (base interval, N <= 32).
  static int64_t interval() { return MembershipConfig{}.push_pull_interval_ms; }
};

// a joins b; both then hold {a, b} and nothing else.
Net joined_pair(uint32_t b_version = kProtocolVersion) {
  Net net;
  net.add("a");
  net.add("b", b_version, 2);
  net.nodes.at("b").on_tick(0);
  net.nodes.at("a").join({"b:s"}, 0);
  net.settle();
  net.delivered.clear();
  return net;
}

// m learns of a member "c" from c itself (a one-way full state: c's own record).
void learn_c(Membership& m, int64_t now_ms) {
  PushPull from_c;
  from_c.reply_wanted = false;
  from_c.members.push_back(MemberRecord{"c", "c:g", 1, MemberState::kAlive, meta_of("c")});
  m.on_push_pull(Peer{"c", "c:g"}, from_c, now_ms);
}

size_t count_if_digest(const std::vector<std::pair<std::string, PushPull>>& msgs, bool digest_only) {
  size_t n = 0;
  for (const auto& [to, pp] : msgs) n += pp.digest_only == digest_only;
  return n;
}

}  // namespace

TEST_CASE("digest push-pull: equal views exchange one small message and nothing else", "[membership][push-pull]") {
  Net net = joined_pair();
  Membership& a = net.nodes.at("a");
  Membership& b = net.nodes.at("b");
  REQUIRE(a.member_count() == 2);
  REQUIRE(b.member_count() == 2);
  CHECK(a.view_digest() == b.view_digest());

  net.tick("a", Net::interval() + 1);
  net.settle();
  REQUIRE(net.delivered.size() == 1);
  const auto& [to, pp] = net.delivered[0];
  CHECK(to == "b");
  CHECK(pp.digest_only);
  CHECK(pp.reply_wanted);
  CHECK(pp.digest == a.view_digest());
  REQUIRE(pp.members.size() == 2);  // the sender, then its record of the receiver
  CHECK(pp.members[0].node == "a");
  CHECK(pp.members[1].node == "b");
  CHECK(a.stats().push_pull_digests_sent == 1);
  CHECK(b.stats().push_pulls_in_sync == 1);
}

TEST_CASE("digest push-pull: a view that differs gets the full exchange, and both end with the merge",
          "[membership][push-pull]") {
  Net net = joined_pair();
  Membership& a = net.nodes.at("a");
  Membership& b = net.nodes.at("b");
  learn_c(b, 0);  // a has not
  REQUIRE(b.member_count() == 3);
  REQUIRE(a.view_digest() != b.view_digest());

  const uint64_t full_before = a.stats().push_pulls_sent + b.stats().push_pulls_sent;
  net.tick("a", Net::interval() + 1);
  net.settle();
  // a → b digest; b → a full, asking for a's; a → b full reply.
  REQUIRE(net.delivered.size() == 3);
  CHECK(net.delivered[0].second.digest_only);
  CHECK(net.delivered[1].first == "a");
  CHECK_FALSE(net.delivered[1].second.digest_only);
  CHECK(net.delivered[1].second.reply_wanted);
  CHECK(net.delivered[1].second.members.size() == 3);
  CHECK(net.delivered[2].first == "b");
  CHECK_FALSE(net.delivered[2].second.reply_wanted);
  CHECK(a.stats().push_pulls_sent + b.stats().push_pulls_sent == full_before + 2);
  CHECK(b.stats().push_pulls_in_sync == 0);
  CHECK(a.state_of("c") == MemberState::kAlive);
  CHECK(a.view_digest() == b.view_digest());
}

TEST_CASE("digest push-pull: a change of state, incarnation or meta changes the digest", "[membership][push-pull]") {
  Net net = joined_pair();
  Membership& a = net.nodes.at("a");
  Membership& b = net.nodes.at("b");
  const uint64_t d0 = a.view_digest();
  REQUIRE(d0 == b.view_digest());
  // Meta (a load change goes out at once: none was broadcast within the rate limit span).
  MemberMeta busier = b.self_meta();
  busier.load.running = 3;
  REQUIRE(b.set_meta(busier, 10'000).ok());
  const uint64_t d1 = b.view_digest();
  CHECK(d1 != d0);
  // The news reaches a in the next exchange (b's tick opens it: a differs and answers).
  net.tick("b", 10'000 + Net::interval() + 1);
  net.settle();
  CHECK(a.view_digest() == d1);
  // A suspicion of a, which a refutes: its incarnation, and so the digest, moves.
  a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Suspect{"a", 0, "b"}}}, net.now_ms);
  CHECK(a.stats().refutations == 1);
  CHECK(a.stats().previous_life_seen == 0);  // an accusation at our own incarnation: this life's
  CHECK(a.view_digest() != d1);
  // A member dropping out of the view (reaped) is covered by the invariant check that
  // every settle() runs: the cached digest must equal a recomputation.
}

TEST_CASE("push-pull: full states with a partner on protocol 1 or while anyone is suspect", "[membership][push-pull]") {
  SECTION("partner on protocol version 1") {
    Net net = joined_pair(/*b_version=*/1);
    net.tick("a", Net::interval() + 1);
    net.settle();
    REQUIRE(net.delivered.size() == 2);  // a → b full, b → a full reply
    CHECK(count_if_digest(net.delivered, true) == 0);
    CHECK(net.nodes.at("a").stats().push_pull_digests_sent == 0);
  }
  SECTION("a suspect in the opener's view") {
    Net net = joined_pair();
    Membership& a = net.nodes.at("a");
    net.tick("a", Net::interval() + 1);  // the first exchange: the next is one interval later
    net.settle();
    net.delivered.clear();
    // c joins a's view and is suspected just before the next exchange (well within the
    // suspicion timeout).
    const int64_t t = 2 * Net::interval();
    learn_c(a, t);
    a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Suspect{"c", 1, "b"}}}, t);
    REQUIRE(a.state_of("c") == MemberState::kSuspect);
    net.tick("a", t + 1);  // the only alive partner is b
    net.settle();
    REQUIRE(!net.delivered.empty());
    CHECK_FALSE(net.delivered[0].second.digest_only);
    CHECK(net.delivered[0].first == "b");
    // The suspicion went out in a's full state.
    bool carried = false;
    for (const auto& r : net.delivered[0].second.members) carried |= r.node == "c" && r.state == MemberState::kSuspect;
    CHECK(carried);
  }
  SECTION("a suspect in the receiver's view, digests equal") {
    Net net = joined_pair();
    Membership& a = net.nodes.at("a");
    Membership& b = net.nodes.at("b");
    // Both learn c; b suspects it.  a's digest differs from b's (c alive vs suspect), so
    // force the check on the receiver's suspect rule with a digest equal to b's own.
    learn_c(a, 0);
    learn_c(b, 0);
    b.on_packet(Peer{"a", "a:g"}, Packet{GossipOnly{}, {Suspect{"c", 1, "a"}}}, 0);
    REQUIRE(b.state_of("c") == MemberState::kSuspect);
    PushPull digest;
    digest.digest_only = true;
    digest.digest = b.view_digest();
    digest.members.push_back(MemberRecord{"a", "a:g", 0, MemberState::kAlive, a.self_meta()});
    b.on_push_pull(Peer{"a", "a:g"}, digest, 0);
    Outgoing out;
    std::vector<PushPull> replies;
    while (b.poll_send(out)) {
      if (out.channel == Outgoing::Channel::kStream) replies.push_back(std::get<PushPull>(out.msg));
    }
    REQUIRE(replies.size() == 1);
    CHECK_FALSE(replies[0].digest_only);
    CHECK(replies[0].reply_wanted);
    CHECK(b.stats().push_pulls_in_sync == 0);
  }
}

TEST_CASE("digest push-pull: a malformed digest message is dropped and counted", "[membership][push-pull]") {
  Net net = joined_pair();
  Membership& b = net.nodes.at("b");
  const uint64_t dropped = b.stats().malformed_dropped;
  auto digest_from_a = [&] {
    PushPull pp;
    pp.digest_only = true;
    pp.digest = b.view_digest();
    pp.members.push_back(MemberRecord{"a", "a:g", 0, MemberState::kAlive, meta_of("a")});
    return pp;
  };
  PushPull two = digest_from_a();
  two.members.push_back(MemberRecord{"z", "z:g", 1, MemberState::kAlive, meta_of("z")});
  PushPull other = digest_from_a();
  other.members[0].node = "z";
  PushPull join = digest_from_a();
  join.join = true;
  PushPull no_reply = digest_from_a();
  no_reply.reply_wanted = false;
  PushPull none = digest_from_a();
  none.members.clear();
  PushPull three = digest_from_a();
  three.members.push_back(MemberRecord{"b", "b:g", 0, MemberState::kAlive, meta_of("b")});
  three.members.push_back(MemberRecord{"b", "b:g", 0, MemberState::kAlive, meta_of("b")});
  for (const PushPull* pp : {&two, &other, &join, &no_reply, &none, &three}) b.on_push_pull(Peer{"a", "a:g"}, *pp, 0);
  CHECK(b.stats().malformed_dropped == dropped + 6);
  CHECK(b.member_count() == 2);  // "z" was never added
  CHECK(b.stats().push_pulls_in_sync == 0);
  // The well-formed one still works.
  b.on_push_pull(Peer{"a", "a:g"}, digest_from_a(), 0);
  CHECK(b.stats().push_pulls_in_sync == 1);
}

TEST_CASE("digest push-pull to a member held dead: a live one answers in full and the two heal",
          "[membership][push-pull]") {
  Net net = joined_pair();
  Membership& a = net.nodes.at("a");
  Membership& b = net.nodes.at("b");
  // A third node c declares b dead in a's view (as after a long partition); b, alive,
  // is unaware.  a's live partner is c, which is gone (its connection is refused), and
  // its dead partner is b.  a's digest carries "b is dead": b refutes before answering,
  // so its full answer revives it in a's view within the exchange, with no gossip.
  learn_c(a, 0);
  a.on_packet(Peer{"c", "c:g"}, Packet{GossipOnly{}, {Dead{"b", 0, "c"}}}, 0);
  REQUIRE(a.state_of("b") == MemberState::kDead);
  net.tick("a", Net::interval() + 1);
  net.settle();
  CHECK(net.delivered.size() >= 3);  // digest, b's full state, a's full reply
  CHECK(a.state_of("b") == MemberState::kAlive);  // b refuted: incarnation 1
  CHECK(b.stats().refutations >= 1);
}

TEST_CASE("two clusters formed apart merge through a seed that no member answers to", "[membership][push-pull]") {
  // The network split while the cluster formed (swarm seed 34411): a reached only b of
  // its seeds and c only d, so {a, b} and {c, d} formed apart, and after the heal
  // neither side holds the other in any state.  a's exchange rounds check its seeds
  // one by one; c:s answers to no member of a's view, so a opens an exchange with it.
  Net net;
  net.add("a");
  net.add("b", kProtocolVersion, 2);
  net.nodes.at("b").on_tick(0);
  net.nodes.at("a").join({"b:s", "c:s"}, 0);  // c is not up yet: its connection is refused
  net.settle();
  net.add("c", kProtocolVersion, 3);
  net.add("d", kProtocolVersion, 4);
  net.nodes.at("d").on_tick(0);
  net.nodes.at("c").join({"d:s"}, 0);
  net.settle();
  Membership& a = net.nodes.at("a");
  Membership& c = net.nodes.at("c");
  REQUIRE(a.member_count() == 2);
  REQUIRE(c.member_count() == 2);
  REQUIRE(!a.state_of("c"));

  net.delivered.clear();
  for (int round = 1; round <= 3 && a.member_count() < 4; ++round) {
    net.tick("a", round * (Net::interval() + 1));
    net.settle();
  }
  CHECK(a.stats().seed_exchanges >= 1);
  // The exchange opened with a digest carrying a's record only (a holds no record of c).
  REQUIRE(!net.delivered.empty());
  bool opened_with_digest = false;
  for (const auto& [to, pp] : net.delivered) {
    if (to == "c" && pp.digest_only) {
      opened_with_digest = true;
      REQUIRE(pp.members.size() == 1);
      CHECK(pp.members[0].node == "a");
    }
  }
  CHECK(opened_with_digest);
  CHECK(a.member_count() == 4);
  CHECK(c.member_count() == 4);
  for (const char* id : {"b", "c", "d"}) CHECK(a.state_of(id) == MemberState::kAlive);
  for (const char* id : {"a", "b", "d"}) CHECK(c.state_of(id) == MemberState::kAlive);

  // Once every seed is a member, the rounds send no further seed exchanges.
  const uint64_t sent = a.stats().seed_exchanges;
  for (int round = 4; round <= 7; ++round) {
    net.tick("a", round * (Net::interval() + 1));
    net.settle();
  }
  CHECK(a.stats().seed_exchanges == sent);
}

TEST_CASE("news of our own id from a previous process is counted, news of this one's life is not",
          "[membership][first-start]") {
  Net net = joined_pair();
  Membership& a = net.nodes.at("a");
  const uint64_t inc = a.incarnation();
  // This life: a suspicion or a death at our incarnation (a false accusation), our own
  // alive echoed back.
  a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Suspect{"a", inc, "b"}}}, net.now_ms);
  a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Alive{"a", a.incarnation(), "a:g", a.self_meta()}}}, net.now_ms);
  CHECK(a.stats().previous_life_seen == 0);
  // A previous process of this id: an accusation above our incarnation...
  a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Dead{"a", a.incarnation() + 5, "b"}}}, net.now_ms);
  CHECK(a.stats().previous_life_seen == 1);
  // ...or its alive at our very incarnation with another meta (a process changes its meta
  // only with its incarnation).
  MemberMeta other = a.self_meta();
  other.priority += 1;
  a.on_packet(Peer{"b", "b:g"}, Packet{GossipOnly{}, {Alive{"a", a.incarnation(), "a:g", other}}}, net.now_ms);
  CHECK(a.stats().previous_life_seen == 2);
  CHECK(a.incarnation() > inc);
}
