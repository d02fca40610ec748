// The World: determinism, ticks and busy loops, slow nodes, clocks with skew and
// drift, handler executions, checkers' view of faults.
#include <catch2/catch.hpp>

#include "sim_test_process.h"

using namespace caesium;
using namespace caesium::sim;
using namespace caesium::sim::testing;

namespace {

// Each node pings a random peer on every tick; 2-byte payloads.  Randomness comes from
// the World (latency, loss), so equal seeds must give equal traces.
uint64_t chatter_hash(uint64_t seed) {
  WorldOptions o;
  o.seed = seed;
  o.network.loss = 0.05;
  o.network.duplicate = 0.02;
  o.network.latency = Distribution{Distribution::Shape::kLognormal, 1, 5.0, 1.0, kMsPerHour};
  TestWorld tw(5, o);
  for (uint32_t i = 0; i < 5; ++i) {
    tw.p(i).deadline_mono = tw.world->clock_of(i).mono_ms + 100;
    tw.p(i).on_tick_fn = [&tw, i](TestProcess& p, Clock now) {
      p.deadline_mono = now.mono_ms + 100;
      const uint32_t to = (i + 1 + static_cast<uint32_t>(p.ticks.size()) % 4) % 5;
      p.outbox.push_back({Channel::kDatagram, tw.world->spec(to).gossip_addr, "hi"});
    };
    tw.world->drain_outputs(i);
  }
  tw.world->at(2000, [&tw] { tw.world->crash(2); });
  tw.world->at(4000, [&tw] { tw.world->restart(2, false); });
  tw.world->run_until(10 * kMsPerSecond);
  return tw.world->trace_hash();
}

}  // namespace

TEST_CASE("same seed, same trace hash, different seed, different hash", "[sim]") {
  const uint64_t seed = test_seed(42);
  INFO("seed " << seed);
  CHECK(chatter_hash(seed) == chatter_hash(seed));
  CHECK(chatter_hash(seed) != chatter_hash(seed + 1));
}

TEST_CASE("ticks come at the process's deadline on its monotonic clock", "[sim]") {
  TestWorld tw(1, quiet_options());
  const int64_t base = tw.world->clock_of(0).mono_ms;
  CHECK(base >= kMsPerSecond);  // monotonic clocks do not start at 0
  tw.p(0).deadline_mono = base + 250;
  tw.p(0).on_tick_fn = [](TestProcess& p, Clock now) { p.deadline_mono = now.mono_ms + 250; };
  tw.world->drain_outputs(0);
  tw.world->run_until(1000);
  REQUIRE(tw.p(0).ticks.size() == 4);
  CHECK(tw.p(0).ticks[0].mono_ms == base + 250);
  CHECK(tw.p(0).ticks[3].mono_ms == base + 1000);
}

TEST_CASE("a process that keeps asking for a past deadline is reported as a busy loop", "[sim]") {
  WorldOptions o = quiet_options();
  o.busy_loop_limit = 50;
  TestWorld tw(1, o);
  tw.p(0).deadline_mono = 0;  // always in the past
  tw.world->drain_outputs(0);
  tw.world->run_until(100);  // must end: after the report it is ticked once per ms
  Report r;
  tw.world->finish(r);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "busy_loop");
  CHECK(tw.p(0).ticks.size() < 200);
}

namespace {

// Every datagram node i receives is answered with `answers` datagrams to the sender.
void answer_every_datagram(TestWorld& tw, uint32_t i, int answers) {
  tw.p(i).on_receive_fn = [answers](TestProcess& p, const Received& r) {
    for (int k = 0; k < answers; ++k) p.outbox.push_back({Channel::kDatagram, r.from, "pong"});
  };
}

std::string only_violation(World& world, const std::string& invariant) {
  Report r;
  world.finish(r);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == invariant);
  return r.violations[0].detail;
}

}  // namespace

