// Unit tests of one Membership driven by hand, message by message, with hand-set time.
// The building blocks are tested in membership_parts_test; cluster-level scenarios are
// in membership_cluster_test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "gossip/broadcast.h"
#include "gossip/membership.h"
#include "gossip/membership_wire_size.h"

using namespace caesium;
using namespace caesium::gossip;
using Kind = MemberEvent::Kind;

namespace {

MemberRecord record(const std::string& id, uint64_t inc = 1, MemberState state = MemberState::kAlive) {
  MemberRecord r;
  r.node = id;
  r.addr = id + ":g";
  r.incarnation = inc;
  r.state = state;
  r.meta.stream_addr = id + ":s";
  return r;
}

Peer peer(const std::string& id) { return Peer{id, id + ":g"}; }

// One Membership "a", driven by hand.  It learns `peers` (b, c, d, ...) from a push-pull
// reply at time 0.  With auto_ack, every Ping it sends is answered at once by its target.
struct Rig {
  explicit Rig(MembershipConfig config = {}, size_t peers = 4, uint64_t seed = 1)
      : m("a", "a:g", meta_with_stream("a:s"), 0, config, Rng(seed)) {
    PushPull pp;
    pp.reply_wanted = false;
    for (size_t i = 0; i < peers; ++i) pp.members.push_back(record(std::string(1, static_cast<char>('b' + i))));
    m.on_push_pull(peer("b"), pp, 0);
    drain();
  }

  static MemberMeta meta_with_stream(std::string addr) {
    MemberMeta meta;
    meta.stream_addr = std::move(addr);
    return meta;
  }

  void drain() {
    m.check_invariants();
    Outgoing out;
    while (m.poll_send(out)) {
      if (out.channel == Outgoing::Channel::kDatagram)
        REQUIRE(estimated_wire_size(std::get<Packet>(out.msg)) <= m.datagram_budget_bytes());
      sent.push_back(out);
      if (!auto_ack) continue;
      const auto* p = std::get_if<Packet>(&out.msg);
      if (p == nullptr) continue;
      if (const auto* ping = std::get_if<Ping>(&p->primary)) {
        m.on_packet(Peer{ping->target, out.to_addr}, Packet{Ack{ping->seq}, {}}, now_ms);
      }
    }
    MemberEvent e;
    while (m.poll_event(e)) events.push_back(e);
  }

  // Runs every timer due up to `t`.
  void run_to(int64_t t) {
    for (;;) {
      const int64_t d = std::max(m.next_deadline_ms(), now_ms);
      if (d > t) break;
      now_ms = d;
      m.on_tick(now_ms);
      drain();
      REQUIRE(m.next_deadline_ms() > now_ms);  // the work due now is done
    }
    now_ms = t;
  }

  void receive(const std::string& from, Packet p) {
    m.on_packet(peer(from), p, now_ms);
    drain();
  }

  template <class T>
  std::vector<std::pair<std::string, T>> sent_of() const {
    std::vector<std::pair<std::string, T>> out;
    for (const auto& o : sent) {
      const auto* p = std::get_if<Packet>(&o.msg);
      if (p == nullptr) continue;
      if (const auto* x = std::get_if<T>(&p->primary)) out.emplace_back(o.to_addr, *x);
    }
    return out;
  }

  size_t events_of(Kind kind, const std::string& node) const {
    return static_cast<size_t>(std::count_if(events.begin(), events.end(),
                                             [&](const MemberEvent& e) { return e.kind == kind && e.node == node; }));
  }

  // Runs timer by timer until a Ping goes out, leaving now_ms at its send time; returns
  // its destination and the Ping.
  std::pair<std::string, Ping> first_ping() {
    for (int guard = 0; guard < 100 && sent_of<Ping>().empty(); ++guard) run_to(std::max(now_ms, m.next_deadline_ms()));
    REQUIRE(!sent_of<Ping>().empty());
    return sent_of<Ping>().front();
  }

  // The first datagram sent whose primary is a T.
  template <class T>
  const Packet* first_packet_of() const {
    for (const auto& o : sent) {
      const auto* p = std::get_if<Packet>(&o.msg);
      if (p != nullptr && std::holds_alternative<T>(p->primary)) return p;
    }
    return nullptr;
  }

  Membership m;
  int64_t now_ms = 0;
  bool auto_ack = false;
  std::vector<Outgoing> sent;
  std::vector<MemberEvent> events;
};

}  // namespace

