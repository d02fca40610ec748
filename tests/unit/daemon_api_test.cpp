// The API's request handling without sockets: ApiHandler over a real Node core driven by
// hand (tests/unit/daemon_api_fixture.h).  Every route, every error code, auth, limits,
// the forwarding decision, and the durability wait a write asks for.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "node/daemon/api/api.h"
#include "node/daemon/api/api_internal.h"
#include "tests/unit/daemon_api_fixture.h"
#include "wire/caesium.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::api_request;
using nlohmann::json;

namespace {

json body_of(const ServerResponse& r) { return json::parse(r.body); }

const char* kEntry = R"({"timer": {"interval": "20s", "repeat_for": "2m"}, "handler": "tick", "payload": "hi"})";
const std::string kEntryPath = "/v1/volumes/v/entities/acme/schedule/report";

struct Fixture {
  test::ApiTestNode n;
  ApiHandler h{test::api_test_options(), n.backend()};

  ApiAction run(const std::string& method, const std::string& target, const std::string& body = {}, bool token = true) {
    return h.handle(api_request(method, target, body, token));
  }
  // A write: its answer once durable.
  ServerResponse write(const std::string& method, const std::string& target, const std::string& body = {}) {
    ApiAction a = run(method, target, body);
    if (a.kind != ApiAction::Kind::kAwaitWrite) return a.response;
    REQUIRE(a.wait.durable_seq > n.backend().durable_seq());  // not durable before the disk says so
    n.settle();
    REQUIRE(n.backend().durable_seq() >= a.wait.durable_seq);
    return a.response;
  }
};

}  // namespace

TEST_CASE("api auth: no token configured refuses everything but healthz and metrics") {
  test::ApiTestNode n;
  ApiOptions o = test::api_test_options();
  o.token.clear();
  ApiHandler h(o, n.backend());
  ApiAction a = h.handle(api_request("GET", "/v1/status"));
  CHECK(a.response.status == 401);
  REQUIRE(a.response.header("WWW-Authenticate") != nullptr);
  CHECK(a.response.header("WWW-Authenticate")->find("Bearer") == 0);
  CHECK(body_of(a.response)["error"].get<std::string>().find("no API token") != std::string::npos);
  CHECK(h.handle(api_request("GET", "/healthz", {}, false)).response.status == 200);
  CHECK(h.handle(api_request("GET", "/metrics", {}, false)).response.status == 200);
  CHECK(h.counters().auth_failures == 1);
}

TEST_CASE("api auth: bearer token checked, wrong or missing token is 401") {
  Fixture f;
  CHECK(f.run("GET", "/v1/status").response.status == 200);
  ApiAction missing = f.run("GET", "/v1/status", {}, false);
  CHECK(missing.response.status == 401);
  CHECK(*missing.response.header("www-authenticate") == R"(Bearer realm="caesium")");
  ServerRequest wrong = api_request("GET", "/v1/status", {}, false);
  wrong.headers.emplace_back("authorization", "Bearer s3cret-tokeN");
  ApiAction w = f.h.handle(wrong);
  CHECK(w.response.status == 401);
  CHECK(w.response.header("WWW-Authenticate")->find("invalid_token") != std::string::npos);
  ServerRequest lower = api_request("GET", "/v1/status", {}, false);
  lower.headers.emplace_back("authorization", "bearer   s3cret-token  ");
  CHECK(f.h.handle(lower).response.status == 200);
  ServerRequest basic = api_request("GET", "/v1/status", {}, false);
  basic.headers.emplace_back("authorization", "Basic czNjcmV0LXRva2Vu");
  CHECK(f.h.handle(basic).response.status == 401);
  CHECK(f.h.counters().auth_failures == 3);
}

TEST_CASE("api auth: token comparison and bearer parsing") {
  CHECK(token_matches("abc", "abc"));
  CHECK_FALSE(token_matches("abc", "abd"));
  CHECK_FALSE(token_matches("abc", "abcd"));
  CHECK_FALSE(token_matches("", ""));  // no token configured matches nothing
  CHECK(bearer_token("Bearer x")  == std::optional<std::string>("x"));
  CHECK(bearer_token("BEARER x") == std::optional<std::string>("x"));
  CHECK_FALSE(bearer_token("Bearer "));
  CHECK_FALSE(bearer_token("Bearerx"));
  CHECK_FALSE(bearer_token("Token x"));
}

TEST_CASE("api routes: unknown paths, methods and escapes") {
  Fixture f;
  CHECK(f.run("GET", "/nope").response.status == 404);
  CHECK(f.run("GET", "/v1/nope").response.status == 404);
  CHECK(f.run("GET", "/v1/volumes/v/wat").response.status == 404);
  CHECK(f.run("GET", "/v1/volumes/v/entities/a/schedule/b/c").response.status == 404);
  ApiAction m = f.run("POST", kEntryPath, kEntry);
  CHECK(m.response.status == 405);
  CHECK(*m.response.header("Allow") == "GET, PUT, DELETE");
  CHECK(f.run("DELETE", "/v1/status").response.status == 405);
  CHECK(f.run("POST", "/v1/volumes/v/entries").response.status == 405);
  ApiAction bad = f.run("GET", "/v1/volumes/v/entities/a%zz/schedule/b");
  CHECK(bad.response.status == 400);
  CHECK(body_of(bad.response)["field"] == "path");
  CHECK(f.run("GET", "/v1/volumes/v/entities/a%00b/schedule/c").response.status == 400);
}

TEST_CASE("api status: members, volumes with master and replica flag, epoch") {
  Fixture f;
  ApiAction a = f.run("GET", "/v1/status");
  REQUIRE(a.response.status == 200);
  json s = body_of(a.response);
  CHECK(s["node"] == "n1");
  CHECK(s["config_epoch"] == 1);
  REQUIRE(s["members"].size() >= 1);
  CHECK(s["members"][0]["id"] == "n1");
  CHECK(s["members"][0]["state"] == "alive");
  CHECK(s["members"][0]["protocol_version"] == gossip::kProtocolVersion);  // what mixed-version peers use
  REQUIRE(s["volumes"].size() == 3);
  CHECK(s["volumes"][0]["name"] == "far");
  CHECK(s["volumes"][0]["replica"] == false);
  CHECK(s["volumes"][0]["master"] == nullptr);  // not a replica, and none of its replicas is alive here
  CHECK_FALSE(s["volumes"][0].contains("records"));
  CHECK(s["volumes"][1]["master"] == "n1");
  CHECK(s["volumes"][2]["name"] == "v");
  CHECK(s["volumes"][2]["replica"] == true);
  CHECK(s["pending"].contains("running_invocations"));
}