TEST_CASE("two processes that answer each other in no time are stopped as a livelock", "[sim]") {
  WorldOptions o = quiet_options(1, 0);  // zero latency: virtual time never advances
  o.livelock_events_per_instant = 1000;
  TestWorld tw(2, o);
  answer_every_datagram(tw, 0, 1);
  answer_every_datagram(tw, 1, 1);
  tw.world->at(50, [&tw] { tw.send(0, 1, Channel::kDatagram, "ping"); });
  tw.world->run_until(10 * kMsPerSecond);  // must return
  CHECK(tw.world->livelocked());
  CHECK(tw.world->now_ms() == 50);  // stopped where it was stuck
  CHECK(tw.p(0).received.size() + tw.p(1).received.size() <= 1001);
  const std::string detail = only_violation(*tw.world, "livelock");
  CHECK(detail.find("livelock: 1001 events at t=50ms without virtual time advancing") == 0);
  CHECK(detail.find("n1=") != std::string::npos);
  CHECK(detail.find("n2=") != std::string::npos);
  CHECK(detail.find("datagram=") != std::string::npos);
  // Nothing more runs afterwards.
  const size_t seen = tw.p(1).received.size();
  tw.world->run_until(20 * kMsPerSecond);
  CHECK(tw.p(1).received.size() == seen);
}

namespace {

struct PingPong {
  bool livelocked = false;
  int64_t stopped_at_ms = 0;
  uint64_t events = 0;
  std::string detail;  // the livelock violation's
};

// Node 1 pings node 2 once; each answers every datagram `answers` times, 1 ms away.
PingPong ping_pong(WorldOptions o, int answers, int64_t until_ms) {
  TestWorld tw(2, std::move(o));
  answer_every_datagram(tw, 0, answers);
  answer_every_datagram(tw, 1, answers);
  tw.send(0, 1, Channel::kDatagram, "ping");
  tw.world->run_until(until_ms);
  PingPong out{tw.world->livelocked(), tw.world->now_ms(), tw.world->events_processed(), {}};
  if (out.livelocked) out.detail = only_violation(*tw.world, "livelock");
  return out;
}

}  // namespace

TEST_CASE("a run whose agenda only grows, or that passes its event cap, is stopped", "[sim]") {
  SECTION("every message answered twice: the agenda doubles each millisecond") {
    WorldOptions o = quiet_options(1, 1);
    o.livelock_queue_events = 5000;
    const PingPong r = ping_pong(o, 2, kMsPerHour);
    CHECK(r.livelocked);
    CHECK(r.stopped_at_ms < 100);
    CHECK(r.detail.find("livelock: the agenda holds") == 0);
  }
  SECTION("a ping-pong that creeps forward one millisecond at a time") {
    WorldOptions o = quiet_options(1, 1);
    o.max_events = 3000;
    const PingPong r = ping_pong(o, 1, kMsPerHour);
    CHECK(r.livelocked);
    CHECK(r.events == 3001);
    CHECK(r.detail.find("above the run's cap of 3000") != std::string::npos);
  }
  SECTION("the same ping-pong under the default bounds runs to its end") {
    const PingPong r = ping_pong(quiet_options(1, 1), 1, 10 * kMsPerSecond);
    CHECK_FALSE(r.livelocked);
    CHECK(r.stopped_at_ms == 10 * kMsPerSecond);
  }
}

TEST_CASE("a slow node processes inbound messages and ticks late, in order", "[sim]") {
  TestWorld tw(2, quiet_options(1, 5));
  tw.world->set_slow(1, 800, 2000);
  CHECK(tw.world->is_slow(1));
  for (int i = 0; i < 5; ++i) tw.send(0, 1, Channel::kStream, std::to_string(i));
  tw.p(1).deadline_mono = tw.world->clock_of(1).mono_ms + 100;
  tw.p(1).on_tick_fn = [](TestProcess& p, Clock) { p.deadline_mono = kNever; };
  tw.world->drain_outputs(1);
  tw.world->run_until(700);
  CHECK(tw.p(1).received.empty());
  CHECK(tw.p(1).ticks.empty());
  tw.world->run_until(1000);
  REQUIRE(tw.p(1).received.size() == 5);
  CHECK(tw.p(1).received[0].virtual_ms == 815);  // connect (10 ms round trip), 5 ms in flight, 800 late
  REQUIRE(tw.p(1).ticks.size() == 1);
  CHECK(tw.p(1).ticks[0].mono_ms - tw.world->clock_of(1).mono_ms == 900 - 1000);
  // A message sent just before the slowness ends waits behind the backlog, and a
  // message sent after it overtakes nothing.
  tw.world->run_until(1995);
  tw.send(0, 1, Channel::kStream, "5");  // arrives at 2000, slow until 2000: not delayed
  tw.world->run_until(2100);
  CHECK_FALSE(tw.world->is_slow(1));
  REQUIRE(tw.p(1).received.size() == 6);
  CHECK(tw.p(1).received[5].virtual_ms == 2000);
  for (int i = 0; i < 6; ++i) CHECK(tw.p(1).received[static_cast<size_t>(i)].bytes == std::to_string(i));
}