TEST_CASE("a ping is acked to its sender and a ping for another id is not", "[membership]") {
  Rig r;
  r.sent.clear();
  r.receive("b", Packet{Ping{77, "a"}, {}});
  auto acks = r.sent_of<Ack>();
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].first == "b:g");
  CHECK(acks[0].second.seq == 77);
  r.receive("b", Packet{Ping{78, "someone-else"}, {}});
  CHECK(r.sent_of<Ack>().size() == 1);
  CHECK(r.m.stats().misdirected_pings == 1);
}

TEST_CASE("a silent target gets ping-reqs at the probe timeout and is suspected at the period's end",
          "[membership]") {
  Rig r;
  const auto [addr, ping] = r.first_ping();
  const int64_t t0 = r.now_ms;
  const std::string target = ping.target;
  CHECK(addr == target + ":g");
  r.run_to(t0 + 499);
  CHECK(r.sent_of<PingReq>().empty());
  r.run_to(t0 + 500);
  const auto reqs = r.sent_of<PingReq>();
  REQUIRE(reqs.size() == 3);  // indirect_checks relays, all distinct, none the target
  std::vector<std::string> relays;
  for (const auto& [to, req] : reqs) {
    CHECK(req.target == target);
    CHECK(req.target_addr == target + ":g");
    CHECK(req.seq == ping.seq);
    CHECK(req.want_nack);
    CHECK(to != target + ":g");
    relays.push_back(to);
  }
  std::sort(relays.begin(), relays.end());
  CHECK(std::adjacent_find(relays.begin(), relays.end()) == relays.end());

  SECTION("no nacks either: we blame ourselves too") {
    r.run_to(t0 + 999);
    CHECK(r.m.state_of(target) == MemberState::kAlive);
    r.run_to(t0 + 1000);
    CHECK(r.m.state_of(target) == MemberState::kSuspect);
    CHECK(r.events_of(Kind::kSuspect, target) == 1);
    CHECK(r.m.local_health() == 3);  // one per missing nack
    // The next probe (sent at once) has its timeout and period stretched by score + 1.
    const size_t pings = r.sent_of<Ping>().size();
    r.run_to(t0 + 1000 + 4 * 500 - 1);
    CHECK(r.sent_of<PingReq>().size() == 3);
    r.run_to(t0 + 1000 + 4 * 500);
    CHECK(r.sent_of<PingReq>().size() == 5);  // two relays: the first target is now suspect
    r.run_to(t0 + 1000 + 4 * 1000 - 1);
    CHECK(r.sent_of<Ping>().size() == pings);
  }
  SECTION("every relay nacks: the target is suspect but our health is untouched") {
    for (const auto& [to, req] : reqs) r.receive(to.substr(0, to.find(':')), Packet{Nack{req.seq}, {}});
    r.run_to(t0 + 1000);
    CHECK(r.m.state_of(target) == MemberState::kSuspect);
    CHECK(r.m.local_health() == 0);
  }
  SECTION("a relay forwards the ack: success, no suspicion") {
    const std::string relay = reqs[0].first.substr(0, reqs[0].first.find(':'));
    r.receive(relay, Packet{Ack{ping.seq}, {}});
    r.run_to(t0 + 2000);
    CHECK(r.m.state_of(target) == MemberState::kAlive);
    CHECK(r.events_of(Kind::kSuspect, target) == 0);
  }
}

TEST_CASE("with Lifeguard off there are no nacks and no health changes", "[membership]") {
  MembershipConfig config;
  config.lifeguard = false;
  Rig r(config);
  const auto [addr, ping] = r.first_ping();
  r.run_to(r.now_ms + 1000);
  for (const auto& [to, req] : r.sent_of<PingReq>()) CHECK_FALSE(req.want_nack);
  CHECK(r.m.state_of(ping.target) == MemberState::kSuspect);
  CHECK(r.m.local_health() == 0);
}