TEST_CASE("api entries: put creates (201) then replaces (200), answered once durable") {
  Fixture f;
  ServerResponse created = f.write("PUT", kEntryPath, kEntry);
  CHECK(created.status == 201);
  CHECK(*created.header("Location") == kEntryPath);
  json e = body_of(created);
  CHECK(e["entity"] == "acme");
  CHECK(e["name"] == "report");
  CHECK(e["origin"] == "n1");
  CHECK(e["timer"]["interval"] == "20s");
  CHECK(e["next"] == format_rfc3339_utc(test::kApiTestStartUtcMs + 20'000));
  ServerResponse replaced = f.write("PUT", kEntryPath, R"({"cron": "0 9 * * *", "handler": "tick"})");
  CHECK(replaced.status == 200);
  CHECK(replaced.header("Location") == nullptr);
  ApiAction got = f.run("GET", kEntryPath);
  REQUIRE(got.response.status == 200);
  CHECK(body_of(got.response)["cron"] == "0 9 * * *");
}

TEST_CASE("api entries: GET then PUT of the same document round-trips") {
  Fixture f;
  f.write("PUT", kEntryPath, kEntry);
  ApiAction got = f.run("GET", kEntryPath);
  ServerResponse again = f.write("PUT", kEntryPath, got.response.body);
  CHECK(again.status == 200);
}

TEST_CASE("api entries: bad bodies and paths are 400 naming the field") {
  Fixture f;
  auto err = [&](const std::string& target, const std::string& body) {
    ApiAction a = f.run("PUT", target, body);
    CHECK(a.kind == ApiAction::Kind::kRespond);
    return std::make_pair(a.response.status, body_of(a.response).value("field", ""));
  };
  CHECK(err(kEntryPath, "{not json") == std::make_pair(400, std::string("body")));
  CHECK(err(kEntryPath, "[1,2]") == std::make_pair(400, std::string("body")));
  CHECK(err(kEntryPath, R"({"handler": "x"})").second == "cron");
  CHECK(err(kEntryPath, R"({"cron": "61 * * * *", "handler": "x"})").second == "cron");
  CHECK(err(kEntryPath, R"({"cron": "* * * * *", "handler": "x", "colour": "red"})").second == "colour");
  CHECK(err(kEntryPath, R"({"cron": "* * * * *", "handler": "x", "name": "other"})").second == "name");
  CHECK(err("/v1/volumes/v/entities/a b/schedule/x", kEntry).second == "entity");
  CHECK(err("/v1/volumes/v/entities/a/schedule/..", kEntry).second == "name");
  CHECK(err("/v1/volumes/bad!vol/entities/a/schedule/x", kEntry).second == "volume");
  CHECK(err(kEntryPath + "?w=0", kEntry) == std::make_pair(400, std::string("w")));
  CHECK(err(kEntryPath + "?w=2", kEntry) == std::make_pair(400, std::string("w")));  // "v" has one replica
  CHECK(err(kEntryPath + "?w=x", kEntry).second == "w");
  CHECK(err(kEntryPath + "?w=%4", kEntry).second == "query");
  ApiAction unknown = f.run("PUT", "/v1/volumes/nosuch/entities/a/schedule/x", kEntry);
  CHECK(unknown.response.status == 404);
  CHECK(body_of(unknown.response)["field"] == "volume");
}

TEST_CASE("api entries: get and delete of an absent entry are 404, delete waits for durability") {
  Fixture f;
  CHECK(f.run("GET", kEntryPath).response.status == 404);
  CHECK(f.run("DELETE", kEntryPath).response.status == 404);
  f.write("PUT", kEntryPath, kEntry);
  ServerResponse gone = f.write("DELETE", kEntryPath);
  CHECK(gone.status == 204);
  CHECK(gone.body.empty());
  CHECK(f.run("GET", kEntryPath).response.status == 404);
}

TEST_CASE("api entries: ?w=2 waits for two replicas of the written version") {
  Fixture f;
  ApiAction a = f.run("PUT", "/v1/volumes/pair/entities/acme/schedule/x?w=2", kEntry);
  REQUIRE(a.kind == ApiAction::Kind::kAwaitWrite);
  CHECK(a.wait.replicas == 2);
  CHECK(a.wait.volume == "pair");
  CHECK(a.wait.key == "acme/caesium/schedule/x");
  CHECK(a.wait.deadline_mono_ms == f.n.clock().mono_ms + f.h.options().write_timeout_ms);
  f.n.settle();
  // n2 never acknowledged: only this node holds it.
  CHECK(f.n.backend().replica_acks(a.wait.volume, a.wait.key, a.wait.version) == 1);
  ServerResponse t = f.h.write_timeout_response(a.wait, true, 1);
  CHECK(t.status == 503);
  json j = body_of(t);
  CHECK(j["durable"] == true);
  CHECK(j["replicas"] == 1);
  CHECK(j["wanted"] == 2);
  CHECK(f.h.counters().write_timeouts == 1);
}

TEST_CASE("api entries: list pages with a cursor, prefix filter and limits") {
  Fixture f;
  for (const char* who : {"acme", "acme2", "beta"}) {
    for (const char* name : {"a", "b"}) {
      f.write("PUT", std::string("/v1/volumes/v/entities/") + who + "/schedule/" + name, kEntry);
    }
  }
  ApiAction p1 = f.run("GET", "/v1/volumes/v/entries?limit=4");
  REQUIRE(p1.response.status == 200);
  json j1 = body_of(p1.response);
  REQUIRE(j1["entries"].size() == 4);
  CHECK(j1["entries"][0]["key"] == "acme/caesium/schedule/a");
  REQUIRE(j1["next"].is_string());
  ApiAction p2 = f.run("GET", "/v1/volumes/v/entries?limit=4&after=" + percent_encode(j1["next"].get<std::string>()));
  json j2 = body_of(p2.response);
  REQUIRE(j2["entries"].size() == 2);
  CHECK(j2["entries"][1]["key"] == "beta/caesium/schedule/b");
  CHECK(j2["next"].is_null());
  json pre = body_of(f.run("GET", "/v1/volumes/v/entries?prefix=acme").response);
  CHECK(pre["entries"].size() == 4);  // acme and acme2: a prefix of the entity
  CHECK(body_of(f.run("GET", "/v1/volumes/v/entries?prefix=acme2").response)["entries"].size() == 2);
  CHECK(f.run("GET", "/v1/volumes/v/entries?limit=0").response.status == 400);
  CHECK(f.run("GET", "/v1/volumes/v/entries?limit=-1").response.status == 400);
  ApiOptions small = test::api_test_options();
  small.max_list_limit = 3;
  ApiHandler h3(small, f.n.backend());
  json capped = body_of(h3.handle(api_request("GET", "/v1/volumes/v/entries?limit=1000")).response);
  CHECK(capped["entries"].size() == 3);
  CHECK(capped["next"].is_string());
}

TEST_CASE("api history: 404 without entry or records, empty list for a fresh entry") {
  Fixture f;
  CHECK(f.run("GET", kEntryPath + "/history").response.status == 404);
  f.write("PUT", kEntryPath, kEntry);
  ApiAction a = f.run("GET", kEntryPath + "/history?limit=5");
  REQUIRE(a.response.status == 200);
  CHECK(body_of(a.response)["occurrences"].empty());
  CHECK(f.run("GET", kEntryPath + "/history?limit=zero").response.status == 400);
  CHECK(f.run("PUT", kEntryPath + "/history").response.status == 405);
}

TEST_CASE("api history json: outcome, attempts, runs and duplicates") {
  node::Node::OccurrenceHistory h;
  h.occ.entry_key = "acme/caesium/schedule/report";
  h.occ.scheduled_utc_ms = test::kApiTestStartUtcMs;
  schedule::OwnerRecord o;
  o.owner = {"n1", 0xabc};
  o.path = schedule::FirePath::kTakeover;
  o.attempts = {{1, "f1", "n2", test::kApiTestStartUtcMs + 5}, {2, "f2", "n3", test::kApiTestStartUtcMs + 9}};
  h.owners.push_back(o);
  schedule::WorkerRecord w1;
  w1.worker = {"n2", 1};
  w1.attempt = 1;
  w1.state = schedule::WorkerState::kFailed;
  w1.detail = "exit 3";
  schedule::WorkerRecord w2 = w1;
  w2.worker = {"n3", 2};
  w2.attempt = 2;
  w2.state = schedule::WorkerState::kCompleted;
  w2.possible_duplicate = true;
  h.workers = {{"f1", w1}, {"f2", w2}};
  json j = api_detail::history_json({h});
  REQUIRE(j.size() == 1);
  CHECK(j[0]["outcome"] == "completed");
  CHECK(j[0]["runs"] == 2);
  CHECK(j[0]["duplicates"] == 1);
  CHECK(j[0]["owners"][0]["path"] == "takeover");
  CHECK(j[0]["owners"][0]["boot"] == "0000000000000abc");
  CHECK(j[0]["owners"][0]["attempts"][1]["worker"] == "n3");
  CHECK(j[0]["attempts"][0]["state"] == "failed");
  CHECK(j[0]["attempts"][0]["detail"] == "exit 3");
  CHECK(j[0]["attempts"][1]["possible_duplicate"] == true);
  CHECK(j[0]["scheduled"] == format_rfc3339_utc(test::kApiTestStartUtcMs));

  node::Node::OccurrenceHistory lost = h;
  lost.workers = {{"f1", w1}};
  lost.workers[0].second.state = schedule::WorkerState::kAccepted;
  lost.owners[0].outcome = schedule::OwnerOutcome::kLost;
  lost.owners[0].reason = "owner vanished";
  json l = api_detail::history_json({lost});
  CHECK(l[0]["outcome"] == "lost");  // the owner's verdict beats a worker record still "accepted"
  CHECK(l[0]["owners"][0]["reason"] == "owner vanished");
  CHECK(l[0]["duplicates"] == 0);
  node::Node::OccurrenceHistory none;
  CHECK(api_detail::history_json({none})[0]["outcome"] == "pending");
}

TEST_CASE("api config: get, 409 for a stale epoch, 400 for garbage, apply a new epoch") {
  Fixture f;
  ApiAction g = f.run("GET", "/v1/config");
  REQUIRE(g.response.status == 200);
  json c = body_of(g.response);
  CHECK(c["epoch"] == 1);
  ApiAction stale = f.run("PUT", "/v1/config", c.dump());
  CHECK(stale.response.status == 409);
  CHECK(body_of(stale.response)["current_epoch"] == 1);
  CHECK(body_of(stale.response)["field"] == "epoch");
  CHECK(f.run("PUT", "/v1/config", "{").response.status == 400);
  CHECK(f.run("PUT", "/v1/config", R"({"epoch": 5})").response.status == 400);
  json next = json::parse(test::api_test_config(2).encode());
  next["volumes"][2]["replicas"] = {"n1", "n3"};  // "v" gains a replica
  // This node is alone: n2 and n3 are not alive in its view, so it is not on the majority
  // side of the cluster and may not change the config (the other side could apply
  // another epoch 2).  503, naming them; forcing applies it.
  ApiAction alone = f.run("PUT", "/v1/config", next.dump());
  CHECK(alone.response.status == 503);
  CHECK(body_of(alone.response)["field"] == "nodes");
  CHECK(body_of(alone.response)["error"].get<std::string>().find("not alive: n2, n3") != std::string::npos);
  CHECK(f.n.node().config().epoch == 1);
  ServerResponse applied = f.write("PUT", "/v1/config?force=true", next.dump());
  REQUIRE(applied.status == 200);
  CHECK(body_of(applied)["epoch"] == 2);
  CHECK(f.n.node().config().epoch == 2);
  CHECK(f.n.node().config().volume("v")->replicas == std::vector<std::string>{"n1", "n3"});
}

TEST_CASE("api config: a replica change that old and new majorities could miss is 409, a non-node replica 400") {
  Fixture f;
  json next = json::parse(test::api_test_config(2).encode());
  REQUIRE(next["volumes"][0]["name"] == "far");
  next["volumes"][0]["replicas"] = {"n1"};  // "far": [n2, n3] -> [n1] in one step
  ApiAction unsafe = f.run("PUT", "/v1/config", next.dump());
  CHECK(unsafe.response.status == 409);
  CHECK(body_of(unsafe.response)["field"] == "volumes.previous_replicas");
  CHECK(body_of(unsafe.response)["error"].get<std::string>().find("previous_replicas = [n2,n3]") != std::string::npos);
  CHECK(f.n.node().config().epoch == 1);

  json ghost = json::parse(test::api_test_config(2).encode());
  ghost["volumes"][1]["replicas"] = {"n1", "n2", "n9"};
  ApiAction bad = f.run("PUT", "/v1/config", ghost.dump());
  CHECK(bad.response.status == 400);
  CHECK(body_of(bad.response)["field"] == "volumes.replicas");
  CHECK(body_of(bad.response)["error"].get<std::string>().find("'n9'") != std::string::npos);

  // The same change through a joint epoch: [n1] with previous [n2, n3], then [n1] alone.
  // n2 and n3 have never been heard from, so neither is known to hold epoch 1: a node
  // cut off since an epoch before could still gather a majority of "far" under older
  // sets, and the change is refused until they are back or it is forced.
  next["volumes"][0]["previous_replicas"] = {"n2", "n3"};
  ApiAction unheard = f.run("PUT", "/v1/config", next.dump());
  CHECK(unheard.response.status == 409);
  CHECK(body_of(unheard.response)["field"] == "epoch");
  CHECK(body_of(unheard.response)["error"].get<std::string>().find("far: n2, n3 of [n2,n3]") != std::string::npos);
  CHECK(f.n.node().config().epoch == 1);
  REQUIRE(f.write("PUT", "/v1/config?force=true", next.dump()).status == 200);
  CHECK(f.n.node().config().volume("far")->previous_replicas == std::vector<std::string>{"n2", "n3"});
  // Dropping n2 and n3 needs n1 to hold the volume's entries first: it has never
  // reconciled "far" with them (alone here), so that is refused, and nothing changes.
  next["epoch"] = 3;
  next["volumes"][0].erase("previous_replicas");
  ApiAction early = f.run("PUT", "/v1/config", next.dump());
  CHECK(early.response.status == 409);
  CHECK(body_of(early.response)["field"] == "volumes.replicas");
  CHECK(body_of(early.response)["error"].get<std::string>().find("far: n1") != std::string::npos);
  CHECK(f.n.node().config().epoch == 2);
  CHECK(f.n.node().config().volume("far")->previous_replicas == std::vector<std::string>{"n2", "n3"});
  CHECK(body_of(early.response)["error"].get<std::string>().find("--force") != std::string::npos);
  CHECK(f.run("PUT", "/v1/config?force=maybe", next.dump()).response.status == 400);
  // Forcing skips the fill check, never the majority check.
  json forced_unsafe = next;
  forced_unsafe["volumes"][1]["replicas"] = {"n3"};  // "pair": [n1,n2] -> [n3]
  CHECK(f.run("PUT", "/v1/config?force=true", forced_unsafe.dump()).response.status == 409);
  CHECK(f.n.node().config().epoch == 2);
  // Keeping all three removes nobody, so the fill check passes; n2 and n3 are still
  // unheard of, so it takes force here.  (tests/sim/config_replace_replica.toml runs the
  // whole change on a cluster, where the new replica fills and every node adopts.)
  next["volumes"][0]["replicas"] = {"n1", "n2", "n3"};
  ApiAction keep = f.run("PUT", "/v1/config", next.dump());
  CHECK(keep.response.status == 409);
  CHECK(body_of(keep.response)["field"] == "epoch");
  REQUIRE(f.write("PUT", "/v1/config?force=true", next.dump()).status == 200);
  CHECK(f.n.node().config().volume("far")->replicas == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(f.n.node().config().volume("far")->previous_replicas.empty());
  // n2 and n3 lost for good: removing them is refused until forced.
  next["epoch"] = 4;
  next["volumes"][0]["replicas"] = {"n1", "n2"};
  CHECK(f.run("PUT", "/v1/config", next.dump()).response.status == 409);
  REQUIRE(f.write("PUT", "/v1/config?force=true", next.dump()).status == 200);
  CHECK(f.n.node().config().volume("far")->replicas == std::vector<std::string>{"n1", "n2"});
}

TEST_CASE("cluster config: which replica changes may happen in one step") {
  using V = std::vector<std::string>;
  CHECK(node::majorities_intersect(V{"a", "b", "c"}, V{"a", "b", "c"}));
  CHECK(node::majorities_intersect(V{"a", "b", "c"}, V{"a", "b", "c", "d"}));       // add one
  CHECK(node::majorities_intersect(V{"a", "b", "c"}, V{"a", "b"}));                 // remove one
  CHECK(node::majorities_intersect(V{"a", "b", "c", "d", "e"}, V{"a", "b", "c", "d"}));
  CHECK(node::majorities_intersect(V{"a", "b"}, V{"b", "c"}));                      // a majority of two is both
  CHECK(node::majorities_intersect(V{"a"}, V{"a", "b"}));
  CHECK_FALSE(node::majorities_intersect(V{"a", "b", "c"}, V{"a", "b", "d"}));      // replace one: {a,c} / {b,d}
  CHECK_FALSE(node::majorities_intersect(V{"a", "b", "c"}, V{"a", "b", "c", "d", "e"}));  // add two: {a,b} / {c,d,e}
  CHECK_FALSE(node::majorities_intersect(V{"a"}, V{"b"}));
  CHECK_FALSE(node::majorities_intersect(V{"a", "b", "c", "d"}, V{"c", "d", "e", "f"}));

  auto config = [](V replicas, V previous) {
    node::ClusterConfig c;
    c.epoch = 1;
    for (const char* id : {"a", "b", "c", "d", "e"}) c.nodes.push_back({id, std::nullopt, {}});
    c.volumes = {{"v", std::move(replicas), std::move(previous)}};
    return node::normalize(c).value();
  };
  const auto old = config({"a", "b", "c"}, {});
  const auto joint = config({"a", "b", "d"}, {"a", "b", "c"});
  const auto replaced = config({"a", "b", "d"}, {});
  CHECK_FALSE(node::check_config_change(old, replaced).ok());
  CHECK(node::check_config_change(old, joint).ok());
  CHECK(node::check_config_change(joint, replaced).ok());
  CHECK(node::check_config_change(joint, old).ok());  // back out of the change
  CHECK_FALSE(node::check_config_change(joint, config({"a", "b", "e"}, {})).ok());
  CHECK_FALSE(node::check_config_change(old, config({"d", "e"}, {})).ok());
  // A volume that is new, or gone, has nothing to meet.
  node::ClusterConfig more = old;
  more.volumes.push_back({"w", {"d", "e"}, {}});
  CHECK(node::check_config_change(old, node::normalize(more).value()).ok());
  CHECK(node::check_config_change(more, old).ok());
  CHECK(node::check_config_replicas(old).ok());
  CHECK_FALSE(node::check_config_replicas(config({"a", "z"}, {})).ok());
  CHECK_FALSE(node::check_config_replicas(config({"a"}, {"z"})).ok());
}

TEST_CASE("api forwarding: the order prefers the master, skips the unreachable and self") {
  std::vector<ReplicaContact> c = {{"n4", "127.0.0.1:4", true, false},
                                   {"n2", "127.0.0.1:2", true, false},
                                   {"n3", "127.0.0.1:3", true, true},
                                   {"n5", "", true, false},
                                   {"n6", "127.0.0.1:6", false, false},
                                   {"n1", "127.0.0.1:1", true, false}};
  auto order = forward_order(c, "n1");
  REQUIRE(order.size() == 3);
  CHECK(order[0].node == "n3");
  CHECK(order[1].node == "n2");
  CHECK(order[2].node == "n4");
}

TEST_CASE("api forwarding: a volume this node does not replicate is forwarded, once") {
  Fixture f;
  const std::string path = "/v1/volumes/far/entities/acme/schedule/x";
  ApiAction none = f.run("GET", path);  // n2 and n3 are unknown to this node
  CHECK(none.response.status == 503);
  f.n.contacts["far"] = {{"n2", "127.0.0.1:2", true, false}, {"n3", "127.0.0.1:3", true, true}};
  ServerRequest req = api_request("PUT", path + "?w=2", kEntry);
  req.headers.emplace_back("content-type", "application/json");
  ApiAction fw = f.h.handle(req);
  REQUIRE(fw.kind == ApiAction::Kind::kForward);
  CHECK(fw.volume == "far");
  REQUIRE(fw.targets.size() == 2);
  CHECK(fw.targets[0].node == "n3");
  auto headers = f.h.forward_headers(req);
  CHECK(headers.size() == 2);
  CHECK(headers[0] == std::make_pair(std::string("Authorization"), std::string("Bearer s3cret-token")));
  CHECK(headers[1] == std::make_pair(std::string("X-Caesium-Forwarded"), std::string("n1")));
  ServerRequest again = api_request("GET", path);
  again.headers.emplace_back("x-caesium-forwarded", "n9");
  ApiAction loop = f.h.handle(again);
  CHECK(loop.kind == ApiAction::Kind::kRespond);
  CHECK(loop.response.status == 503);
  CHECK(body_of(loop.response)["error"].get<std::string>().find("forwarded by node n9") != std::string::npos);
  // Auth is checked before forwarding; bad input about the request itself too.
  CHECK(f.run("GET", path, {}, false).response.status == 401);
  CHECK(f.run("GET", "/v1/volumes/far/entities/a%20b/schedule/x").response.status == 400);
  CHECK(f.h.counters().forwarded == 1);
  ServerResponse failed = f.h.forward_failed_response("far", {"n3 (127.0.0.1:3): refused", "n2 (127.0.0.1:2): refused"});
  CHECK(failed.status == 503);
  CHECK(body_of(failed)["error"].get<std::string>().find("n2 (127.0.0.1:2): refused") != std::string::npos);
}

TEST_CASE("api metrics and healthz: no token needed unless configured") {
  Fixture f;
  ApiAction m = f.run("GET", "/metrics", {}, false);
  REQUIRE(m.response.status == 200);
  CHECK(m.response.content_type.find("text/plain; version=0.0.4") == 0);
  CHECK(m.response.body.find("caesium_node_info{node=\"n1\"} 1") != std::string::npos);
  CHECK(body_of(f.run("GET", "/healthz", {}, false).response)["node"] == "n1");
  ApiOptions o = test::api_test_options();
  o.metrics_requires_token = true;
  ApiHandler h(o, f.n.backend());
  CHECK(h.handle(api_request("GET", "/metrics", {}, false)).response.status == 401);
  CHECK(h.handle(api_request("GET", "/metrics")).response.status == 200);
}

// The daemon takes fire events through the Node's fire observer (counted and logged as
// they happen), not through the event queue.  Volume "v" has n1 as its only replica, so
// its occurrence runs here: due, granted, owned, dispatched, accepted.
TEST_CASE("node: fire events go to the fire observer, and to the queue only without one") {
  using K = schedule::FireEvent::Kind;
  for (const bool observed : {true, false}) {
    INFO((observed ? "with a fire observer" : "without one"));
    Fixture f;
    std::vector<K> seen;
    if (observed) f.n.node().set_fire_observer([&](const schedule::FireEvent& e) { seen.push_back(e.kind); });
    REQUIRE(f.write("PUT", kEntryPath, kEntry).status == 201);
    for (int s = 0; s < 30; ++s) {  // the first occurrence is due 20 s after the write
      f.n.advance(1'000);
      f.n.settle();
    }
    const std::vector<K>& got = observed ? seen : f.n.queued_fire_events;
    CHECK((observed ? f.n.queued_fire_events : seen).empty());
    for (K want : {K::kDue, K::kOwned, K::kDispatched, K::kAccepted}) {
      CHECK(std::count(got.begin(), got.end(), want) == 1);
    }
  }
}

TEST_CASE("cluster config: a config that lists no nodes is not refused for want of a majority of them") {
  node::NodeOptions o;
  o.id = "n1";
  o.gossip_addr = "127.0.0.1:17001";
  o.stream_addr = "127.0.0.1:17002";
  o.api_addr = "127.0.0.1:17003";
  o.initial_config.epoch = 1;  // a [cluster] section with neither nodes nor volumes
  node::Node n(std::move(o), 7);
  const Clock now{1'000, test::kApiTestStartUtcMs};
  REQUIRE(n.start({}, now).ok());
  node::ClusterConfig next;
  next.epoch = 2;
  auto applied = n.apply_config(next, now);
  REQUIRE(applied.ok());
  CHECK(n.config().epoch == 2);
  // Once the config lists nodes, the check is back: n2 and n3 are not alive here.
  next.epoch = 3;
  next.nodes = {{"n1", std::nullopt, {}}, {"n2", std::nullopt, {}}, {"n3", std::nullopt, {}}};
  REQUIRE(n.apply_config(next, now).ok());
  next.epoch = 4;
  auto refused = n.apply_config(next, now);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().field == "nodes");
  CHECK(refused.error().message.find("not alive: n2, n3") != std::string::npos);
  CHECK(n.config().epoch == 3);
}

namespace {

// A one-node cluster whose config lists its node: changes go through the agreement
// (node_config_vote.cpp) with this node as the whole majority.
node::NodeOptions lone_node_options() {
  node::NodeOptions o;
  o.id = "n1";
  o.gossip_addr = "127.0.0.1:17011";
  o.stream_addr = "127.0.0.1:17012";
  o.api_addr = "127.0.0.1:17013";
  o.initial_config.epoch = 1;
  o.initial_config.nodes = {{"n1", std::nullopt, {}}};
  return o;
}

// Makes everything written durable and delivers what that released, `turns` times;
// what was written lands in `disk`.
void settle_storage(node::Node& n, Clock now, std::map<std::string, std::string>& disk, int turns = 8) {
  for (int i = 0; i < turns; ++i) {
    node::StorageBatch b;
    while (n.poll_storage(b)) {
      for (const auto& op : b.ops) {
        if (op.kind == node::StorageOp::Kind::kPut) {
          disk[op.key] = op.value;
        } else {
          disk.erase(op.key);
        }
      }
      n.on_durable(b.seq, now);
    }
    n.on_tick(now);
  }
}

std::vector<node::StoredRecord> records_of(const std::map<std::string, std::string>& disk) {
  std::vector<node::StoredRecord> out;
  for (const auto& [k, v] : disk) out.push_back({k, v});
  return out;
}

}  // namespace

TEST_CASE("cluster config: a change is adopted only once the nodes agreed on it, and the votes survive a restart") {
  std::map<std::string, std::string> disk;
  const Clock now{1'000, test::kApiTestStartUtcMs};
  node::ClusterConfig next;
  {
    node::Node n(lone_node_options(), 7);
    REQUIRE(n.start({}, now).ok());
    settle_storage(n, now, disk);
    next = n.config();
    next.epoch = 2;
    next.nodes[0].tags = {"blue"};
    auto ack = n.apply_config(next, now);
    REQUIRE(ack.ok());
    REQUIRE(ack->config_proposal != 0);
    // Not adopted yet: its own promise is not durable.
    CHECK(n.config().epoch == 1);
    CHECK(n.config_proposing());
    CHECK_FALSE(n.config_outcome(ack->config_proposal).has_value());
    // One change at a time through a node.
    next.epoch = 3;
    auto second = n.apply_config(next, now);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().field == "epoch");
    CHECK(second.error().message.find("being agreed") != std::string::npos);

    settle_storage(n, now, disk);
    CHECK(n.config().epoch == 2);
    CHECK(n.config().nodes[0].tags == std::vector<std::string>{"blue"});
    auto outcome = n.config_outcome(ack->config_proposal);
    REQUIRE(outcome.has_value());
    CHECK(outcome->ok());
    CHECK_FALSE(n.config_proposing());
    // The vote is on disk: epoch 2, promised and accepted.
    REQUIRE(disk.count("c/vote") == 1);
    // An id never handed out is an error, not a wait.
    auto unknown = n.config_outcome(ack->config_proposal + 100);
    REQUIRE(unknown.has_value());
    CHECK_FALSE(unknown->ok());
  }
  SECTION("a restart keeps the config and the votes") {
    node::Node again(lone_node_options(), 8);
    REQUIRE(again.start(records_of(disk), now).ok());
    CHECK(again.config().epoch == 2);
    next.epoch = 3;
    next.nodes[0].tags = {"green"};
    auto ack = again.apply_config(next, now);
    REQUIRE(ack.ok());
    settle_storage(again, now, disk);
    CHECK(again.config().epoch == 3);
    REQUIRE(again.config_outcome(ack->config_proposal).has_value());
  }
  SECTION("a corrupt vote record is a clear start error") {
    disk["c/vote"] = std::string("\x01\xff", 2);
    node::Node again(lone_node_options(), 8);
    Status st = again.start(records_of(disk), now);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find("config vote record is corrupt") != std::string::npos);
  }
}

TEST_CASE("node: a restart joins through the co-replicas it remembers as well as its seeds") {
  // n1 shares v1 with n2 only; n3 is a node of the cluster but no co-replica.
  node::NodeOptions o = lone_node_options();
  o.initial_config.nodes = {{"n1", std::nullopt, {}}, {"n2", std::nullopt, {}}, {"n3", std::nullopt, {}}};
  o.initial_config.volumes = {{"v1", {"n1", "n2"}, {}}};
  o.seeds = {"10.0.0.9:7947"};
  const Clock now{1'000, test::kApiTestStartUtcMs};
  std::map<std::string, std::string> disk;
  {
    node::Node first(o, 7);
    REQUIRE(first.start({}, now).ok());
    settle_storage(first, now, disk);
  }
  // What a previous life saw alive (Node::remember_peer), and a peer no longer a co-replica.
  disk["p/n2"] = "10.0.0.2:7947";
  disk["p/n3"] = "10.0.0.3:7947";
  auto stream_targets = [](node::Node& n) {
    std::set<std::string> to;
    node::Transmit t;
    while (n.poll_transmit(t)) {
      if (t.channel == node::Channel::kStream) to.insert(t.to_addr);
    }
    return to;
  };
  SECTION("the remembered co-replica is asked to join, beside the seed; the other is forgotten") {
    node::Node again(o, 8);
    REQUIRE(again.start(records_of(disk), now).ok());
    const std::set<std::string> to = stream_targets(again);
    CHECK(to.count("10.0.0.9:7947") == 1);
    CHECK(to.count("10.0.0.2:7947") == 1);
    CHECK(to.count("10.0.0.3:7947") == 0);
    settle_storage(again, now, disk);
    CHECK(disk.count("p/n2") == 1);
    CHECK(disk.count("p/n3") == 0);
  }
  SECTION("without the record, only the seed") {
    disk.erase("p/n2");
    node::Node again(o, 8);
    REQUIRE(again.start(records_of(disk), now).ok());
    const std::set<std::string> to = stream_targets(again);
    CHECK(to == std::set<std::string>{"10.0.0.9:7947"});
  }
  SECTION("a corrupt peer record is a clear start error") {
    disk["p/"] = "10.0.0.4:7947";
    node::Node again(o, 8);
    Status st = again.start(records_of(disk), now);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find("corrupt peer record") != std::string::npos);
  }
}

TEST_CASE("cluster config: a vote asked again (its answer slow or lost) is answered again, not refused") {
  std::map<std::string, std::string> disk;
  Clock now{1'000, test::kApiTestStartUtcMs};
  node::Node n(lone_node_options(), 7);
  REQUIRE(n.start({}, now).ok());
  settle_storage(n, now, disk);
  node::ClusterConfig next = n.config();
  next.epoch = 2;
  next.nodes[0].tags = {"blue"};
  auto ack = n.apply_config(next, now);
  REQUIRE(ack.ok());
  // The promise waits for its write; meanwhile the proposer asks again.
  now.mono_ms += 400;
  now.utc_ms += 400;
  n.on_tick(now);
  settle_storage(n, now, disk);
  CHECK(n.config().epoch == 2);
  auto outcome = n.config_outcome(ack->config_proposal);
  REQUIRE(outcome.has_value());
  CHECK(outcome->ok());
  // Still the first ballot: the repeated prepare was promised again, not refused (a
  // refusal sends the proposer to a higher ballot, and after four of them it gives up).
  const std::string& vote = disk.at("c/vote");
  REQUIRE(vote.size() > 3);
  CHECK(static_cast<uint8_t>(vote[1]) == 2);  // epoch
  CHECK(static_cast<uint8_t>(vote[2]) == 1);  // ballot promised
}

namespace {

// A peer "n2" of the lone node (same key, same cluster name) that seals stream frames by
// hand: batches of ConfigRequests and messages of no kind (what a newer sender's unknown
// kinds decode to), stamped with whatever sender time a test wants.
struct HandPeer {
  wire::FrameCipher cipher{wire::Keyring::single(wire::Key{}), "caesium", 99};
  uint64_t seq = 0;

  std::string frame(unsigned unknown, unsigned real, int64_t sent_utc_ms) {
    ::capnp::MallocMessageBuilder builder;
    auto root = builder.initRoot<wire::capnp::Envelope>();
    root.setVersion(wire::kProtocolVersion);
    root.setSender("n2");
    root.setSenderAddr("127.0.0.1:17021");
    root.setSentUtcMs(sent_utc_ms);
    root.setSeq(++seq);
    root.setBootId(99);
    // Interleaved: a real message, an unknown one, ... then what is left of either.
    auto list = root.getBody().initBatch(unknown + real);
    unsigned i = 0;
    for (unsigned r = 0, u = 0; r < real || u < unknown;) {
      if (r < real && (r <= u || u == unknown)) {
        list[i++].initConfigRequest().setEpoch(1);
        ++r;
      } else {
        list[i++].setUnknown();
        ++u;
      }
    }
    kj::VectorOutputStream out;
    ::capnp::writePackedMessage(out, builder);
    return cipher.seal(wire::FrameChannel::kStream,
                       std::string_view(reinterpret_cast<const char*>(out.getArray().begin()), out.getArray().size()));
  }
};

}  // namespace

TEST_CASE("node: core messages of kinds it does not know are counted, the rest of their batch is read") {
  node::NodeOptions o = lone_node_options();
  node::Node n(std::move(o), 7);
  const Clock now{1'000, test::kApiTestStartUtcMs};
  REQUIRE(n.start({}, now).ok());
  HandPeer n2;
  auto frame = [&](unsigned unknown, unsigned real) { return n2.frame(unknown, real, now.utc_ms); };
  // Each ConfigRequest read is answered with this node's config, which goes nowhere: n2
  // is no member here, so every answer counts as misrouted.
  std::map<std::string, std::string> disk;
  auto deliver = [&](const std::string& bytes) {
    n.on_stream("127.0.0.1:17022", bytes, now);
    settle_storage(n, now, disk);
    node::Transmit t;
    while (n.poll_transmit(t)) {
    }
  };
  deliver(frame(0, 0));  // (the node's start writes to disk first; answers wait for it)
  const uint64_t misrouted = n.counters().misrouted;
  deliver(frame(0, 4));
  CHECK(n.counters().unknown_messages == 0);
  CHECK(n.counters().misrouted - misrouted == 4);
  deliver(frame(3, 4));
  CHECK(n.counters().unknown_messages == 3);
  CHECK(n.counters().misrouted - misrouted == 8);
  deliver(frame(5, 1));
  CHECK(n.counters().unknown_messages == 8);
  CHECK(n.counters().misrouted - misrouted == 9);
  CHECK(n.counters().malformed == 0);
  CHECK(n.counters().auth_failures == 0);
  CHECK(n.counters().replays == 0);
}

TEST_CASE("node: a peer whose clock runs ahead of the skew bound is warned about, once a minute") {
  node::NodeOptions o = lone_node_options();
  o.scheduler.max_clock_skew_ms = 1'000;  // two clocks may differ by up to 2 s
  node::Node n(std::move(o), 7);
  Clock now{1'000, test::kApiTestStartUtcMs};
  REQUIRE(n.start({}, now).ok());
  HandPeer n2;
  auto warnings = [&] {
    std::vector<std::string> out;
    node::NodeEvent e;
    while (n.poll_event(e)) {
      if (e.kind == node::NodeEvent::Kind::kWarning) out.push_back(e.text);
    }
    return out;
  };
  // n2 runs 1.9 s ahead, frames taking 5 ms: within
  // the bound, and the estimate is a lower bound (1,895 ms).
  CHECK_FALSE(n.peer_clock_ahead_ms("n2").has_value());
  for (int i = 0; i < 8; ++i) {
    now.mono_ms += 100;
    now.utc_ms += 100;
    n.on_stream("127.0.0.1:17022", n2.frame(0, 0, now.utc_ms + 1'900 - 5), now);
  }
  REQUIRE(n.peer_clock_ahead_ms("n2").has_value());
  CHECK(*n.peer_clock_ahead_ms("n2") == 1'895);
  CHECK(n.counters().clock_skew_warnings == 0);
  CHECK(warnings().empty());
  // Now 2.5 s ahead: one warning naming the peer and the bound, not one per frame.
  for (int i = 0; i < 40; ++i) {
    now.mono_ms += 100;
    now.utc_ms += 100;
    n.on_stream("127.0.0.1:17022", n2.frame(0, 0, now.utc_ms + 2'500 - 5), now);
  }
  CHECK(*n.peer_clock_ahead_ms("n2") == 2'495);
  CHECK(n.counters().clock_skew_warnings == 1);
  auto w = warnings();
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("the clock of n2 is at least 2495 ms ahead") != std::string::npos);
  CHECK(w[0].find("max_clock_skew (1000 ms)") != std::string::npos);
  // Still ahead a minute later: warned again.
  for (int i = 0; i < 640; ++i) {
    now.mono_ms += 100;
    now.utc_ms += 100;
    n.on_stream("127.0.0.1:17022", n2.frame(0, 0, now.utc_ms + 2'500 - 5), now);
  }
  CHECK(n.counters().clock_skew_warnings == 2);
  // Its clock fixed: the estimate follows within two 15 s windows, and no more warnings.
  for (int i = 0; i < 700; ++i) {
    now.mono_ms += 100;
    now.utc_ms += 100;
    n.on_stream("127.0.0.1:17022", n2.frame(0, 0, now.utc_ms - 5), now);
  }
  CHECK(*n.peer_clock_ahead_ms("n2") == -5);
  CHECK(n.counters().clock_skew_warnings == 2);
  // Silent for two windows: nothing is known any more.
  now.mono_ms += 60'000;
  n.on_tick(now);
  CHECK_FALSE(n.peer_clock_ahead_ms("n2").has_value());
  // The replay window still refuses what is too far off; nothing here was refused.
  CHECK(n.counters().replays == 0);
}

TEST_CASE("api controls: pause and resume write the entry, answered once durable, 404 without entry") {
  Fixture f;
  const std::string pause = kEntryPath + "/pause";
  const std::string resume = kEntryPath + "/resume";
  CHECK(f.run("POST", pause).response.status == 404);
  CHECK(f.run("GET", pause).response.status == 405);
  CHECK(*f.run("GET", pause).response.header("Allow") == "POST");
  f.write("PUT", kEntryPath, R"({"cron": "* * * * *", "handler": "tick"})");
  const json before = body_of(f.run("GET", kEntryPath).response);
  CHECK(before["paused"] == false);
  CHECK_FALSE(before["next"].is_null());
  CHECK_FALSE(before.contains("resumed"));

  ServerResponse paused = f.write("POST", pause);
  REQUIRE(paused.status == 200);
  json p = body_of(paused);
  CHECK(p["paused"] == true);
  CHECK(p["next"].is_null());              // a paused entry schedules nothing
  CHECK(p["created"] == before["created"]);  // the same entry, not a new one
  CHECK(body_of(f.run("GET", kEntryPath).response)["paused"] == true);

  // A body other than none or {} is refused (a typo'd control should not pass silently).
  ApiAction with_body = f.run("POST", pause, R"({"paused": false})");
  CHECK(with_body.response.status == 400);
  CHECK(body_of(with_body.response)["field"] == "body");
  CHECK(f.run("POST", pause, "{not json").response.status == 400);
  CHECK(f.write("POST", pause, "{}").status == 200);
  CHECK(f.write("POST", pause, " { }\r\n").status == 200);

  ServerResponse resumed = f.write("POST", resume);
  REQUIRE(resumed.status == 200);
  json r = body_of(resumed);
  CHECK(r["paused"] == false);
  CHECK(r["resumed"] == format_rfc3339_utc(f.n.clock().utc_ms));
  CHECK_FALSE(r["next"].is_null());
  CHECK(r["created"] == before["created"]);

  // The route needs the write scope, and w is checked as for a PUT.
  CHECK(f.run("POST", pause, "", false).response.status == 401);
  CHECK(body_of(f.run("POST", pause + "?w=9").response)["field"] == "w");
  json status = body_of(f.run("GET", "/v1/status").response);
  CHECK(std::count(status["features"].begin(), status["features"].end(), "pause") == 1);
}

TEST_CASE("api controls: bulk pause and resume by entity prefix or by entity and name prefix") {
  Fixture f;
  for (const char* who : {"acme", "acme2", "beta"}) {
    for (const char* name : {"daily-a", "daily-b", "hourly"}) {
      f.write("PUT", std::string("/v1/volumes/v/entities/") + who + "/schedule/" + name, kEntry);
    }
  }
  auto paused_keys = [&f] {
    std::set<std::string> out;
    const json list = body_of(f.run("GET", "/v1/volumes/v/entries").response);  // kept alive for the loop
    for (const auto& e : list["entries"]) {
      if (e["paused"] == true) out.insert(e["key"].get<std::string>());
    }
    return out;
  };

  // One entity's entries whose name starts with "daily".
  ServerResponse one = f.write("POST", "/v1/volumes/v/pause?entity=acme&name_prefix=daily");
  REQUIRE(one.status == 200);
  json j = body_of(one);
  CHECK(j["paused"] == true);
  CHECK(j["changed"] == json({"acme/caesium/schedule/daily-a", "acme/caesium/schedule/daily-b"}));
  CHECK(j["unchanged"] == 0);
  CHECK(j["next"].is_null());
  CHECK(paused_keys() == std::set<std::string>{"acme/caesium/schedule/daily-a", "acme/caesium/schedule/daily-b"});

  // Every entity starting with "acme" (acme2 too); what is already paused stays as it is.
  json all = body_of(f.write("POST", "/v1/volumes/v/pause?prefix=acme"));
  CHECK(all["changed"].size() == 4);
  CHECK(all["unchanged"] == 2);
  CHECK(paused_keys().size() == 6);
  CHECK(body_of(f.run("GET", "/v1/volumes/v/entities/beta/schedule/hourly").response)["paused"] == false);

  // Pages: ?limit= and the cursor, as the list's.
  json p1 = body_of(f.write("POST", "/v1/volumes/v/resume?prefix=acme&limit=4"));
  CHECK(p1["paused"] == false);
  CHECK(p1["changed"].size() == 4);
  REQUIRE(p1["next"].is_string());
  json p2 = body_of(f.write("POST", "/v1/volumes/v/resume?prefix=acme&limit=4&after=" +
                                        percent_encode(p1["next"].get<std::string>())));
  CHECK(p2["changed"].size() == 2);
  CHECK(p2["next"].is_null());
  CHECK(paused_keys().empty());
  // A resumed entry records when (the misfire policy judges what fell due while paused).
  CHECK(body_of(f.run("GET", "/v1/volumes/v/entities/acme2/schedule/hourly").response).contains("resumed"));

  // Nothing matched: 200, nothing changed, nothing to wait for.
  ApiAction none = f.run("POST", "/v1/volumes/v/pause?prefix=zzz");
  CHECK(none.kind == ApiAction::Kind::kRespond);
  CHECK(none.response.status == 200);
  CHECK(body_of(none.response)["changed"].empty());

  // Refusals: neither or both selectors, name_prefix alone, a bad entity, a body, w, scope.
  auto field_of = [&f](const std::string& target, const std::string& body = {}) {
    ApiAction a = f.run("POST", target, body);
    CHECK(a.response.status == 400);
    return body_of(a.response)["field"].get<std::string>();
  };
  CHECK(field_of("/v1/volumes/v/pause") == "prefix");
  CHECK(field_of("/v1/volumes/v/pause?prfix=acme") == "prefix");  // a typo does not pause the volume
  CHECK(field_of("/v1/volumes/v/pause?prefix=a&entity=acme") == "entity");
  CHECK(field_of("/v1/volumes/v/pause?prefix=a&name_prefix=d") == "name_prefix");
  CHECK(field_of("/v1/volumes/v/pause?entity=a%2Fb") == "entity");
  CHECK(field_of("/v1/volumes/v/pause?prefix=acme", R"({"x": 1})") == "body");
  CHECK(field_of("/v1/volumes/v/pause?prefix=acme&w=9") == "w");
  CHECK(field_of("/v1/volumes/v/pause?prefix=acme&limit=0") == "limit");
  CHECK(f.run("POST", "/v1/volumes/v/pause?prefix=acme", "", false).response.status == 401);
  CHECK(f.run("GET", "/v1/volumes/v/pause?prefix=acme").response.status == 405);
  CHECK(paused_keys().empty());  // none of the refusals changed anything
  json status = body_of(f.run("GET", "/v1/status").response);
  CHECK(std::count(status["features"].begin(), status["features"].end(), "bulk_pause") == 1);
}

TEST_CASE("api controls: a bulk pause with ?w=2 waits until every entry it changed is held by two replicas") {
  Fixture f;
  for (const char* name : {"a", "b", "c"}) {
    f.write("PUT", std::string("/v1/volumes/pair/entities/acme/schedule/") + name, kEntry);
  }
  ApiAction a = f.run("POST", "/v1/volumes/pair/pause?entity=acme&w=2");
  REQUIRE(a.kind == ApiAction::Kind::kAwaitWrite);
  CHECK(a.wait.replicas == 2);
  CHECK(a.wait.key == "acme/caesium/schedule/c");
  REQUIRE(a.wait.also.size() == 2);
  CHECK(a.wait.also[0].first == "acme/caesium/schedule/a");
  CHECK(a.wait.also[1].first == "acme/caesium/schedule/b");
  for (const auto& [key, version] : a.wait.also) CHECK(version.physical_ms > 0);
}

TEST_CASE("api controls: trigger runs now, once per Idempotency-Key, 404, 409 and bad keys refused") {
  Fixture f;
  const std::string trigger = kEntryPath + "/trigger";
  CHECK(f.run("POST", trigger).response.status == 404);
  CHECK(*f.run("GET", trigger).response.header("Allow") == "POST");
  f.write("PUT", kEntryPath, R"({"cron": "0 0 1 1 *", "handler": "tick"})");
  const int64_t now = f.n.clock().utc_ms;

  auto keyed = [&](const std::string& key) {
    ServerRequest r = api_request("POST", trigger);
    r.headers.emplace_back("idempotency-key", key);
    return r;
  };
  ApiAction first = f.h.handle(keyed("deploy-4711"));
  REQUIRE(first.kind == ApiAction::Kind::kAwaitWrite);
  f.n.settle();
  REQUIRE(first.response.status == 200);
  const json t = body_of(first.response);
  CHECK(t["id"] == schedule::trigger_id_for_key("deploy-4711"));
  CHECK(t["repeat"] == false);
  const int64_t at = t["scheduled_ms"].get<int64_t>();
  CHECK(at > now);  // at or after the write's version: the edit rule governs it
  CHECK(at <= now + 2);
  CHECK(t["scheduled"] == format_rfc3339_utc(at));
  CHECK(t["entry"]["triggers"].size() == 1);
  CHECK(t["entry"]["next"] == format_rfc3339_utc(at));  // the manual occurrence is next

  // The same key again: the same answer, and nothing written (the same record version).
  f.n.advance(1'000);
  ApiAction again = f.h.handle(keyed("deploy-4711"));
  f.n.settle();
  const json t2 = body_of(again.response);
  CHECK(again.response.status == 200);
  CHECK(t2["id"] == t["id"]);
  CHECK(t2["scheduled_ms"] == at);
  CHECK(t2["repeat"] == true);
  CHECK(again.wait.version == first.wait.version);
  CHECK(t2["entry"]["triggers"].size() == 1);
  // Another key, or none: another trigger, later.
  ApiAction other = f.h.handle(keyed("deploy-4712"));
  f.n.settle();
  CHECK(body_of(other.response)["id"] != t["id"]);
  ServerResponse plain = f.write("POST", trigger);
  REQUIRE(plain.status == 200);
  CHECK(body_of(plain)["id"].get<std::string>()[0] == 't');
  CHECK(body_of(plain)["entry"]["triggers"].size() == 3);
  CHECK(f.h.counters().triggers == 3);
  CHECK(f.h.counters().trigger_repeats == 1);

  // The history marks the manual occurrence once it is recorded.
  f.n.advance(5'000);
  json h = body_of(f.run("GET", kEntryPath + "/history").response);
  bool found = false;
  for (const auto& o : h["occurrences"]) {
    if (o["scheduled_ms"] == at) {
      found = true;
      CHECK(o["manual"] == true);
      CHECK(o["trigger"] == t["id"]);
    }
  }
  CHECK(found);

  // A PUT keeps the triggers (and ignores those it carries).
  json edited = body_of(f.run("GET", kEntryPath).response);
  edited["triggers"] = json::array();
  REQUIRE(f.write("PUT", kEntryPath, edited.dump()).status == 200);
  CHECK(body_of(f.run("GET", kEntryPath).response)["triggers"].size() == 3);
  ApiAction after_put = f.h.handle(keyed("deploy-4711"));
  CHECK(body_of(after_put.response)["repeat"] == true);

  // Bad keys: control characters, too long, empty.
  for (const std::string& bad : {std::string("a\x01"), std::string(201, 'k'), std::string(), std::string("a b")}) {
    ApiAction r = f.h.handle(keyed(bad));
    CHECK(r.response.status == 400);
    CHECK(body_of(r.response)["field"] == "Idempotency-Key");
  }
  CHECK(f.run("POST", trigger, R"({"at": "now"})").response.status == 400);
  CHECK(f.run("POST", trigger, "", false).response.status == 401);

  // A paused entry runs nothing: 409.
  REQUIRE(f.write("POST", kEntryPath + "/pause").status == 200);
  ApiAction paused = f.h.handle(keyed("deploy-9999"));
  CHECK(paused.response.status == 409);
  CHECK(body_of(paused.response)["field"] == "paused");
  json status = body_of(f.run("GET", "/v1/status").response);
  CHECK(std::count(status["features"].begin(), status["features"].end(), "trigger") == 1);
}
