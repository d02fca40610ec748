// The transport on loopback: datagrams, frames in order over one reused connection,
// bounded queues toward an unreachable peer, reconnection, and hostile bytes on the
// stream port (bad lengths close the connection; the node keeps serving).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/rng.h"
#include "node/daemon/net/net.h"
#include "node/daemon/net/net_addr.h"
#include "tests/unit/daemon_exec_test_loop.h"
#include "tests/unit/daemon_test_support.h"
#include "tests/unit/test_seed.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::free_port;

namespace {

struct Endpoint {
  std::string gossip, stream;
  std::vector<std::pair<std::string, std::string>> datagrams;  // (from, bytes)
  std::vector<std::string> frames;
  std::unique_ptr<Transport> t;
  bool closed = false;

  Endpoint(uv_loop_t* loop, TransportConfig cfg = {}, std::string stream_addr = {}) {
    gossip = "127.0.0.1:" + std::to_string(free_port(SOCK_DGRAM));
    stream = stream_addr.empty() ? "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM)) : stream_addr;
    Transport::Callbacks cb;
    cb.on_datagram = [this](const std::string& from, std::string_view b) { datagrams.emplace_back(from, b); };
    cb.on_frame = [this](const std::string&, std::string_view f) { frames.emplace_back(f); };
    t = std::make_unique<Transport>(loop, cfg, std::move(cb));
    Status s = t->listen(gossip, stream);
    INFO((s.ok() ? std::string() : s.error().message));
    REQUIRE(s.ok());
  }
  void close(test::TestLoop& loop) {
    t->close([this] { closed = true; });
    REQUIRE(loop.run_until([this] { return closed; }));
  }
};

int port_of(const std::string& addr) { return parse_host_port(addr)->port; }

// A blocking client socket connected to a stream address.
int connect_raw(const std::string& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_of(addr)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

void write_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    REQUIRE(n > 0);
    off += static_cast<size_t>(n);
  }
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

}  // namespace

TEST_CASE("transport: datagrams both ways, oversize ones are dropped and counted") {
  test::TestLoop loop;
  Endpoint a(loop.get()), b(loop.get());
  a.t->send_datagram(b.gossip, "ping");
  b.t->send_datagram(a.gossip, "pong");
  REQUIRE(loop.run_until([&] { return a.datagrams.size() == 1 && b.datagrams.size() == 1; }));
  CHECK(b.datagrams[0] == std::pair<std::string, std::string>{a.gossip, "ping"});
  CHECK(a.datagrams[0].second == "pong");

  a.t->send_datagram(b.gossip, std::string(kMaxDatagramBytes + 1, 'x'));
  CHECK(a.t->metrics().datagrams_oversize_out == 1);
  // A larger datagram from elsewhere is not ours.
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port_of(b.gossip)));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string big(3000, 'y');
  REQUIRE(::sendto(fd, big.data(), big.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 3000);
  ::close(fd);
  a.t->send_datagram(b.gossip, std::string(kMaxDatagramBytes, 'z'));  // the largest allowed
  REQUIRE(loop.run_until([&] { return b.datagrams.size() == 2; }));
  CHECK(b.datagrams[1].second.size() == kMaxDatagramBytes);
  CHECK(b.t->metrics().datagrams_oversize_in == 1);
  a.close(loop);
  b.close(loop);
  CHECK(loop.drain());
}

