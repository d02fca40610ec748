// The simulated network: latency, loss, duplication, reordering, corruption,
// partitions (symmetric, one-way, non-transitive), heal, streams.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/distribution.h"
#include "sim_test_process.h"

using namespace caesium;
using namespace caesium::sim;
using namespace caesium::sim::testing;

namespace {
constexpr auto D = Channel::kDatagram;
constexpr auto S = Channel::kStream;
}  // namespace

TEST_CASE("distribution shapes have the configured mean", "[sim]") {
  const uint64_t seed = test_seed(11);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  Rng rng(seed);
  for (auto shape : {Distribution::Shape::kUniform, Distribution::Shape::kExponential,
                     Distribution::Shape::kLognormal}) {
    Distribution d;
    d.shape = shape;
    d.base_ms = 10;
    d.jitter_ms = 40;
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const int64_t v = d.sample(rng);
      REQUIRE(v >= 10);
      sum += static_cast<double>(v);
    }
    INFO("shape " << shape_name(shape));
    CHECK(std::fabs(sum / n - 50.0) < 2.0);
  }
  CHECK(Distribution::constant(7).sample(rng) == 7);
}

TEST_CASE("datagram latency, loss and duplication match the configuration", "[sim]") {
  const uint64_t seed = test_seed(21);
  INFO("seed " << seed << " (replay: CAESIUM_SEED=" << seed << ")");
  WorldOptions o = quiet_options(seed);
  o.network.latency = Distribution{Distribution::Shape::kExponential, 5, 10.0, 1.0, kMsPerHour};
  o.network.loss = 0.1;
  o.network.duplicate = 0.05;
  TestWorld tw(2, o);
  const int n = 20000;
  for (int i = 0; i < n; ++i) tw.send(0, 1, D, std::to_string(i));
  tw.world->run_until(10 * kMsPerSecond);
  const auto& got = tw.p(1).received;
  const auto& st = tw.world->datagram_stats();
  // Expected: 18000 survive loss, 5% of those doubled -> ~18900 deliveries.
  CHECK(st.dropped_loss > 1700);
  CHECK(st.dropped_loss < 2300);
  CHECK(st.duplicated > 700);
  CHECK(st.duplicated < 1100);
  CHECK(got.size() == st.delivered);
  CHECK(got.size() == n - st.dropped_loss + st.duplicated);
  double sum = 0;
  bool reordered = false;
  for (size_t i = 0; i < got.size(); ++i) {
    sum += static_cast<double>(got[i].virtual_ms);
    if (i > 0 && std::stoi(got[i].bytes) < std::stoi(got[i - 1].bytes)) reordered = true;
    CHECK(got[i].from == "n1:7946");
  }
  CHECK(std::fabs(sum / static_cast<double>(got.size()) - 15.0) < 1.0);
  CHECK(reordered);  // jitter reorders datagrams
}

TEST_CASE("symmetric partition: groups talk inside, not across, unlisted nodes form one group", "[sim]") {
  TestWorld tw(5, quiet_options());
  tw.world->partition({{0, 1}, {2, 3}});  // n5 unlisted: its own group 0
  for (uint32_t a = 0; a < 5; ++a) {
    for (uint32_t b = 0; b < 5; ++b) {
      if (a != b) tw.send(a, b, D, "x");
    }
  }
  tw.world->run_until(100);
  CHECK(tw.count(1, D) == 1);  // from n1 only
  CHECK(tw.count(0, D) == 1);
  CHECK(tw.count(2, D) == 1);  // from n4 only
  CHECK(tw.count(4, D) == 0);  // alone
  CHECK(tw.world->links().can_send(0, 1));
  CHECK_FALSE(tw.world->links().can_send(1, 2));

  tw.world->partition({{0}});  // isolate n1; everyone else together
  tw.send(1, 4, D, "y");
  tw.send(0, 1, D, "z");
  tw.world->run_until(200);
  CHECK(tw.count(4, D) == 1);
  CHECK(tw.count(1, D) == 1);  // unchanged: n1 -> n2 now dropped
}