TEST_CASE("a relay pings the target, nacks at 80% of the probe timeout, and forwards a late ack",
          "[membership]") {
  Rig r;
  r.run_to(1000);
  r.sent.clear();
  const int64_t t0 = r.now_ms;
  r.receive("b", Packet{PingReq{9, "c", "c:g", true}, {}});
  const auto pings = r.sent_of<Ping>();
  REQUIRE(pings.size() >= 1);
  const auto to_c = std::find_if(pings.begin(), pings.end(), [](const auto& p) { return p.first == "c:g"; });
  REQUIRE(to_c != pings.end());
  const uint32_t relay_seq = to_c->second.seq;
  r.run_to(t0 + 399);
  CHECK(r.sent_of<Nack>().empty());
  r.run_to(t0 + 400);
  REQUIRE(r.sent_of<Nack>().size() == 1);
  CHECK(r.sent_of<Nack>()[0].first == "b:g");
  CHECK(r.sent_of<Nack>()[0].second.seq == 9);
  r.now_ms = t0 + 450;
  r.receive("c", Packet{Ack{relay_seq}, {}});
  const auto acks = r.sent_of<Ack>();
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].first == "b:g");
  CHECK(acks[0].second.seq == 9);
  // An ack from someone other than the pinged target is not forwarded.
  r.receive("b", Packet{PingReq{10, "d", "d:g", false}, {}});
  const uint32_t seq_d = r.sent_of<Ping>().back().second.seq;
  r.receive("e", Packet{Ack{seq_d}, {}});
  CHECK(r.sent_of<Ack>().size() == 1);
  CHECK(r.m.stats().stale_replies == 1);
}

TEST_CASE("a ping to a suspect carries the suspicion first (buddy system)", "[membership]") {
  for (const bool lifeguard : {true, false}) {
    CAPTURE(lifeguard);
    MembershipConfig config;
    config.lifeguard = lifeguard;
    Rig r(config, 1);  // only b: every probe goes to b
    r.receive("z", Packet{GossipOnly{}, {Suspect{"b", 1, "z"}}});
    REQUIRE(r.m.state_of("b") == MemberState::kSuspect);
    r.sent.clear();
    r.first_ping();
    const Packet* p = r.first_packet_of<Ping>();
    REQUIRE(p != nullptr);
    if (lifeguard) {
      REQUIRE(!p->updates.empty());
      CHECK(p->updates[0] == Update{Suspect{"b", 1, "a"}});
    } else {
      CHECK(std::none_of(p->updates.begin(), p->updates.end(),
                         [](const Update& u) { return u == Update{Suspect{"b", 1, "a"}}; }));
    }
  }
}

TEST_CASE("news of our own suspicion or death is refuted with a higher incarnation", "[membership]") {
  Rig r;
  r.receive("b", Packet{GossipOnly{}, {Suspect{"a", 0, "b"}}});
  CHECK(r.m.incarnation() == 1);
  CHECK(r.m.state_of("a") == MemberState::kAlive);
  CHECK(r.events_of(Kind::kAlive, "a") == 1);
  CHECK(r.m.local_health() == 1);  // Lifeguard: being accused counts against us
  r.receive("b", Packet{GossipOnly{}, {Dead{"a", 5, "c"}}});
  CHECK(r.m.incarnation() == 6);
  r.receive("b", Packet{GossipOnly{}, {Suspect{"a", 2, "b"}}});  // stale: ignored
  CHECK(r.m.incarnation() == 6);
  // The refutation rides on the next datagram.
  r.sent.clear();
  r.receive("b", Packet{Ping{1, "a"}, {}});
  const auto& updates = std::get<Packet>(r.sent.back().msg).updates;
  CHECK(std::any_of(updates.begin(), updates.end(), [](const Update& u) {
    const auto* a = std::get_if<Alive>(&u);
    return a != nullptr && a->node == "a" && a->incarnation == 6;
  }));
  // After leaving, accusations are not refuted and echoes do not undo the leave.
  r.m.leave(r.now_ms);
  r.drain();
  r.receive("b", Packet{GossipOnly{}, {Suspect{"a", 6, "b"}, Alive{"a", 9, "a:g", {}}}});
  CHECK(r.m.incarnation() == 6);
  CHECK(r.m.state_of("a") == MemberState::kLeft);
}

