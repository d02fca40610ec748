// ApiServer on loopback with real Node cores behind it: a write is answered only once
// durable, ?w=2 answers 503 when the other replica never acknowledges, and a node that
// does not replicate a volume forwards to one that does (skipping a replica that refuses
// the connection) and relays its answer.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "node/daemon/api/api_server.h"
#include "tests/unit/daemon_api_client_socket.h"
#include "tests/unit/daemon_api_fixture.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::RawClient;
using caesium::test::TestLoop;
using nlohmann::json;

namespace {

const std::string kEntry = R"({"timer": {"after": "1h"}, "handler": "tick"})";

std::string request(const std::string& method, const std::string& target, const std::string& body = {}) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + test::kApiTestToken + "\r\n";
  if (!body.empty()) r += "Content-Type: application/json\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }
std::string body_of(const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); }

struct Served {
  test::ApiTestNode node;
  std::unique_ptr<ApiServer> server;
  Served(TestLoop& loop, const std::string& id, int64_t write_timeout_ms = 10'000) : node(id) {
    ApiServerOptions o;
    o.api = test::api_test_options();
    o.api.write_timeout_ms = write_timeout_ms;
    o.forward_timeout_ms = 5'000;
    server = std::make_unique<ApiServer>(loop.get(), o, node.backend());
    REQUIRE(server->listen("127.0.0.1:0").ok());
  }
  uint16_t port() const {
    const std::string a = server->address();
    return static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)));
  }
};

// Sends one request from a client thread; runs the loop until the answer is in, calling
// `meanwhile` on the loop thread once (when `ready` holds) before that.
std::string exchange(TestLoop& loop, uint16_t port, const std::string& bytes, const std::function<bool()>& ready = {},
                     const std::function<void()>& meanwhile = {}) {
  std::atomic<bool> done{false};
  std::string got;
  std::thread t([&] {
    RawClient c(port, 10'000);
    c.send(bytes);
    got = c.read_responses(1);
    done = true;
  });
  if (ready) {
    const bool reached = loop.run_until([&] { return ready() || done.load(); });
    CHECK(reached);
    CHECK_FALSE(done.load());  // the answer waited for `meanwhile`
    meanwhile();
  }
  CHECK(loop.run_until([&] { return done.load(); }));
  t.join();
  return got;
}

}  // namespace

TEST_CASE("api server: a PUT is answered only after storage reports it durable") {
  TestLoop loop;
  {
    Served a(loop, "n1");
    const std::string got = exchange(
        loop, a.port(), request("PUT", "/v1/volumes/v/entities/acme/schedule/x", kEntry),
        [&] { return a.server->waiting_writes() == 1; }, [&] { a.node.settle(); });
    CHECK(status_line(got) == "HTTP/1.1 201 Created");
    CHECK(got.find("Location: /v1/volumes/v/entities/acme/schedule/x\r\n") != std::string::npos);
    CHECK(json::parse(body_of(got))["handler"] == "tick");
    CHECK(a.server->counters().responses_by_status.at(201) == 1);
  }
  CHECK(loop.drain());
}

TEST_CASE("api server: ?w=2 answers 503 with what was reached when the other replica is silent") {
  TestLoop loop;
  {
    Served a(loop, "n1", 100);
    const std::string got = exchange(
        loop, a.port(), request("PUT", "/v1/volumes/pair/entities/acme/schedule/x?w=2", kEntry),
        [&] { return a.server->waiting_writes() == 1; },
        [&] {
          a.node.settle();
          a.node.advance(101);  // the backend's clock is hand-set: pass the deadline
        });
    CHECK(status_line(got) == "HTTP/1.1 503 Service Unavailable");
    json j = json::parse(body_of(got));
    CHECK(j["durable"] == true);
    CHECK(j["replicas"] == 1);
    CHECK(j["wanted"] == 2);
    CHECK(a.server->counters().write_timeouts == 1);
  }
  CHECK(loop.drain());
}

TEST_CASE("api server: a non-replica forwards to a replica, skipping one that refuses") {
  TestLoop loop;
  {
    Served a(loop, "n1");  // does not replicate "far"
    Served b(loop, "n2");  // does
    // n3 is preferred (master) but nothing listens on its port.
    const std::string dead = "127.0.0.1:1";
    a.node.contacts["far"] = {{"n3", dead, true, true}, {"n2", b.server->address(), true, false}};
    const std::string path = "/v1/volumes/far/entities/acme/schedule/x";
    const std::string missing = exchange(loop, a.port(), request("GET", path));
    CHECK(status_line(missing) == "HTTP/1.1 404 Not Found");
    CHECK(json::parse(body_of(missing))["field"] == "name");
    const std::string put = exchange(
        loop, a.port(), request("PUT", path, kEntry), [&] { return b.server->waiting_writes() == 1; },
        [&] { b.node.settle(); });
    CHECK(status_line(put) == "HTTP/1.1 201 Created");
    CHECK(put.find("Location: " + path) != std::string::npos);
    CHECK(put.find("Content-Type: application/json") != std::string::npos);
    CHECK(b.node.node().get_entry("far", "acme", "x").has_value());
    CHECK_FALSE(a.node.node().is_replica("far"));
    CHECK(a.server->counters().forwarded == 2);
    CHECK(a.server->counters().forward_failures == 0);
    // The forwarded request carried the token: without one, b's 401 comes back.
    const std::string unauth = exchange(loop, a.port(), "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(status_line(unauth) == "HTTP/1.1 401 Unauthorized");
  }
  CHECK(loop.drain());
}

TEST_CASE("api server: 503 when no replica answers a forwarded request") {
  TestLoop loop;
  {
    Served a(loop, "n1");
    a.node.contacts["far"] = {{"n2", "127.0.0.1:1", true, true}, {"n3", "127.0.0.1:2", true, false}};
    const std::string got = exchange(loop, a.port(), request("GET", "/v1/volumes/far/entities/acme/schedule/x"));
    CHECK(status_line(got) == "HTTP/1.1 503 Service Unavailable");
    const std::string err = json::parse(body_of(got))["error"];
    CHECK(err.find("n2 (127.0.0.1:1)") != std::string::npos);
    CHECK(err.find("n3 (127.0.0.1:2)") != std::string::npos);
    CHECK(a.server->counters().forward_failures == 1);
  }
  CHECK(loop.drain());
}
