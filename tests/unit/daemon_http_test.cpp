// The http executor and HttpClient against tiny HTTP servers on 127.0.0.1 that run on
// the test's own loop and record what they receive: the body and headers, failover
// ("first success wins"), total failure, timeouts and cancellation.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "node/daemon/exec/executor.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/http/http_client.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::TestLoop;

namespace {

struct Recorded {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// An HTTP/1.1 server that answers every request with `status` (and `reply`), or never
// answers when status < 0.  One request per connection; "Connection: close".
class TestServer {
 public:
  TestServer(uv_loop_t* loop, int status, std::string reply = "") : s_(new State) {
    s_->status = status;
    s_->reply = std::move(reply);
    uv_tcp_init(loop, &s_->listener);
    s_->listener.data = s_;
    s_->open = 1;
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", 0, &addr);
    REQUIRE(uv_tcp_bind(&s_->listener, reinterpret_cast<const sockaddr*>(&addr), 0) == 0);
    REQUIRE(uv_listen(reinterpret_cast<uv_stream_t*>(&s_->listener), 16, on_connection) == 0);
    int len = sizeof addr;
    uv_tcp_getsockname(&s_->listener, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~TestServer() {
    s_->closing = true;
    for (Conn* c : std::set<Conn*>(s_->conns)) close_conn(c);
    uv_close(reinterpret_cast<uv_handle_t*>(&s_->listener), on_listener_closed);
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::string url(const std::string& path = "/hook") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  const std::vector<Recorded>& requests() const { return s_->requests; }

 private:
  struct State;
  struct Conn {
    uv_tcp_t tcp{};
    uv_write_t write{};
    std::string in;
    std::string out;
    State* s = nullptr;
  };
  struct State {
    uv_tcp_t listener{};
    int status = 200;
    std::string reply;
    std::vector<Recorded> requests;
    std::set<Conn*> conns;
    int open = 0;
    bool closing = false;
  };

  static void release(State* s) {
    if (--s->open == 0 && s->closing) delete s;
  }
  static void on_listener_closed(uv_handle_t* h) { release(static_cast<State*>(h->data)); }
  static void on_conn_closed(uv_handle_t* h) {
    auto* c = static_cast<Conn*>(h->data);
    State* s = c->s;
    s->conns.erase(c);
    delete c;
    release(s);
  }

  static void close_conn(Conn* c) {
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&c->tcp))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), on_conn_closed);
    }
  }

  static void on_connection(uv_stream_t* server, int status) {
    auto* s = static_cast<State*>(server->data);
    if (status < 0) return;
    auto* c = new Conn;
    c->s = s;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    ++s->open;
    s->conns.insert(c);
    if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
      close_conn(c);
      return;
    }
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&c->tcp),
        [](uv_handle_t*, size_t suggested, uv_buf_t* buf) { *buf = uv_buf_init(new char[suggested], static_cast<unsigned>(suggested)); },
        on_read);
  }

  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    auto* c = static_cast<Conn*>(stream->data);
    if (nread > 0) c->in.append(buf->base, static_cast<size_t>(nread));
    delete[] buf->base;
    if (nread < 0) {
      close_conn(c);
      return;
    }
    const size_t end = c->in.find("\r\n\r\n");
    if (end == std::string::npos) return;
    Recorded r;
    std::istringstream head(c->in.substr(0, end));
    std::string line;
    std::getline(head, line);
    std::istringstream first(line);
    first >> r.method >> r.target;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    const size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    if (c->in.size() < end + 4 + length) return;
    r.body = c->in.substr(end + 4, length);
    c->s->requests.push_back(std::move(r));
    uv_read_stop(stream);
    if (c->s->status < 0) return;  // hold the connection, never answer
    c->out = "HTTP/1.1 " + std::to_string(c->s->status) + " Test\r\nContent-Length: " +
             std::to_string(c->s->reply.size()) + "\r\nConnection: close\r\n\r\n" + c->s->reply;
    uv_buf_t out = uv_buf_init(c->out.data(), static_cast<unsigned>(c->out.size()));
    c->write.data = c;
    uv_write(&c->write, stream, &out, 1, [](uv_write_t* w, int) { close_conn(static_cast<Conn*>(w->data)); });
  }

  State* s_;
  int port_ = 0;
};