TEST_CASE("incarnation precedence: Alive needs a higher one, Suspect and Dead an equal one", "[membership]") {
  Rig r;
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 1, "c"}}});
  CHECK(r.m.state_of("b") == MemberState::kSuspect);
  r.receive("c", Packet{GossipOnly{}, {Alive{"b", 1, "b:g", {}}}});  // not newer
  CHECK(r.m.state_of("b") == MemberState::kSuspect);
  r.receive("c", Packet{GossipOnly{}, {Alive{"b", 2, "b:g", {}}}});
  CHECK(r.m.state_of("b") == MemberState::kAlive);
  CHECK(r.events_of(Kind::kAlive, "b") == 1);
  r.receive("c", Packet{GossipOnly{}, {Dead{"b", 1, "c"}}});  // older than the refutation
  CHECK(r.m.state_of("b") == MemberState::kAlive);
  r.receive("c", Packet{GossipOnly{}, {Dead{"b", 2, "c"}}});
  CHECK(r.m.state_of("b") == MemberState::kDead);
  CHECK_FALSE(r.m.reachable("b"));
  r.receive("c", Packet{GossipOnly{}, {Dead{"c", 1, "c"}}});  // from itself: a leave
  CHECK(r.m.state_of("c") == MemberState::kLeft);
  CHECK(r.events_of(Kind::kLeft, "c") == 1);
  r.receive("d", Packet{GossipOnly{}, {Alive{"b", 3, "b:g", {}}}});  // back
  CHECK(r.m.state_of("b") == MemberState::kAlive);
  CHECK(r.events_of(Kind::kJoined, "b") == 2);
  r.receive("d", Packet{GossipOnly{}, {Suspect{"unknown", 1, "d"}, Dead{"unknown2", 1, "d"}}});
  CHECK_FALSE(r.m.state_of("unknown").has_value());
  CHECK_FALSE(r.m.state_of("unknown2").has_value());
}

TEST_CASE("confirmations shorten a suspicion to Lifeguard's Min but plain SWIM's is fixed", "[membership]") {
  for (const bool lifeguard : {true, false}) {
    CAPTURE(lifeguard);
    MembershipConfig config;
    config.lifeguard = lifeguard;
    Rig r(config, 5);  // 6 members: Min = 4 s, Max = 24 s, K = 2
    r.auto_ack = true;  // our own probes succeed, so they add no confirmations
    r.run_to(10000);
    r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 1, "c"}}});
    r.receive("d", Packet{GossipOnly{}, {Suspect{"b", 1, "d"}}});
    r.receive("e", Packet{GossipOnly{}, {Suspect{"b", 1, "e"}}});
    r.run_to(13999);
    CHECK(r.m.state_of("b") == MemberState::kSuspect);
    r.run_to(14000);
    CHECK(r.m.state_of("b") == MemberState::kDead);
    CHECK(r.m.stats().deaths_declared == 1);
    REQUIRE(r.events_of(Kind::kDead, "b") == 1);
  }
  // Without confirmations Lifeguard waits for Max.
  Rig r(MembershipConfig{}, 5);
  r.auto_ack = true;
  r.run_to(10000);
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 1, "c"}}});
  r.run_to(33999);
  CHECK(r.m.state_of("b") == MemberState::kSuspect);
  r.run_to(34000);
  CHECK(r.m.state_of("b") == MemberState::kDead);
}

TEST_CASE("a suspicion at a higher incarnation replaces a missed-refuted one, timed from its arrival",
          "[membership]") {
  // b was suspected at incarnation 1, refuted (we missed the Alive(2)) and is suspected
  // again at 2.  The old timer belongs to an answered suspicion: if it kept running, b
  // would die at its end, with incarnation 2, which every member would accept.
  Rig r(MembershipConfig{}, 5);  // 6 members: Min = 4 s, Max = 24 s, K = 2
  r.auto_ack = true;
  r.run_to(10000);
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 1, "c"}}});
  r.receive("d", Packet{GossipOnly{}, {Suspect{"b", 1, "d"}}});
  r.receive("e", Packet{GossipOnly{}, {Suspect{"b", 1, "e"}}});  // K confirmations: dies at 14 s
  r.run_to(13500);
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 2, "c"}}});
  r.run_to(14000);
  CHECK(r.m.state_of("b") == MemberState::kSuspect);  // the old deadline no longer applies
  r.run_to(13500 + 24000 - 1);                        // a lone accuser: Max from the new suspicion
  CHECK(r.m.state_of("b") == MemberState::kSuspect);
  r.receive("c", Packet{GossipOnly{}, {Alive{"b", 3, "b:g", {}}}});
  CHECK(r.m.state_of("b") == MemberState::kAlive);
  CHECK(r.events_of(Kind::kDead, "b") == 0);
}

