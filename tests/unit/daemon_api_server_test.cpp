// HttpServer on loopback: keep-alive, pipelining, late answers, and that oversized,
// malformed, slow and idle clients are refused or dropped without harm to the next
// client.  The client runs in a thread with bounded reads (daemon_api_client_socket.h);
// every assertion is made on the test thread after it finished.
#include <catch2/catch.hpp>

#include <uv.h>

#include "node/daemon/http/http_server.h"
#include "tests/unit/daemon_api_client_socket.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::RawClient;
using caesium::test::TestLoop;

namespace {

const std::string kGet = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";

// Answers every request with its path as the body; "/late" after a loop turn.
struct EchoServer {
  TestLoop& loop;
  std::unique_ptr<HttpServer> server;
  std::vector<HttpServer::Respond> held;  // "/hold": never answered by the server itself
  uv_timer_t* timer = nullptr;

  EchoServer(TestLoop& l, HttpServerOptions o) : loop(l) {
    server = std::make_unique<HttpServer>(loop.get(), o, [this](ServerRequest req, HttpServer::Respond respond) {
      ServerResponse r;
      r.content_type = "text/plain";
      r.body = req.path + (req.body.empty() ? "" : ":" + req.body);
      if (req.path == "/hold") {
        held.push_back(std::move(respond));
      } else if (req.path == "/late") {
        later([respond, r] { respond(r); });
      } else {
        respond(r);
      }
    });
    REQUIRE(server->listen("127.0.0.1:0").ok());
  }
  ~EchoServer() {
    server.reset();
    if (timer != nullptr) uv_close(reinterpret_cast<uv_handle_t*>(timer), [](uv_handle_t* h) {
      delete static_cast<std::function<void()>*>(h->data);
      delete reinterpret_cast<uv_timer_t*>(h);
    });
    loop.drain();
  }
  void later(std::function<void()> fn) {
    if (timer == nullptr) {
      timer = new uv_timer_t;
      uv_timer_init(loop.get(), timer);
      timer->data = nullptr;
    }
    delete static_cast<std::function<void()>*>(timer->data);
    timer->data = new std::function<void()>(std::move(fn));
    uv_timer_start(timer, [](uv_timer_t* t) { (*static_cast<std::function<void()>*>(t->data))(); }, 5, 0);
  }
  uint16_t port() const { return server->port(); }
  template <class F>
  void with_client(F&& client) {
    test::with_client_thread([&](const std::function<bool()>& done) { return loop.run_until(done); }, client);
  }
};

// What one connection got before the server closed it (eof) or a read timed out.
struct Closed {
  std::string bytes;
  bool eof = false;
};
Closed send_and_read_to_eof(uint16_t port, const std::string& request) {
  RawClient c(port);
  if (!request.empty()) c.send(request);
  Closed out;
  out.bytes = c.read_to_eof();
  out.eof = c.eof();
  return out;
}

HttpServerOptions fast_options() {
  HttpServerOptions o;
  o.limits.max_body_bytes = 1000;
  return o;
}

}  // namespace

TEST_CASE("http server: keep-alive serves several requests, late answers included") {
  TestLoop loop;
  EchoServer s(loop, fast_options());
  std::string got;
  s.with_client([&] {
    RawClient c(s.port());
    c.send(kGet);
    c.read_responses(1);
    c.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n");
    c.read_responses(2);
    c.send("PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz");
    got = c.read_responses(3);
  });
  CHECK(RawClient::complete_responses(got) == 3);
  CHECK(got.find("\r\n\r\n/a") != std::string::npos);
  CHECK(got.find("\r\n\r\n/late") != std::string::npos);
  CHECK(got.find("\r\n\r\n/b:xyz") != std::string::npos);
  CHECK(got.find("Connection: close") == std::string::npos);
  CHECK(s.server->stats().connections_accepted == 1);
  CHECK(s.server->stats().requests == 3);
}