TEST_CASE("one-way partition drops one direction only, and breaks streams both ways", "[sim]") {
  TestWorld tw(2, quiet_options());
  tw.world->oneway(0, 1);
  tw.send(0, 1, D, "a->b");
  tw.send(1, 0, D, "b->a");
  tw.send(0, 1, S, "stream a->b");
  tw.send(1, 0, S, "stream b->a");
  tw.world->run_until(100);
  CHECK(tw.count(1, D) == 0);
  CHECK(tw.count(0, D) == 1);
  CHECK(tw.count(0, S) == 0);
  CHECK(tw.count(1, S) == 0);
  tw.world->heal_pair(0, 1);
  tw.send(0, 1, D, "again");
  tw.world->run_until(200);
  CHECK(tw.count(1, D) == 1);
}

TEST_CASE("non-transitive partition: A-B and B-C connected, A-C cut", "[sim]") {
  TestWorld tw(3, quiet_options());
  tw.world->cut(0, 2);
  tw.send(0, 1, D, "ab");
  tw.send(1, 2, D, "bc");
  tw.send(0, 2, D, "ac");
  tw.send(2, 0, D, "ca");
  tw.send(2, 1, S, "cb");
  tw.world->run_until(100);
  CHECK(tw.count(1, D) == 1);
  CHECK(tw.count(2, D) == 1);
  CHECK(tw.p(2).received[0].bytes == "bc");
  CHECK(tw.count(0, D) == 0);
  CHECK(tw.count(1, S) == 1);
  tw.world->heal_all();
  CHECK(tw.world->links().fully_connected());
  tw.send(0, 2, D, "ac2");
  tw.world->run_until(200);
  CHECK(tw.count(2, D) == 2);
}

TEST_CASE("a partition also drops datagrams already in flight", "[sim]") {
  TestWorld tw(2, quiet_options(1, 50));
  tw.send(0, 1, D, "in flight");
  tw.world->run_until(10);
  tw.world->partition({{0}, {1}});
  tw.world->run_until(100);
  CHECK(tw.count(1, D) == 0);
  CHECK(tw.world->datagram_stats().dropped_partition == 1);
}

TEST_CASE("streams are FIFO per connection despite jitter", "[sim]") {
  const uint64_t seed = test_seed(5);
  INFO("seed " << seed);
  WorldOptions o = quiet_options(seed);
  o.network.latency = Distribution{Distribution::Shape::kExponential, 1, 30.0, 1.0, kMsPerHour};
  TestWorld tw(2, o);
  for (int i = 0; i < 2000; ++i) {
    tw.send(0, 1, S, std::to_string(i));
    tw.send(0, 1, D, std::to_string(i));
    tw.world->run_until(tw.world->now_ms() + (i % 3));
  }
  tw.world->run_until(kMsPerMinute);
  int expect = 0;
  bool dgram_reordered = false;
  int last_dgram = -1;
  for (const auto& r : tw.p(1).received) {
    if (r.channel == S) {
      REQUIRE(std::stoi(r.bytes) == expect);
      ++expect;
    } else {
      if (std::stoi(r.bytes) < last_dgram) dgram_reordered = true;
      last_dgram = std::stoi(r.bytes);
    }
  }
  CHECK(expect == 2000);
  CHECK(dgram_reordered);
}