TEST_CASE("a sender of a refuted Suspect or Dead about another member is sent the newer Alive",
          "[membership]") {
  // c missed b's refutation and keeps gossiping Suspect(b, 1).  Everyone else drops it as
  // stale; unless someone tells c, c's suspicion runs out and it declares b dead.
  Rig r;
  r.receive("d", Packet{GossipOnly{}, {Alive{"b", 2, "b:g", {}}}});  // we hold the refutation
  const auto alive_b_to = [&](const std::string& addr) {
    return std::count_if(r.sent.begin(), r.sent.end(), [&](const Outgoing& o) {
      const auto* p = std::get_if<Packet>(&o.msg);
      return o.to_addr == addr && p != nullptr &&
             std::any_of(p->updates.begin(), p->updates.end(), [](const Update& u) {
               const auto* a = std::get_if<Alive>(&u);
               return a != nullptr && a->node == "b" && a->incarnation == 2;
             });
    });
  };
  r.sent.clear();
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 1, "c"}, Dead{"b", 1, "e"}}});
  CHECK(r.m.state_of("b") == MemberState::kAlive);
  CHECK(alive_b_to("c:g") == 1);  // one answer per packet, however many stale items
  CHECK(r.m.stats().stale_news_answered == 1);
  // News at the incarnation we hold is not stale: it applies, and nobody is answered.
  r.sent.clear();
  r.receive("c", Packet{GossipOnly{}, {Suspect{"b", 2, "c"}}});
  CHECK(r.m.state_of("b") == MemberState::kSuspect);
  CHECK(alive_b_to("c:g") == 0);
  // We only vouch for members we hold alive: a stale Suspect(b, 1) now is not answered.
  r.receive("d", Packet{GossipOnly{}, {Suspect{"b", 1, "d"}}});
  CHECK(r.m.stats().stale_news_answered == 1);
}

TEST_CASE("an Alive for a live id at another address is a conflict, not a merge", "[membership]") {
  Rig r;
  r.receive("c", Packet{GossipOnly{}, {Alive{"b", 5, "elsewhere:g", {}}}});
  CHECK(r.events_of(Kind::kConflict, "b") == 1);
  CHECK(r.m.addr_of("b") == "b:g");
  r.receive("c", Packet{GossipOnly{}, {Alive{"b", 6, "elsewhere:g", {}}}});
  CHECK(r.events_of(Kind::kConflict, "b") == 1);  // reported once per claimed address
  // About ourselves: reported, and we assert our claim once.
  r.receive("c", Packet{GossipOnly{}, {Alive{"a", 3, "impostor:g", {}}}});
  CHECK(r.events_of(Kind::kConflict, "a") == 1);
  CHECK(r.m.incarnation() == 4);
  r.receive("c", Packet{GossipOnly{}, {Alive{"a", 7, "impostor:g", {}}}});
  CHECK(r.m.incarnation() == 4);
  // A dead member's id taken at a new address is a rejoin, not a conflict.
  r.receive("c", Packet{GossipOnly{}, {Dead{"d", 1, "c"}}});
  r.receive("c", Packet{GossipOnly{}, {Alive{"d", 0, "new-d:g", {}}}});
  CHECK(r.m.addr_of("d") == "new-d:g");
  CHECK(r.m.state_of("d") == MemberState::kAlive);
  CHECK(r.events_of(Kind::kConflict, "d") == 0);
}

TEST_CASE("malformed input is dropped and counted, never trusted", "[membership]") {
  Rig r;
  const std::string huge(kMaxIdBytes + 1, 'x');
  const size_t members = r.m.member_count();
  r.m.on_packet(Peer{"", "x:g"}, Packet{Ping{1, "a"}, {}}, r.now_ms);
  r.m.on_packet(Peer{"a", "a:g"}, Packet{Ping{1, "a"}, {}}, r.now_ms);  // claims to be us
  r.drain();
  r.receive("b", Packet{GossipOnly{}, {Alive{"", 1, "x:g", {}}, Alive{"q", 1, "", {}}, Alive{huge, 1, "h:g", {}},
                                       Suspect{"c", 1, ""}, Dead{"c", 1, huge}}});
  r.receive("b", Packet{PingReq{1, "", "x:g", true}, {}});
  r.receive("b", Packet{PingReq{1, "c", "", true}, {}});
  PushPull pp;
  pp.members.push_back(record(huge));
  r.m.on_push_pull(peer("b"), pp, r.now_ms);
  r.drain();
  CHECK(r.m.stats().malformed_dropped == 10);
  CHECK(r.m.member_count() == members);
  CHECK(r.m.state_of("c") == MemberState::kAlive);
  CHECK(r.sent_of<Ack>().empty());
}