// A TCP port on 127.0.0.1 that refuses connections: bound, never listening.
class RefusingPort {
 public:
  RefusingPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  int fd_;
  int port_ = 0;
};

HandlerConfig http(std::vector<std::string> urls, int64_t timeout_ms = 10'000) {
  HandlerConfig c;
  c.name = "hook";
  c.kind = HandlerConfig::Kind::kHttp;
  c.urls = std::move(urls);
  c.timeout_ms = timeout_ms;
  return c;
}

node::Invocation sample_invocation() {
  node::Invocation inv = caesium::test::sample_invocation("hook");
  inv.payload = "{\"amount\": 3}";
  return inv;
}

// Runs one invocation through a fresh executor and client; returns its result.
std::optional<node::InvocationResult> run_one(TestLoop& loop, const HandlerConfig& config,
                                              const node::Invocation& inv = sample_invocation()) {
  std::optional<node::InvocationResult> result;
  {
    HttpClient client(loop.get());
    auto ex = make_http_executor(client, "n1", config);
    bool returned = false;
    ex->run(inv, [&](const node::InvocationResult& r) {
      CHECK(returned);
      result = r;
    });
    returned = true;
    CHECK(loop.run_until([&] { return result.has_value(); }));
    CHECK(ex->running() == 0);
  }
  return result;
}

}  // namespace

TEST_CASE("http: the POST carries the invocation in its JSON body and X-Caesium-* headers") {
  TestLoop loop;
  {
    TestServer server(loop.get(), 200);
    HandlerConfig c = http({server.url()});
    c.headers = {{"Authorization", "Bearer sesame"}};
    std::optional<node::InvocationResult> result;
    HandlerSet set(loop.get(), "n1", {c}, nullptr);
    set.run(sample_invocation(), [&](const node::InvocationResult& r) { result = r; });
    REQUIRE(loop.run_until([&] { return result.has_value(); }));
    CHECK(result->ok);
    CHECK(result->id == 42);
    CHECK(result->detail == "HTTP 200 from " + server.url());

    REQUIRE(server.requests().size() == 1);
    const Recorded& req = server.requests()[0];
    CHECK(req.method == "POST");
    CHECK(req.target == "/hook");
    const std::map<std::string, std::string> expected = {
        {"content-type", "application/json"},
        {"authorization", "Bearer sesame"},
        {"x-caesium-volume", "billing"},
        {"x-caesium-entity", "acme"},
        {"x-caesium-entry", "nightly-report"},
        {"x-caesium-scheduled", "2026-03-29T01:30:00.250Z"},
        {"x-caesium-fire-id", "f-0001"},
        {"x-caesium-attempt", "3"},
        {"x-caesium-possible-duplicate", "true"},
        {"x-caesium-sequence", "17"},
    };
    for (const auto& [name, value] : expected) {
      INFO(name);
      REQUIRE(req.headers.count(name) == 1);
      CHECK(req.headers.at(name) == value);
    }
    const auto body = nlohmann::json::parse(req.body);
    CHECK(body["volume"] == "billing");
    CHECK(body["entity"] == "acme");
    CHECK(body["entry"] == "nightly-report");
    CHECK(body["scheduled"] == "2026-03-29T01:30:00.250Z");
    CHECK(body["scheduled_ms"] == 1'774'747'800'250);
    CHECK(body["fire_id"] == "f-0001");
    CHECK(body["attempt"] == 3);
    CHECK(body["possible_duplicate"] == true);
    CHECK(body["sequence"] == 17);
    CHECK(body["node"] == "n1");
    CHECK(body["payload"] == "{\"amount\": 3}");
  }
  CHECK(loop.drain());
}

