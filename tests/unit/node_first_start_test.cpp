// A node started on an empty data directory: a wiped node abstains on what it may have
// voted on in a previous life (the amnesia horizon, docs/firing.md Amnesia); one the
// operator says never ran (NodeOptions::first_start, `caesium node --first-start`) votes
// at once.  The flag means nothing to a node whose data directory holds its records.
#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "node/core/node.h"
#include "schedule/entry_json.h"

using namespace caesium;

namespace {

constexpr int64_t kT0 = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSkewMs = 3'000;      // horizon = start + 6 s

// n1, the only replica of volume "v".  Storage is durable as soon as it is handed out,
// and kept (key -> value) for a restart; handlers are counted, not run.
struct OneNode {
  std::unique_ptr<node::Node> node;
  Clock clock{1'000, kT0};
  std::map<std::string, std::string> disk;
  int invocations = 0;
  int missed = 0;

  OneNode(bool first_start, const std::map<std::string, std::string>& from) : disk(from) {
    node::NodeOptions o;
    o.id = "n1";
    o.gossip_addr = "127.0.0.1:17201";
    o.stream_addr = "127.0.0.1:17202";
    node::ClusterConfig c;
    c.epoch = 1;
    c.nodes = {{"n1", std::nullopt, {}}};
    c.volumes = {{"v", {"n1"}, {}}};
    o.initial_config = node::normalize(c).value();
    o.scheduler.max_clock_skew_ms = kSkewMs;
    o.first_start = first_start;
    node = std::make_unique<node::Node>(std::move(o), 11);
    std::vector<node::StoredRecord> records;
    for (const auto& [k, v] : disk) records.push_back(node::StoredRecord{k, v});
    REQUIRE(node->start(records, clock).ok());
    drain();
  }

  void drain() {
    node::StorageBatch b;
    while (node->poll_storage(b)) {
      for (auto& op : b.ops) {
        if (op.kind == node::StorageOp::Kind::kPut) disk[op.key] = op.value;
        else disk.erase(op.key);
      }
      node->on_durable(b.seq, clock);
    }
    node::Transmit t;
    while (node->poll_transmit(t)) {}
    node::Invocation inv;
    while (node->poll_invocation(inv)) ++invocations;
    node::NodeEvent e;
    while (node->poll_event(e)) {
      if (e.kind == node::NodeEvent::Kind::kFire && e.fire.kind == schedule::FireEvent::Kind::kMissed) ++missed;
    }
  }

  // An at-most-once one-shot timer due 4 s from now: inside a wiped node's horizon.
  void put_timer() {
    auto e = schedule::entry_from_json(
        nlohmann::json::parse(R"({"timer": {"after": "4s"}, "handler": "tick", "semantics": "at_most_once"})"), "t",
        "once", clock.utc_ms, "n1");
    REQUIRE(e.ok());
    REQUIRE(node->put_entry("v", *e, clock).ok());
    drain();
  }

  void run_for(int64_t ms) {
    for (int64_t t = 0; t < ms; t += 250) {
      clock.mono_ms += 250;
      clock.utc_ms += 250;
      node->on_tick(clock);
      drain();
    }
  }
};

}  // namespace

TEST_CASE("first start: a node that never ran votes at once, an empty data directory otherwise abstains",
          "[node][amnesia]") {
  SECTION("without the flag (a new or wiped node): the occurrence inside the horizon never runs") {
    OneNode n(false, {});
    CHECK(n.node->started_empty());
    CHECK(n.node->amnesia_horizon_utc_ms() == kT0 + 2 * kSkewMs);
    n.put_timer();
    // No vote for it, ever: missed once its misfire window (10 min) passed.
    n.run_for(11 * 60'000);
    CHECK(n.invocations == 0);
    CHECK(n.missed == 1);
  }
  SECTION("--first-start: no horizon, and it runs") {
    OneNode n(true, {});
    CHECK(n.node->started_empty());
    CHECK(n.node->amnesia_horizon_utc_ms() == 0);
    n.put_timer();
    n.run_for(11 * 60'000);
    CHECK(n.invocations == 1);
    CHECK(n.missed == 0);
  }
}

TEST_CASE("first start: the flag means nothing once the data directory holds the node's records", "[node][amnesia]") {
  // A wiped node's first start records its horizon; a later start with --first-start (a
  // script that always passes it) keeps it.
  std::map<std::string, std::string> disk;
  {
    OneNode wiped(false, {});
    disk = wiped.disk;
  }
  OneNode again(true, disk);
  CHECK_FALSE(again.node->started_empty());
  CHECK(again.node->amnesia_horizon_utc_ms() == kT0 + 2 * kSkewMs);
  again.put_timer();
  again.run_for(11 * 60'000);
  CHECK(again.invocations == 0);
  CHECK(again.missed == 1);

  // And a first start records no horizon for a later start to read.
  std::map<std::string, std::string> fresh;
  {
    OneNode first(true, {});
    fresh = first.disk;
  }
  OneNode restarted(false, fresh);
  CHECK_FALSE(restarted.node->started_empty());
  CHECK(restarted.node->amnesia_horizon_utc_ms() == 0);
}

namespace {

// Two nodes wired to each other by hand: every transmit of one reaches the other (by
// address), at once.  Storage is durable as soon as it is handed out.
struct Pair {
  struct One {
    std::unique_ptr<node::Node> node;
    std::string gossip, stream;
    std::vector<std::string> warnings;
  };
  std::map<std::string, One> nodes;
  Clock clock{1'000, kT0};

  static node::NodeOptions options(const std::string& id, bool first_start) {
    node::NodeOptions o;
    o.id = id;
    o.gossip_addr = "127.0.0.1:" + std::string(id == "n1" ? "17301" : "17311");
    o.stream_addr = "127.0.0.1:" + std::string(id == "n1" ? "17302" : "17312");
    o.seeds = {"127.0.0.1:17302", "127.0.0.1:17312"};  // stream addresses
    node::ClusterConfig c;
    c.epoch = 1;
    c.nodes = {{"n1", std::nullopt, {}}, {"n2", std::nullopt, {}}};
    c.volumes = {{"v", {"n1", "n2"}, {}}};
    o.initial_config = node::normalize(c).value();
    o.first_start = first_start;
    return o;
  }

  void start(const std::string& id, bool first_start, uint64_t seed) {
    node::NodeOptions o = options(id, first_start);
    One one{std::make_unique<node::Node>(o, seed), o.gossip_addr, o.stream_addr, {}};
    REQUIRE(one.node->start({}, clock).ok());
    nodes[id] = std::move(one);
  }

  void run_for(int64_t ms) {
    for (int64_t t = 0; t < ms; t += 10) {
      clock.mono_ms += 10;
      clock.utc_ms += 10;
      for (auto& [id, n] : nodes) n.node->on_tick(clock);
      for (int round = 0; round < 20; ++round) {
        bool moved = false;
        for (auto& [id, n] : nodes) {
          node::StorageBatch b;
          while (n.node->poll_storage(b)) n.node->on_durable(b.seq, clock);
          node::Invocation inv;
          while (n.node->poll_invocation(inv)) {}
          node::NodeEvent e;
          while (n.node->poll_event(e)) {
            if (e.kind == node::NodeEvent::Kind::kWarning) n.warnings.push_back(e.text);
          }
          node::Transmit tx;
          while (n.node->poll_transmit(tx)) {
            moved = true;
            for (auto& [to_id, to] : nodes) {
              if (tx.channel == node::Channel::kDatagram && tx.to_addr == to.gossip) {
                to.node->on_datagram(n.gossip, tx.bytes, clock);
              } else if (tx.channel == node::Channel::kStream && tx.to_addr == to.stream) {
                to.node->on_stream(n.stream, tx.bytes, clock);
              }
            }
          }
        }
        if (!moved) break;
      }
    }
  }
};

}  // namespace

TEST_CASE("first start: given to a node the cluster knew before, it is taken back", "[node][amnesia]") {
  Pair p;
  p.start("n1", true, 21);
  p.start("n2", true, 22);
  p.run_for(5'000);
  REQUIRE(p.nodes["n2"].node->amnesia_horizon_utc_ms() == 0);
  REQUIRE(p.nodes["n2"].warnings.empty());
  // n2 loses its disk and is started again with --first-start (an operator's mistake): n1
  // still holds it alive under its previous process's meta, at the incarnation it restarts at.
  p.nodes.erase("n2");
  p.start("n2", true, 23);
  CHECK(p.nodes["n2"].node->amnesia_horizon_utc_ms() == 0);
  p.run_for(3'000);
  const int64_t horizon = p.nodes["n2"].node->amnesia_horizon_utc_ms();
  CHECK(horizon > kT0 + 5'000);
  CHECK(horizon <= p.clock.utc_ms + 2 * node::NodeOptions{}.scheduler.max_clock_skew_ms);
  REQUIRE(p.nodes["n2"].warnings.size() == 1);
  CHECK(p.nodes["n2"].warnings[0].find("--first-start") != std::string::npos);
  // n1, which did run only once, is not touched.
  CHECK(p.nodes["n1"].node->amnesia_horizon_utc_ms() == 0);
  CHECK(p.nodes["n1"].warnings.empty());
}