TEST_CASE("next_deadline_ms is 0 before any input and never behind the last input after a tick",
          "[membership]") {
  Membership m("a", "a:g", Rig::meta_with_stream("a:s"), 0, MembershipConfig{}, Rng(3));
  CHECK(m.next_deadline_ms() == 0);
  m.on_tick(5000);
  CHECK(m.next_deadline_ms() > 5000);
  CHECK(m.next_deadline_ms() <= 5000 + MembershipConfig{}.probe_interval_ms);
}

TEST_CASE("push-pull replies go to the sender's stream address and joins retry until answered", "[membership]") {
  Membership m("a", "a:g", Rig::meta_with_stream("a:s"), 0, MembershipConfig{}, Rng(4));
  m.join({"seed:s", "a:s"}, 0);  // our own address is skipped
  Outgoing out;
  std::vector<Outgoing> sent;
  while (m.poll_send(out)) sent.push_back(out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].channel == Outgoing::Channel::kStream);
  CHECK(sent[0].to_addr == "seed:s");
  CHECK(std::get<PushPull>(sent[0].msg).join);
  // Nobody answers: retried after join_retry_interval.
  m.on_tick(MembershipConfig{}.join_retry_interval_ms);
  size_t retries = 0;
  while (m.poll_send(out)) retries += out.channel == Outgoing::Channel::kStream && out.to_addr == "seed:s";
  CHECK(retries == 1);
  // A push-pull request from b gets our state back at b's stream address.
  PushPull pp;
  pp.members = {record("b")};
  m.on_push_pull(peer("b"), pp, 2500);
  sent.clear();
  while (m.poll_send(out)) sent.push_back(out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].to_addr == "b:s");
  const auto& reply = std::get<PushPull>(sent[0].msg);
  CHECK_FALSE(reply.reply_wanted);
  REQUIRE(reply.members.size() == 2);
  CHECK(reply.members[0].node == "a");
  CHECK(reply.members[1].node == "b");
  // The join is complete: no more retries.
  m.on_tick(10000);
  while (m.poll_send(out)) CHECK(out.to_addr != "seed:s");
}

TEST_CASE("set_meta rejects what cannot be gossiped, and anything after leave", "[membership]") {
  Rig r;
  MemberMeta meta = r.m.self_meta();
  for (int i = 0; i < 100; ++i) meta.tags.push_back("a-rather-long-tag-" + std::to_string(i));
  const Status s = r.m.set_meta(meta, r.now_ms);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("too large") != std::string::npos);
  CHECK(r.m.incarnation() == 0);
  r.m.leave(r.now_ms);
  CHECK_FALSE(r.m.set_meta(r.m.self_meta(), r.now_ms).ok());
}

TEST_CASE("identity and config checks name what is wrong", "[membership]") {
  const MembershipConfig config;
  CHECK(check_config(config).ok());
  // Every frame carries our id and address: the Packet budget is what is left.
  CHECK(Membership::datagram_budget_bytes("n1", "n1:7946", config) == 1400 - 200 - 16 - 16);
  CHECK(Membership::check_identity("n1", "n1:7946", {}, config).ok());
  const Status long_id = Membership::check_identity(std::string(kMaxIdBytes + 1, 'x'), "x:1", {}, config);
  REQUIRE_FALSE(long_id.ok());
  CHECK(long_id.error().field == "id");
  CHECK_FALSE(Membership::check_identity("n1", "", {}, config).ok());
  MembershipConfig bad = config;
  bad.probe_timeout_ms = bad.probe_interval_ms;
  REQUIRE_FALSE(check_config(bad).ok());
  CHECK(check_config(bad).error().field == "probe_timeout_ms");
  bad = config;
  bad.packet_overhead_bytes = 600;
  CHECK(check_config(bad).error().field == "max_packet_bytes");
}