TEST_CASE("an inbound-only slow node processes messages late but ticks on time", "[sim]") {
  TestWorld tw(2, quiet_options(1, 5));
  tw.world->set_slow(1, 800, 2000, /*inbound_only=*/true);
  for (int i = 0; i < 3; ++i) tw.send(0, 1, Channel::kDatagram, std::to_string(i));
  tw.p(1).deadline_mono = tw.world->clock_of(1).mono_ms + 100;
  tw.p(1).on_tick_fn = [](TestProcess& p, Clock) { p.deadline_mono = kNever; };
  tw.world->drain_outputs(1);
  tw.world->run_until(700);
  CHECK(tw.p(1).received.empty());  // the messages wait
  REQUIRE(tw.p(1).ticks.size() == 1);  // the timer did not
  CHECK(tw.p(1).ticks[0].mono_ms - tw.world->clock_of(1).mono_ms == 100 - 700);
  tw.world->run_until(1000);
  REQUIRE(tw.p(1).received.size() == 3);
  CHECK(tw.p(1).received[0].virtual_ms >= 800);
}

TEST_CASE("skew and drift move realtime within the bound, monotonic is untouched", "[sim]") {
  WorldOptions o = quiet_options();
  o.max_skew_ms = 5000;
  TestWorld tw(2, o);
  const int64_t epoch = o.epoch_utc_ms;
  const int64_t mono0 = tw.world->clock_of(0).mono_ms;
  CHECK(tw.world->clock_of(0).utc_ms == epoch);
  tw.world->set_skew(0, 2000, 0.001);  // +2 s, then 1 ms per second faster
  tw.world->run_until(10 * kMsPerSecond);
  CHECK(tw.world->clock_of(0).utc_ms == epoch + 10000 + 2000 + 10);
  CHECK(tw.world->clock_of(0).mono_ms == mono0 + 10000);
  CHECK(tw.world->clock_of(1).utc_ms == epoch + 10000);
  tw.world->run_until(kMsPerHour);  // drift would reach +5.6 s: held at the bound
  CHECK(tw.world->clock_of(0).utc_ms == epoch + kMsPerHour + 5000);
  tw.world->set_skew(1, -3000, 0);  // a step backwards
  CHECK(tw.world->clock_of(1).utc_ms == epoch + kMsPerHour - 3000);
}

TEST_CASE("handler executions are recorded, complete after their duration, or die with the node", "[sim]") {
  WorldOptions o = quiet_options();
  o.handler.duration = Distribution::constant(100);
  o.handler.slowness = {1.0, 3.0};
  TestWorld tw(2, o);
  auto invoke = [&](uint32_t node, const std::string& fire) {
    Invocation inv;
    inv.id = 7;
    inv.volume = "v";
    inv.entity = "e";
    inv.entry = "t";
    inv.fire_id = fire;
    inv.scheduled_utc_ms = 123;
    inv.possible_duplicate = true;
    tw.p(node).invocations.push_back(inv);
    tw.world->drain_outputs(node);
  };
  invoke(0, "f1");
  invoke(1, "f2");  // 3x slower handler on n2
  tw.world->run_until(150);
  REQUIRE(tw.p(0).done.size() == 1);
  CHECK(tw.p(0).done[0].id == 7);
  CHECK(tw.p(0).done[0].ok);
  CHECK(tw.p(1).done.empty());
  tw.world->crash(1);
  tw.world->run_until(1000);
  const auto& ex = tw.world->executions();
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].invocation.fire_id == "f1");
  CHECK(ex[0].outcome == Execution::Outcome::kOk);
  CHECK(ex[0].done_ms == 100);
  CHECK(ex[0].invocation.possible_duplicate);
  CHECK(ex[0].start_utc_ms == o.epoch_utc_ms);
  CHECK(ex[1].node == 1);
  CHECK(ex[1].outcome == Execution::Outcome::kAbandoned);
}

