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
  std::atomic<size_t> held_count{0};      // held.size(), for client threads
  uv_timer_t* timer = nullptr;

  EchoServer(TestLoop& l, HttpServerOptions o) : loop(l) {
    server = std::make_unique<HttpServer>(loop.get(), o, [this](ServerRequest req, HttpServer::Respond respond) {
      ServerResponse r;
      r.content_type = "text/plain";
      r.body = req.path + (req.body.empty() ? "" : ":" + req.body);
      if (req.path == "/hold") {
        held.push_back(std::move(respond));
        ++held_count;
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

TEST_CASE("http server: an oversized body gets 413 and a close, the next client is served") {
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

TEST_CASE("http server: connections over the limit are closed at once when none is idle") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.max_connections = 1;
  EchoServer s(loop, o);
  Closed second;
  s.with_client([&] {
    RawClient a(s.port());
    a.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");  // busy: its answer is held
    for (int i = 0; i < 5000 && s.held_count.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    second = send_and_read_to_eof(s.port(), kGet);
  });
  CHECK(second.bytes.empty());
  CHECK(second.eof);
  CHECK(s.server->stats().connections_refused == 1);
}

TEST_CASE("http server: when every slot is taken a new connection replaces the longest idle one") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.max_connections = 2;
  EchoServer s(loop, o);
  std::string first, third;
  Closed a_after;
  s.with_client([&] {
    RawClient a(s.port());
    a.send(kGet);
    first = a.read_responses(1);  // a: idle since its answer, the longest
    RawClient b(s.port());
    b.send(kGet);
    b.read_responses(1);
    RawClient c(s.port());
    c.send(kGet);
    third = c.read_responses(1);
    a_after.bytes = a.read_to_eof().substr(first.size());
    a_after.eof = a.eof();
  });
  CHECK(first.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(third.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(a_after.bytes.empty());
  CHECK(a_after.eof);
  CHECK(s.server->stats().idle_closed_for_new == 1);
  CHECK(s.server->stats().connections_refused == 0);
}

TEST_CASE("http server: one client holding 600 idle connections does not lock the others out") {
  TestLoop loop;
  HttpServerOptions o = fast_options();  // 512 connections, 64 per client address
  REQUIRE(o.max_connections == 512);
  REQUIRE(o.max_connections_per_client == 64);
  EchoServer s(loop, o);
  std::vector<std::string> others;
  std::string hog_answer;
  size_t hog_connected = 0;
  s.with_client([&] {
    std::vector<std::unique_ptr<RawClient>> hog;  // idle: they send nothing
    for (int i = 0; i < 600; ++i) {
      hog.push_back(std::make_unique<RawClient>(s.port(), 2000, "127.0.0.1"));
      hog_connected += hog.back()->connected() ? 1 : 0;
    }
    // Clients at other addresses are served while the hog holds its connections.
    for (const char* from : {"127.0.0.2", "127.0.0.3"}) {
      RawClient c(s.port(), 5000, from);
      c.send(kGet);
      others.push_back(c.read_responses(1));
    }
    // One of the hog's first 64 connections, still open, is served too.
    hog[0]->send(kGet);
    hog_answer = hog[0]->read_responses(1);
  });
  CHECK(hog_connected == 600);
  REQUIRE(others.size() == 2);
  for (const auto& got : others) CHECK(got.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(hog_answer.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(s.server->stats().connections_refused_per_client == 600 - 64);
  CHECK(s.server->stats().connections_refused == 0);
  CHECK(s.server->stats().connections_accepted == 64 + 2);
}

TEST_CASE("http server: under pressure idle keep-alive connections are closed sooner") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.max_connections = 4;
  o.idle_timeout_ms = 60'000;
  o.idle_timeout_under_pressure_ms = 50;
  EchoServer s(loop, o);
  Closed alone;
  std::vector<Closed> crowd(3);
  s.with_client([&] {
    {
      // One connection of four is no pressure: still open when the read gives up.
      RawClient a(s.port(), 300);
      a.send(kGet);
      alone.bytes = a.read_responses(1);
      a.read_to_eof();
      alone.eof = a.eof();
    }
    std::vector<std::unique_ptr<RawClient>> cs;
    for (int i = 0; i < 3; ++i) {
      cs.push_back(std::make_unique<RawClient>(s.port(), 5000));
      cs[i]->send(kGet);
    }
    for (int i = 0; i < 3; ++i) {
      crowd[i].bytes = cs[i]->read_to_eof();
      crowd[i].eof = cs[i]->eof();
    }
  });
  CHECK(alone.bytes.rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK_FALSE(alone.eof);
  // Three of four open: each is answered, then closed once idle for the short timeout.
  for (const auto& c : crowd) {
    CHECK(c.bytes.rfind("HTTP/1.1 200 ", 0) == 0);
    CHECK(c.eof);
  }
}

TEST_CASE("http server: a head with bare LF line ends gets 400 at once, not a 408 later") {
  TestLoop loop;
  HttpServerOptions o = fast_options();
  o.request_timeout_ms = 60'000;  // a 408 could only come after the client's reads gave up
  EchoServer s(loop, o);
  Closed got;
  s.with_client([&] { got = send_and_read_to_eof(s.port(), "GET /a HTTP/1.1\nHost: x\n\n"); });
  CHECK(got.bytes.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(got.bytes.find("CRLF") != std::string::npos);
  CHECK(got.eof);
  CHECK(s.server->stats().timeouts == 0);
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