TEST_CASE("dead members are reclaimed after dead_reclaim_ms", "[membership]") {
  MembershipConfig config;
  config.dead_reclaim_ms = 60000;
  Rig r(config, 3);
  r.auto_ack = true;
  r.receive("c", Packet{GossipOnly{}, {Dead{"b", 1, "c"}}});
  r.run_to(59000);
  CHECK(r.m.state_of("b") == MemberState::kDead);
  r.run_to(70000);  // reaped at the next wrap of the probe order
  CHECK_FALSE(r.m.state_of("b").has_value());
  CHECK(r.m.member_count() == 3);
}

namespace {

// Random but well-typed garbage: ids from a small pool (ourselves, strangers, empty,
// oversized), any incarnation, any primary message.
struct Garbage {
  explicit Garbage(uint64_t seed) : rng(seed) {}

  std::string id() {
    static const char* const pool[] = {"a", "b", "c", "d", "e", "stranger", ""};
    if (rng.chance(0.02)) return std::string(kMaxIdBytes + 1, 'x');
    return pool[rng.below(7)];
  }
  std::string addr(const std::string& id) { return rng.chance(0.1) ? "elsewhere:g" : id + ":g"; }
  uint64_t incarnation() {
    if (rng.chance(0.02)) return rng.next_u64();
    return rng.below(6);
  }
  Update update() {
    const std::string node = id();
    switch (rng.below(3)) {
      case 0: {
        MemberMeta meta;
        meta.stream_addr = node + ":s";
        meta.load.running = static_cast<uint32_t>(rng.below(4));
        return Alive{node, incarnation(), addr(node), meta};
      }
      case 1:
        return Suspect{node, incarnation(), id()};
      default:
        return Dead{node, incarnation(), id()};
    }
  }
  Primary primary() {
    const auto seq = static_cast<uint32_t>(rng.below(40));
    switch (rng.below(5)) {
      case 0: return GossipOnly{};
      case 1: return Ping{seq, rng.chance(0.8) ? "a" : id()};
      case 2: return Ack{seq};
      case 3: {
        const std::string target = id();
        return PingReq{seq, target, addr(target), rng.chance(0.5)};
      }
      default: return Nack{seq};
    }
  }

  Rng rng;
};

}  // namespace

TEST_CASE("random well-typed garbage never breaks an invariant", "[membership]") {
  uint64_t first = 1;
  size_t count = 20;
  if (const char* env = std::getenv("CAESIUM_SEED")) {
    first = std::strtoull(env, nullptr, 10);
    count = 1;
  }
  for (uint64_t seed = first; seed < first + count; ++seed) {
    CAPTURE(seed);
    Garbage g(seed);
    MembershipConfig config;
    config.lifeguard = g.rng.chance(0.7);
    Rig r(config, 3, seed);
    for (int step = 0; step < 2000; ++step) {
      r.now_ms += g.rng.between(0, 300);
      const uint64_t what = g.rng.below(20);
      if (what < 14) {
        Packet p{g.primary(), {}};
        for (uint64_t i = g.rng.below(4); i > 0; --i) p.updates.push_back(g.update());
        const std::string from = g.id();
        r.m.on_packet(Peer{from, g.addr(from)}, p, r.now_ms);
      } else if (what < 16) {
        PushPull pp;
        pp.reply_wanted = g.rng.chance(0.5);
        for (uint64_t i = g.rng.below(5); i > 0; --i) {
          const Update u = g.update();
          MemberRecord rec;
          rec.node = subject_of(u);
          rec.addr = g.addr(rec.node);
          rec.incarnation = g.incarnation();
          rec.state = static_cast<MemberState>(g.rng.below(4));
          rec.meta.stream_addr = rec.node + ":s";
          pp.members.push_back(rec);
        }
        const std::string from = g.id();
        r.m.on_push_pull(Peer{from, g.addr(from)}, pp, r.now_ms);
      } else if (what < 19) {
        r.run_to(r.now_ms);
      } else if (!r.m.has_left()) {
        MemberMeta meta = r.m.self_meta();
        meta.load.queued = static_cast<uint32_t>(g.rng.below(100));
        if (g.rng.chance(0.2)) meta.priority = g.rng.between(0, 5);
        REQUIRE(r.m.set_meta(meta, r.now_ms).ok());
        if (g.rng.chance(0.05)) r.m.leave(r.now_ms);
      }
      r.drain();  // checks invariants and datagram sizes
      REQUIRE(r.m.incarnation() < kMaxIncarnation);
    }
  }
}