TEST_CASE("http: a payload that is not UTF-8 is sent as payload_base64") {
  TestLoop loop;
  {
    TestServer server(loop.get(), 204);
    node::Invocation inv = sample_invocation();
    inv.payload = std::string("\x00\xff\xfe", 3);
    const auto r = run_one(loop, http({server.url()}), inv);
    REQUIRE(r.has_value());
    CHECK(r->ok);
    REQUIRE(server.requests().size() == 1);
    const auto body = nlohmann::json::parse(server.requests()[0].body);
    CHECK(body["payload_base64"] == "AP/+");
    CHECK_FALSE(body.contains("payload"));
  }
  CHECK(loop.drain());
}

TEST_CASE("http: first success wins, refused and non-2xx URLs are skipped") {
  TestLoop loop;
  {
    RefusingPort refused;
    TestServer failing(loop.get(), 500, "overloaded");
    TestServer ok(loop.get(), 201);
    TestServer unused(loop.get(), 200);
    const auto r = run_one(loop, http({refused.url(), failing.url(), ok.url(), unused.url()}));
    REQUIRE(r.has_value());
    INFO(r->detail);
    CHECK(r->ok);
    CHECK(r->detail.rfind("HTTP 201 from " + ok.url(), 0) == 0);
    CHECK(r->detail.find(refused.url() + ": ") != std::string::npos);
    CHECK(r->detail.find(failing.url() + ": HTTP 500 overloaded") != std::string::npos);
    CHECK(failing.requests().size() == 1);
    CHECK(ok.requests().size() == 1);
    CHECK(unused.requests().empty());
  }
  CHECK(loop.drain());
}

TEST_CASE("http: when every URL fails the invocation fails, with each reason") {
  TestLoop loop;
  {
    RefusingPort refused;
    TestServer failing(loop.get(), 500);
    TestServer missing(loop.get(), 404);
    const auto r = run_one(loop, http({refused.url(), failing.url(), missing.url()}));
    REQUIRE(r.has_value());
    INFO(r->detail);
    CHECK_FALSE(r->ok);
    CHECK(r->detail.rfind("no URL answered 2xx: " + refused.url() + ": ", 0) == 0);
    CHECK(r->detail.find(failing.url() + ": HTTP 500") != std::string::npos);
    CHECK(r->detail.find(missing.url() + ": HTTP 404") != std::string::npos);
  }
  CHECK(loop.drain());
}

TEST_CASE("http: a URL that does not answer in timeout_ms is abandoned for the next") {
  TestLoop loop;
  {
    TestServer silent(loop.get(), -1);
    TestServer ok(loop.get(), 200);
    SECTION("then the next answers") {
      const auto r = run_one(loop, http({silent.url(), ok.url()}, 1000));
      REQUIRE(r.has_value());
      INFO(r->detail);
      CHECK(r->ok);
      CHECK(r->detail.find(silent.url() + ": timed out after 1s") != std::string::npos);
      CHECK(silent.requests().size() == 1);
      CHECK(ok.requests().size() == 1);
    }
    SECTION("alone") {
      const auto r = run_one(loop, http({silent.url()}, 1000));
      REQUIRE(r.has_value());
      CHECK_FALSE(r->ok);
      CHECK(r->detail.find("timed out") != std::string::npos);
    }
  }
  CHECK(loop.drain());
}

TEST_CASE("http: cancel_all and destruction abort requests without calling back") {
  TestLoop loop;
  {
    TestServer silent(loop.get(), -1);
    auto client = std::make_unique<HttpClient>(loop.get());
    auto ex = make_http_executor(*client, "n1", http({silent.url()}));
    int calls = 0;
    ex->run(sample_invocation(), [&](const node::InvocationResult&) { ++calls; });
    ex->run(sample_invocation(), [&](const node::InvocationResult&) { ++calls; });
    CHECK(ex->running() == 2);
    REQUIRE(loop.run_until([&] { return silent.requests().size() == 2; }));
    SECTION("cancel_all") {
      ex->cancel_all();
      CHECK(ex->running() == 0);
      CHECK(client->in_flight() == 0);
    }
    SECTION("executor destroyed") {
      ex.reset();
      CHECK(client->in_flight() == 0);
    }
    loop.run_for(100);
    CHECK(calls == 0);
    ex.reset();
    client.reset();
  }
  CHECK(loop.drain());
}

