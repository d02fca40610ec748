// Chronos compatibility: the bodies a Chronos client sends (defaults and the 400 cases),
// the /timers routes over a real Node core, the entry a timer becomes, and a pop as the
// callback server sees it (POST, opaque body, X-Sequence-Number) through the "chronos"
// executor against a loopback server.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "node/daemon/api/api.h"
#include "node/daemon/api/chronos.h"
#include "node/daemon/exec/chronos_executor.h"
#include "node/daemon/http/http_server.h"
#include "schedule/timing.h"
#include "tests/unit/daemon_api_fixture.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::api_request;
using nlohmann::json;

namespace {

std::string timer_body(const std::string& timing, const std::string& extra = {}) {
  return R"({"timing": )" + timing + R"(, "callback": {"http": {"uri": "http://localhost:1234/cb", "opaque": "hello"}})" +
         extra + "}";
}

std::string field_of(const std::string& body) {
  auto t = parse_chronos_timer(body);
  return t.ok() ? std::string("ok") : t.error().field;
}

const schedule::Timer& timer_of(const schedule::Entry& e) { return std::get<schedule::Timer>(e.timing); }

}  // namespace

TEST_CASE("chronos body: interval, repeat-for defaulting to the interval, callback, reliability") {
  auto t = parse_chronos_timer(timer_body(R"({"interval": 30})", R"(, "reliability": {"replication-factor": 3})"));
  REQUIRE(t.ok());
  CHECK(t->interval_s == 30);
  CHECK(t->repeat_for_s == 30);  // one pop
  CHECK(t->uri == "http://localhost:1234/cb");
  CHECK(t->opaque == "hello");
  CHECK(t->replication_factor == std::optional<int64_t>(3));
  auto r = parse_chronos_timer(timer_body(R"({"interval": 5, "repeat-for": 20})", R"(, "statistics": {"tag-info": []})"));
  REQUIRE(r.ok());
  CHECK(r->repeat_for_s == 20);
  CHECK_FALSE(r->replication_factor);
  auto once = parse_chronos_timer(timer_body(R"({"interval": 0, "repeat-for": 0})"));
  REQUIRE(once.ok());
  CHECK(once->interval_s == 0);
  auto bare = parse_chronos_timer(R"({"timing": {"interval": 1}, "callback": {"http": {"uri": "localhost:1234/cb"}}})");
  REQUIRE(bare.ok());
  CHECK(bare->uri == "http://localhost:1234/cb");  // no scheme: http, as libcurl assumes
  CHECK(bare->opaque.empty());
}