TEST_CASE("handler failure and never-complete probabilities", "[sim]") {
  WorldOptions o = quiet_options();
  o.handler.fail_probability = 1.0;
  TestWorld tw(1, o);
  Invocation inv;
  inv.id = 1;
  tw.p(0).invocations.push_back(inv);
  tw.world->drain_outputs(0);
  tw.world->run_until(1000);
  REQUIRE(tw.p(0).done.size() == 1);
  CHECK_FALSE(tw.p(0).done[0].ok);

  WorldOptions h = quiet_options();
  h.handler.never_complete_probability = 1.0;
  TestWorld hung(1, h);
  hung.p(0).invocations.push_back(inv);
  hung.world->drain_outputs(0);
  hung.world->run_until(kMsPerHour);
  CHECK(hung.p(0).done.empty());
  CHECK(hung.world->executions()[0].outcome == Execution::Outcome::kHung);
}

namespace {
struct FaultLog final : Checker {
  std::vector<std::string> seen;
  void on_fault(const World& w, const FaultRecord& f) override {
    std::string s = fault_name(f.kind);
    for (uint32_t n : f.nodes) s += " " + w.spec(n).id;
    s += w.is_up(f.nodes.empty() ? 0 : f.nodes[0]) ? " up" : " down";
    seen.push_back(s);
  }
  void finish(const World&, Report&) override {}
};
}  // namespace

TEST_CASE("checkers hear every fault after the World applied it, ground truth histories", "[sim]") {
  FaultLog log;
  WorldOptions o = quiet_options();
  World w(make_cluster(3), o, [](const ProcessContext&) { return std::make_unique<TestProcess>(); });
  w.add_checker(&log);
  w.start();
  w.at(1000, [&] { w.crash(1); });
  w.at(2000, [&] { w.restart(1, true); });
  w.at(3000, [&] { w.cut(0, 2); });
  w.at(4000, [&] { w.heal_all(); });
  w.at(5000, [&] { w.set_slow(2, 100, 1000); });
  w.run_until(10000);
  const std::vector<std::string> expected = {"crash n2 down", "restart n2 up", "cut n1 n3 up",
                                             "heal up", "slow n3 up", "slow_end n3 up"};
  CHECK(log.seen == expected);
  CHECK(w.healthy_throughout(0, 0, 10000));
  CHECK_FALSE(w.healthy_throughout(1, 500, 1500));
  CHECK(w.healthy_throughout(1, 2500, 9000));
  CHECK_FALSE(w.healthy_throughout(2, 5500, 5600));  // slow
  CHECK(w.linked_throughout(0, 2, 0, 2999));
  CHECK_FALSE(w.linked_throughout(0, 2, 2000, 3500));
  CHECK(w.linked_throughout(0, 2, 4000, 9000));
  CHECK(w.healthy_pair_throughout(0, 1, 4000, 9000));
}

TEST_CASE("a message far slower than the base latency makes its pair unhealthy while in flight", "[sim]") {
  // Uniform jitter with mean 400 ms: every delivery takes 0..800 ms beyond the 5 ms base.
  // A few hundred of them include spikes; a pair that exchanged none stays healthy.
  WorldOptions o = quiet_options();
  o.network.latency = Distribution{Distribution::Shape::kUniform, 5, 400.0, 1.0, kMsPerHour};
  TestWorld tw(3, o);
  for (int i = 0; i < 50; ++i) tw.send(0, 1, Channel::kStream, std::to_string(i));
  tw.world->run_until(5 * kMsPerSecond);
  CHECK_FALSE(tw.world->healthy_pair_throughout(0, 1, 0, 1000));
  CHECK_FALSE(tw.world->healthy_pair_throughout(1, 0, 0, 1000));  // either direction
  CHECK_FALSE(tw.world->healthy_pair_throughout(0, 1, 500, 600));  // sent before, still in flight
  CHECK(tw.world->healthy_pair_throughout(0, 1, 3000, 4000));     // all delivered by then
  CHECK(tw.world->healthy_pair_throughout(0, 2, 0, 1000));        // no traffic, no spike
}