// overlap = replace: stop() aborts that run's request and reports it replaced; the
// executor's other runs go on.
TEST_CASE("http: stop aborts one run's request and reports it replaced") {
  TestLoop loop;
  {
    TestServer silent(loop.get(), -1);
    auto client = std::make_unique<HttpClient>(loop.get());
    auto ex = make_http_executor(*client, "n1", http({silent.url()}));
    node::Invocation first = sample_invocation(), second = sample_invocation();
    second.id = first.id + 1;
    std::optional<node::InvocationResult> stopped;
    int other_calls = 0;
    ex->run(first, [&](const node::InvocationResult& r) { stopped = r; });
    ex->run(second, [&](const node::InvocationResult&) { ++other_calls; });
    REQUIRE(loop.run_until([&] { return silent.requests().size() == 2; }));
    CHECK_FALSE(ex->stop(second.id + 1));
    CHECK(ex->stop(first.id));
    REQUIRE(stopped.has_value());
    CHECK(stopped->id == first.id);
    CHECK_FALSE(stopped->ok);
    CHECK(stopped->replaced);
    CHECK(stopped->detail.rfind("aborted: replaced by a later occurrence", 0) == 0);
    CHECK(ex->running() == 1);
    CHECK(client->in_flight() == 1);
    CHECK(other_calls == 0);
    ex.reset();
    client.reset();
  }
  CHECK(loop.drain());
}

TEST_CASE("HttpClient: destroying it with requests in flight, or from a callback, is clean") {
  TestLoop loop;
  {
    TestServer silent(loop.get(), -1);
    TestServer ok(loop.get(), 200);
    auto client = std::make_unique<HttpClient>(loop.get());
    int calls = 0;
    HttpRequest slow;
    slow.url = silent.url();
    client->post(slow, [&](const HttpResponse&) { ++calls; });
    HttpRequest fast;
    fast.url = ok.url();
    client->post(fast, [&](const HttpResponse& r) {
      ++calls;
      CHECK(r.answered);
      CHECK(r.status == 200);
      client.reset();  // with the slow request still in flight
    });
    REQUIRE(loop.run_until([&] { return client == nullptr; }));
    CHECK(calls == 1);
  }
  CHECK(loop.drain());
}

TEST_CASE("HttpClient: an unsupported scheme or malformed URL is an answer-less failure") {
  TestLoop loop;
  {
    HttpClient client(loop.get());
    std::vector<HttpResponse> got;
    for (const char* url : {"gopher://127.0.0.1/", "http://[::1"}) {
      HttpRequest req;
      req.url = url;
      client.post(req, [&](const HttpResponse& r) { got.push_back(r); });
    }
    CHECK(got.empty());
    REQUIRE(loop.run_until([&] { return got.size() == 2; }));
    for (const auto& r : got) {
      CHECK_FALSE(r.answered);
      CHECK_FALSE(r.error.empty());
    }
  }
  CHECK(loop.drain());
}

TEST_CASE("HttpClient: max_host_connections holds further requests to one host back") {
  TestLoop loop;
  for (const long limit : {2L, 0L}) {
    INFO("max_host_connections " << limit);
    TestServer silent(loop.get(), -1);  // never answers: each request keeps its connection
    HttpClient client(loop.get(), limit);
    int answered = 0;
    for (int i = 0; i < 5; ++i) {
      HttpRequest req;
      req.url = silent.url();
      client.post(req, [&](const HttpResponse&) { ++answered; });
    }
    const size_t want = limit == 0 ? 5 : static_cast<size_t>(limit);
    REQUIRE(loop.run_until([&] { return silent.requests().size() >= want; }));
    loop.run_for(300);  // room for more to arrive, if the limit did not hold them back
    CHECK(silent.requests().size() == want);
    CHECK(answered == 0);
  }
  CHECK(loop.drain());
}