TEST_CASE("chronos body: the 400 cases name the field") {
  CHECK(field_of(timer_body(R"({"interval": 0, "repeat-for": 10})")) == "timing.repeat-for");
  CHECK(field_of(timer_body(R"({"repeat-for": 10})")) == "timing.interval");
  CHECK(field_of(timer_body(R"({"interval": -1})")) == "timing.interval");
  CHECK(field_of(timer_body(R"({"interval": 1.5})")) == "timing.interval");
  CHECK(field_of(timer_body(R"({"interval": "10"})")) == "timing.interval");
  CHECK(field_of(timer_body(R"({"interval": 99999999999999})")) == "timing.interval");
  CHECK(field_of(timer_body(R"({"interval": 1, "repeat-for": -5})")) == "timing.repeat-for");
  CHECK(field_of(timer_body("[]")) == "timing");
  CHECK(field_of(R"({"timing": {"interval": 1}})") == "callback");
  CHECK(field_of(R"({"timing": {"interval": 1}, "callback": {"sms": {}}})") == "callback.http");
  CHECK(field_of(R"({"timing": {"interval": 1}, "callback": {"http": {"opaque": "x"}}})") == "callback.http.uri");
  CHECK(field_of(R"({"timing": {"interval": 1}, "callback": {"http": {"uri": "ftp://x/"}}})") == "callback.http.uri");
  CHECK(field_of(R"({"timing": {"interval": 1}, "callback": {"http": {"uri": "http://a b/"}}})") == "callback.http.uri");
  CHECK(field_of(R"({"timing": {"interval": 1}, "callback": {"http": {"uri": "http://a/", "opaque": 5}}})") ==
        "callback.http.opaque");
  CHECK(field_of(timer_body(R"({"interval": 1})", R"(, "reliability": {"replication-factor": -2})")) ==
        "reliability.replication-factor");
  CHECK(field_of("{") == "body");
  CHECK(field_of("7") == "body");
}

TEST_CASE("chronos entry: an interval timer created now, handler chronos, callback in the payload") {
  auto t = parse_chronos_timer(timer_body(R"({"interval": 10, "repeat-for": 35})"));
  REQUIRE(t.ok());
  auto e = chronos_entry(*t, "00000000000000ff-2", test::kApiTestStartUtcMs, "n1");
  REQUIRE(e.ok());
  CHECK(e->entity == "chronos");
  CHECK(e->handler == "chronos");
  CHECK(e->semantics == schedule::Semantics::at_least_once);
  CHECK(timer_of(*e).kind == schedule::TimerKind::interval);
  CHECK(timer_of(*e).interval_ms == 10'000);
  CHECK(timer_of(*e).repeat_for_ms == 35'000);
  // Pops at +10, +20, +30 s: the X-Sequence-Number of each is 1, 2, 3.
  CHECK(schedule::next_occurrence(*e, test::kApiTestStartUtcMs) == test::kApiTestStartUtcMs + 10'000);
  CHECK(schedule::occurrence_sequence(*e, test::kApiTestStartUtcMs + 30'000) == 3);
  CHECK_FALSE(schedule::next_occurrence(*e, test::kApiTestStartUtcMs + 30'000));
  auto cb = chronos_callback(e->payload);
  REQUIRE(cb.ok());
  CHECK(cb->uri == "http://localhost:1234/cb");
  CHECK(cb->opaque == "hello");
  CHECK_FALSE(chronos_callback("not json").ok());
  CHECK_FALSE(chronos_entry(*t, "bad id", 0, "n1").ok());
  ChronosTimer huge = *t;
  huge.opaque = std::string(70'000, 'x');
  auto too_big = chronos_entry(huge, "a", test::kApiTestStartUtcMs, "n1");
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().field == "callback.http.opaque");
}

TEST_CASE("chronos ids: Chronos's shape, usable as entry names") {
  CHECK(chronos_timer_id(0xabcdef, 2) == "0000000000abcdef-2");
  CHECK(valid_chronos_id(chronos_timer_id(~uint64_t{0}, 1000000)));
  CHECK_FALSE(valid_chronos_id("a/b"));
  CHECK_FALSE(valid_chronos_id(""));
}

TEST_CASE("chronos routes: POST answers 200 with Location, no token needed, PUT replaces, DELETE deletes") {
  test::ApiTestNode n;
  ApiHandler h(test::api_test_options(), n.backend());
  ApiAction post = h.handle(api_request("POST", "/timers", timer_body(R"({"interval": 10, "repeat-for": 30})"), false));
  REQUIRE(post.kind == ApiAction::Kind::kAwaitWrite);
  CHECK(post.response.status == 200);
  const std::string* location = post.response.header("Location");
  REQUIRE(location != nullptr);
  REQUIRE(location->rfind("/timers/", 0) == 0);
  const std::string id = location->substr(8);
  CHECK(id.size() == 18);
  CHECK(id.substr(16) == "-2");  // default replication factor
  CHECK(post.response.body.empty());
  n.settle();
  auto stored = n.node().get_entry("v", "chronos", id);
  REQUIRE(stored.has_value());
  CHECK(timer_of(*stored).repeat_for_ms == 30'000);

  ApiAction put = h.handle(api_request("PUT", "/timers/" + id, timer_body(R"({"interval": 0, "repeat-for": 0})"), false));
  REQUIRE(put.kind == ApiAction::Kind::kAwaitWrite);
  CHECK(*put.response.header("Location") == "/timers/" + id);
  n.settle();
  stored = n.node().get_entry("v", "chronos", id);
  REQUIRE(stored.has_value());
  CHECK(timer_of(*stored).interval_ms == 0);  // pops once, at once
  CHECK(schedule::next_occurrence(*stored, stored->created_utc_ms - 1) == stored->created_utc_ms);

  ApiAction del = h.handle(api_request("DELETE", "/timers/" + id, {}, false));
  REQUIRE(del.kind == ApiAction::Kind::kAwaitWrite);
  CHECK(del.response.status == 200);
  n.settle();
  CHECK_FALSE(n.node().get_entry("v", "chronos", id).has_value());
  ApiAction again = h.handle(api_request("DELETE", "/timers/" + id, {}, false));
  CHECK(again.kind == ApiAction::Kind::kRespond);
  CHECK(again.response.status == 200);  // idempotent, as in Chronos
  CHECK(h.counters().chronos_requests == 4);
}

TEST_CASE("chronos routes: PUT to an unknown id creates it, bad bodies are 400, odd paths") {
  test::ApiTestNode n;
  ApiHandler h(test::api_test_options(), n.backend());
  ApiAction put = h.handle(api_request("PUT", "/timers/my-own-id", timer_body(R"({"interval": 5})"), false));
  REQUIRE(put.kind == ApiAction::Kind::kAwaitWrite);
  n.settle();
  CHECK(n.node().get_entry("v", "chronos", "my-own-id").has_value());
  ApiAction bad = h.handle(api_request("POST", "/timers", timer_body(R"({"interval": 0, "repeat-for": 3})"), false));
  CHECK(bad.response.status == 400);
  CHECK(json::parse(bad.response.body)["field"] == "timing.repeat-for");
  CHECK(h.handle(api_request("GET", "/timers", {}, false)).response.status == 405);
  CHECK(h.handle(api_request("POST", "/timers/x", timer_body(R"({"interval": 5})"), false)).response.status == 405);
  CHECK(h.handle(api_request("PUT", "/timers/a%20b", timer_body(R"({"interval": 5})"), false)).response.status == 404);
  CHECK(h.handle(api_request("PUT", "/timers/a/b", timer_body(R"({"interval": 5})"), false)).response.status == 404);
  CHECK(h.handle(api_request("POST", "/timers/", timer_body(R"({"interval": 5})"), false)).kind ==
        ApiAction::Kind::kAwaitWrite);
}

TEST_CASE("chronos routes: repeat-for shorter than the interval stores nothing (Chronos never pops it)") {
  test::ApiTestNode n;
  ApiHandler h(test::api_test_options(), n.backend());
  h.handle(api_request("PUT", "/timers/t1", timer_body(R"({"interval": 5})"), false));
  n.settle();
  REQUIRE(n.node().get_entry("v", "chronos", "t1").has_value());
  ApiAction never = h.handle(api_request("PUT", "/timers/t1", timer_body(R"({"interval": 10, "repeat-for": 5})"), false));
  CHECK(never.response.status == 200);
  n.settle();
  CHECK_FALSE(n.node().get_entry("v", "chronos", "t1").has_value());
  ApiAction fresh = h.handle(api_request("POST", "/timers", timer_body(R"({"interval": 10, "repeat-for": 5})"), false));
  CHECK(fresh.kind == ApiAction::Kind::kRespond);
  CHECK(fresh.response.status == 200);
  CHECK(fresh.response.header("Location") != nullptr);
}

TEST_CASE("chronos routes: off without a volume, token required only when configured") {
  test::ApiTestNode n;
  ApiOptions off = test::api_test_options();
  off.chronos_volume.clear();
  ApiHandler h_off(off, n.backend());
  CHECK(h_off.handle(api_request("POST", "/timers", timer_body(R"({"interval": 5})"), false)).response.status == 404);
  ApiOptions strict = test::api_test_options();
  strict.chronos_requires_token = true;
  ApiHandler h(strict, n.backend());
  CHECK(h.handle(api_request("POST", "/timers", timer_body(R"({"interval": 5})"), false)).response.status == 401);
  CHECK(h.handle(api_request("POST", "/timers", timer_body(R"({"interval": 5})"), true)).response.status == 200);
}

TEST_CASE("chronos pop: POST to the timer's URI with the opaque body, X-Sequence-Number and Chronos's Content-Type") {
  test::TestLoop loop;
  std::vector<ServerRequest> seen;
  int status = 200;
  auto server = std::make_unique<HttpServer>(loop.get(), HttpServerOptions{}, [&](ServerRequest r, HttpServer::Respond respond) {
    seen.push_back(std::move(r));
    ServerResponse resp;
    resp.status = status;
    resp.body = "nope";
    respond(resp);
  });
  REQUIRE(server->listen("127.0.0.1:0").ok());
  auto exec = make_chronos_executor(loop.get());
  std::vector<node::InvocationResult> results;
  node::Invocation inv = test::sample_invocation("chronos");
  inv.sequence = 3;
  inv.payload = json{{"uri", "http://" + server->address() + "/pop?x=1"}, {"opaque", "opaque \"data\""}}.dump();
  exec->run(inv, [&](const node::InvocationResult& r) { results.push_back(r); });
  CHECK(exec->running() == 1);
  REQUIRE(loop.run_until([&] { return results.size() == 1; }));
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].target == "/pop?x=1");
  CHECK(seen[0].body == "opaque \"data\"");
  REQUIRE(seen[0].header("x-sequence-number") != nullptr);
  CHECK(*seen[0].header("x-sequence-number") == "3");
  // As Chronos's own pop: the opaque data is labelled as raw bytes.
  REQUIRE(seen[0].header("content-type") != nullptr);
  CHECK(*seen[0].header("content-type") == "application/octet-stream");
  CHECK(*seen[0].header("x-caesium-fire-id") == "f-0001");
  CHECK(results[0].ok);
  CHECK(results[0].id == 42);
  status = 500;
  exec->run(inv, [&](const node::InvocationResult& r) { results.push_back(r); });
  node::Invocation broken = inv;
  broken.payload = "{}";
  exec->run(broken, [&](const node::InvocationResult& r) { results.push_back(r); });
  REQUIRE(loop.run_until([&] { return results.size() == 3; }));
  for (size_t i = 1; i < 3; ++i) {
    CHECK_FALSE(results[i].ok);
    const bool http500 = results[i].detail.find("HTTP 500") != std::string::npos;
    const bool no_uri = results[i].detail.find("no \"uri\"") != std::string::npos;
    CHECK((http500 || no_uri));
  }
  exec.reset();
  server.reset();
  CHECK(loop.drain());
}