TEST_CASE("a partition breaks a stream: frames in flight are lost, queued ones flow after heal", "[sim]") {
  TestWorld tw(2, quiet_options(1, 50));
  tw.send(0, 1, S, "hello");  // connects (a round trip: 100 ms), then 50 ms in flight
  tw.world->run_until(150);
  REQUIRE(tw.count(1, S) == 1);
  CHECK(tw.world->stream_stats().connects == 1);
  for (int i = 0; i < 10; ++i) tw.send(0, 1, S, "before " + std::to_string(i));
  tw.world->run_until(160);
  tw.world->partition({{0}, {1}});
  tw.send(0, 1, S, "during");  // queued: no connection
  tw.world->run_until(10'000);
  CHECK(tw.count(1, S) == 1);
  CHECK(tw.world->stream_stats().broken == 10);
  CHECK(tw.world->stream_stats().connect_failures >= 1);  // a connect times out (5 s) across the split
  tw.world->heal_all();
  tw.send(0, 1, S, "after");
  tw.world->run_until(30'000);
  REQUIRE(tw.count(1, S) == 3);
  CHECK(tw.p(1).received[1].bytes == "during");  // FIFO, as over TCP
  CHECK(tw.p(1).received[2].bytes == "after");
  CHECK(tw.p(1).received[2].from == "n1:7947");
}

TEST_CASE("a sender backs off 100 ms doubling to 5 s while the receiver is down, queued frames wait", "[sim]") {
  TestWorld tw(2, quiet_options(1, 1));
  tw.world->crash(1);
  tw.send(0, 1, S, "waits");
  tw.world->run_until(60'000);
  // Refused after a 2 ms round trip each time: 100, 200, ... 3200, then every 5 s.
  const uint64_t failures = tw.world->stream_stats().connect_failures;
  CHECK(failures >= 15);
  CHECK(failures <= 20);
  CHECK(tw.world->stream_stats().queued == 1);
  tw.world->restart(1, false);
  tw.world->run_until(60'004);
  CHECK(tw.count(1, S) == 0);  // the back-off still runs (up to 5 s)
  tw.world->run_until(66'000);
  REQUIRE(tw.count(1, S) == 1);  // the new process gets the queued frame
  CHECK(tw.p(1).received[0].bytes == "waits");
}

TEST_CASE("a crash breaks streams to the node, datagrams reach it again after restart", "[sim]") {
  TestWorld tw(2, quiet_options(1, 50));
  tw.send(0, 1, S, "lost");
  tw.send(0, 1, D, "lost too");
  tw.world->run_until(10);
  tw.world->crash(1);
  tw.world->run_until(20);
  tw.world->restart(1, false);  // back before the frames would have arrived (t=50)
  tw.world->run_until(100);
  CHECK(tw.count(1, S) == 0);  // the old connection died with the old process
  CHECK(tw.count(1, D) == 1);  // UDP has no connection: the new process gets it
  tw.world->crash(1);
  tw.send(0, 1, D, "to a dead node");
  tw.world->run_until(150);
  tw.world->restart(1, false);
  CHECK(tw.count(1, D) == 0);
  CHECK(tw.world->datagram_stats().dropped_down == 1);
  tw.send(0, 1, S, "new connection");  // after the back-off the crash started (100 ms)
  tw.send(0, 1, D, "hello");
  tw.world->run_until(400);
  CHECK(tw.count(1, S) == 1);
  CHECK(tw.count(1, D) == 1);
}

TEST_CASE("corrupted datagrams arrive corrupted, same length, and are counted", "[sim]") {
  const uint64_t seed = test_seed(3);
  INFO("seed " << seed);
  WorldOptions o = quiet_options(seed);
  o.network.corrupt = 1.0;
  TestWorld tw(2, o);
  const std::string payload(100, 'a');
  for (int i = 0; i < 100; ++i) tw.send(0, 1, D, payload);
  tw.world->run_until(100);
  REQUIRE(tw.count(1, D) == 100);
  for (const auto& r : tw.p(1).received) {
    CHECK(r.bytes.size() == payload.size());
    CHECK(r.bytes != payload);
  }
  CHECK(tw.world->datagram_stats().corrupted == 100);
}

TEST_CASE("datagrams over 1400 bytes are a reported violation, unknown addresses are counted", "[sim]") {
  TestWorld tw(2, quiet_options());
  tw.send(0, 1, D, std::string(1400, 'x'));
  tw.send(0, 1, D, std::string(1401, 'x'));
  tw.p(0).outbox.push_back({D, "nowhere:1", "?"});
  tw.world->drain_outputs(0);
  tw.world->run_until(100);
  CHECK(tw.count(1, D) == 1);
  Report r;
  tw.world->finish(r);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "datagram_size");
  CHECK(r.violations[0].node == "n1");
  CHECK(r.figures["net.datagram.max_bytes"] == 1401);
  CHECK(r.figures["net.datagram.unroutable"] == 1);
  CHECK_FALSE(r.passed());
}