TEST_CASE("http server: pipelined requests are answered in order") {
  TestLoop loop;
  EchoServer s(loop, fast_options());
  std::string got;
  s.with_client([&] {
    RawClient c(s.port());
    c.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    got = c.read_to_eof();
  });
  REQUIRE(RawClient::complete_responses(got) == 2);
  CHECK(got.find("/late") < got.find("/second"));
  CHECK(got.find("Connection: close") != std::string::npos);
}

TEST_CASE("http server: an oversized body gets 413 and a close; the next client is served") {
  TestLoop loop;
  EchoServer s(loop, fast_options());
  Closed big, bad;
  std::string after;
  s.with_client([&] {
    big = send_and_read_to_eof(s.port(), "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'a'));
    bad = send_and_read_to_eof(s.port(), "GARBAGE\r\n\r\n");
    RawClient c(s.port());
    c.send(kGet);
    after = c.read_responses(1);
  });
  CHECK(big.bytes.rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(big.bytes.find("\"error\"") != std::string::npos);
  CHECK(big.eof);
  CHECK(bad.bytes.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(bad.eof);
  CHECK(after.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(s.server->stats().bad_requests == 2);
}

TEST_CASE("http server: a request that does not arrive in time gets 408 and a close") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.request_timeout_ms = 100;
  EchoServer s(loop, o);
  Closed got;
  s.with_client([&] { got = send_and_read_to_eof(s.port(), "GET /a HTTP/1.1\r\nHo"); });  // and nothing more
  CHECK(got.bytes.rfind("HTTP/1.1 408 ", 0) == 0);
  CHECK(got.eof);
  CHECK(s.server->stats().timeouts == 1);
}

TEST_CASE("http server: an idle connection is closed without an answer") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.idle_timeout_ms = 50;
  EchoServer s(loop, o);
  Closed got;
  s.with_client([&] { got = send_and_read_to_eof(s.port(), ""); });
  CHECK(got.bytes.empty());
  CHECK(got.eof);
}

TEST_CASE("http server: connections over the limit are closed at once") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.max_connections = 1;
  EchoServer s(loop, o);
  std::string first;
  Closed second;
  s.with_client([&] {
    RawClient a(s.port());
    a.send(kGet);
    first = a.read_responses(1);  // a is established and counted
    second = send_and_read_to_eof(s.port(), kGet);
  });
  CHECK(first.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(second.bytes.empty());
  CHECK(second.eof);
  CHECK(s.server->stats().connections_refused == 1);
}

TEST_CASE("http server: Expect 100-continue gets an interim answer before the body") {
  TestLoop loop;
  EchoServer s(loop, fast_options());
  std::string interim, got;
  s.with_client([&] {
    RawClient c(s.port());
    c.send("PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    interim = c.read_until([](const std::string& in) { return in.find("\r\n\r\n") != std::string::npos; });
    c.send("ok");
    got = c.read_responses(1);
  });
  CHECK(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  CHECK(got.find("/e:ok") != std::string::npos);
}

TEST_CASE("http server: answering after the client left, or after the server is gone, does nothing") {
  TestLoop loop;
  auto s = std::make_unique<EchoServer>(loop, fast_options());
  s->with_client([&] {
    RawClient c(s->port());
    c.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
  });  // the client is gone
  REQUIRE(loop.run_until([&] { return s->held.size() == 1; }));
  s->held[0](ServerResponse{});  // written to a closed socket: the connection closes
  REQUIRE(loop.run_until([&] { return s->server->stats().open_connections == 0; }));

  std::atomic<bool> done{false};
  bool eof = false;
  std::thread t([&] {
    RawClient c(s->port());
    c.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    c.read_to_eof();
    eof = c.eof();
    done = true;
  });
  REQUIRE(loop.run_until([&] { return s->held.size() == 2; }));
  auto respond = s->held[1];
  s->server.reset();  // the server goes with a request outstanding: its connection closes
  respond(ServerResponse{});
  CHECK(loop.run_until([&] { return done.load(); }));
  t.join();
  CHECK(eof);
}