TEST_CASE("transport: frames arrive whole and in order over one reused connection") {
  const uint64_t seed = test::seed_or(7);
  INFO("seed " << seed << " (replay with CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  test::TestLoop loop;
  Endpoint a(loop.get()), b(loop.get());
  std::vector<std::string> sent;
  for (int i = 0; i < 300; ++i) {
    const size_t len = rng.chance(0.05) ? static_cast<size_t>(rng.between(100'000, 400'000))
                                        : static_cast<size_t>(rng.between(1, 2'000));
    std::string f(len, '\0');
    for (auto& ch : f) ch = static_cast<char>(rng.below(256));
    f.replace(0, std::min<size_t>(len, 8), std::to_string(i).substr(0, std::min<size_t>(len, 8)));
    sent.push_back(f);
    a.t->send_frame(b.stream, f);
    if (i % 50 == 0) loop.run_for(5);  // interleave sending with the loop running
  }
  REQUIRE(loop.run_until([&] { return b.frames.size() == sent.size(); }));
  CHECK(b.frames == sent);
  CHECK(a.t->metrics().connects == 1);
  CHECK(a.t->metrics().frames_out == sent.size());
  CHECK(b.t->metrics().frames_in == sent.size());
  CHECK(a.t->pending_bytes() == 0);
  a.close(loop);
  b.close(loop);
  CHECK(loop.drain());
}

TEST_CASE("transport: a bad length prefix closes that connection, never the node") {
  test::TestLoop loop;
  Endpoint a(loop.get()), b(loop.get());
  for (uint32_t bad : {uint32_t{0}, uint32_t{0xFFFFFFFF}, uint32_t{(16u << 20) + 1}}) {
    INFO("length " << bad);
    const uint64_t before = b.t->metrics().bad_frames;
    const int fd = connect_raw(b.stream);
    write_all(fd, be32(5) + "hello" + be32(bad) + "junk");
    REQUIRE(loop.run_until([&] { return b.t->metrics().bad_frames == before + 1; }));
    // The good frame before the bad one was delivered; the connection is closed.
    CHECK(b.frames.back() == "hello");
    char c;
    REQUIRE(loop.run_until([&] { return ::recv(fd, &c, 1, MSG_DONTWAIT) == 0; }));
    ::close(fd);
  }
  // Random bytes: whatever they parse as, nothing breaks.
  Rng rng(test::seed_or(11));
  for (int i = 0; i < 20; ++i) {
    const int fd = connect_raw(b.stream);
    std::string junk(static_cast<size_t>(rng.between(1, 5000)), '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng.below(256));
    write_all(fd, junk);
    ::close(fd);
  }
  loop.run_for(100);
  // Still serving.
  const size_t n = b.frames.size();
  a.t->send_frame(b.stream, "after");
  REQUIRE(loop.run_until([&] { return b.frames.size() == n + 1; }));
  CHECK(b.frames.back() == "after");
  a.close(loop);
  b.close(loop);
  CHECK(loop.drain());
}

TEST_CASE("transport: an unreachable peer costs a bounded queue, frames flow once it listens") {
  test::TestLoop loop;
  TransportConfig cfg;
  cfg.send_queue_bytes = 64 * 1024;
  Endpoint a(loop.get(), cfg);
  const std::string dead = "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));  // nobody listens
  for (int i = 0; i < 100; ++i) a.t->send_frame(dead, std::string(4000, static_cast<char>('a' + i % 26)));
  CHECK(a.t->metrics().frames_dropped > 0);
  CHECK(a.t->pending_bytes() <= cfg.send_queue_bytes);
  REQUIRE(loop.run_until([&] { return a.t->metrics().connect_failures >= 2; }));  // it keeps retrying
  // The peer comes up on that address: the newest frames (the oldest were dropped) arrive.
  Endpoint late(loop.get(), {}, dead);
  REQUIRE(loop.run_until([&] { return a.t->pending_bytes() == 0 && !late.frames.empty(); }));
  REQUIRE(loop.run_until([&] { return late.t->metrics().frames_in == a.t->metrics().frames_out; }));
  CHECK(late.frames.size() + a.t->metrics().frames_dropped == 100);
  CHECK(late.frames.back() == std::string(4000, static_cast<char>('a' + 99 % 26)));
  a.close(loop);
  late.close(loop);
  CHECK(loop.drain());
}

TEST_CASE("transport: reconnects after the peer restarts") {
  test::TestLoop loop;
  Endpoint a(loop.get());
  auto b = std::make_unique<Endpoint>(loop.get());
  const std::string addr = b->stream;
  a.t->send_frame(addr, "one");
  REQUIRE(loop.run_until([&] { return b->frames.size() == 1; }));
  b->close(loop);
  b = std::make_unique<Endpoint>(loop.get(), TransportConfig{}, addr);
  // The first send may go into the dying connection and be lost (the protocol tolerates
  // loss); keep sending until one arrives through a new connection.
  REQUIRE(loop.run_until([&] {
    if (b->frames.empty()) a.t->send_frame(addr, "two");
    return !b->frames.empty();
  }));
  CHECK(b->frames[0] == "two");
  CHECK(a.t->metrics().connects >= 2);
  a.close(loop);
  b->close(loop);
  CHECK(loop.drain());
}

TEST_CASE("transport: listen errors name the address") {
  test::TestLoop loop;
  Endpoint a(loop.get());
  Transport other(loop.get(), {}, {});
  Status s = other.listen("127.0.0.1:" + std::to_string(free_port(SOCK_DGRAM)), a.stream);  // stream port taken
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains(a.stream));
  bool closed = false;
  other.close([&] { closed = true; });
  REQUIRE(loop.run_until([&] { return closed; }));
  a.close(loop);
  CHECK(loop.drain());
}

TEST_CASE("addresses: host:port parsing") {
  CHECK(parse_host_port("127.0.0.1:80")->port == 80);
  CHECK(parse_host_port("127.0.0.1:80")->is_ip_literal);
  CHECK(parse_host_port("[::1]:7946")->host == "::1");
  CHECK(parse_host_port("node-1.example:7946")->host == "node-1.example");
  CHECK_FALSE(parse_host_port("node-1.example:7946")->is_ip_literal);
  CHECK(format_host_port(*parse_host_port("[::1]:7946")) == "[::1]:7946");
  CHECK_FALSE(parse_host_port("localhost").ok());
  CHECK_FALSE(parse_host_port("::1:80").ok());
  CHECK_FALSE(parse_host_port("[::1]80").ok());
  CHECK_FALSE(parse_host_port("a:65536").ok());
  CHECK_FALSE(parse_host_port("a:0").ok());
  CHECK(parse_host_port("a:0", true).ok());
  CHECK_FALSE(parse_host_port("a b:80").ok());
  CHECK_FALSE(parse_host_port(":80").ok());
}
