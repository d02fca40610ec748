// A scriptable sim::Process for the simulator's unit tests: it records every input with
// the clock it came with, and sends / stores / invokes whatever the test queues.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "sim/world.h"

namespace caesium::sim::testing {

struct Received {
  Clock at;
  int64_t virtual_ms = 0;
  Channel channel = Channel::kDatagram;
  std::string from;
  std::string bytes;
};

class TestProcess final : public Process {
 public:
  // Inputs seen.
  std::vector<StoredRecord> started_with;
  std::vector<Received> received;
  std::vector<Clock> ticks;
  std::vector<uint64_t> durable;
  std::vector<InvocationResult> done;
  bool left = false;
  // Outputs the test queues (drained by the World after each input or drain_outputs).
  std::vector<Transmit> outbox;
  std::vector<StorageBatch> batches;
  std::vector<Invocation> invocations;
  std::vector<Observation> observations;
  int64_t deadline_mono = kNever;
  // Introspection answers.
  std::vector<std::pair<std::string, int>> view;
  std::vector<std::pair<std::string, uint64_t>> digests;
  // Called on every tick, after it is recorded.
  std::function<void(TestProcess&, Clock)> on_tick_fn;
  // Called on every datagram or frame, after it is recorded.
  std::function<void(TestProcess&, const Received&)> on_receive_fn;
  const World* world = nullptr;  // to stamp virtual time on receipts

  void start(std::vector<StoredRecord> disk, Clock) override { started_with = std::move(disk); }
  void leave(Clock) override { left = true; }
  void on_datagram(const std::string& from, const std::string& bytes, Clock now) override {
    received.push_back({now, world ? world->now_ms() : 0, Channel::kDatagram, from, bytes});
    if (on_receive_fn) on_receive_fn(*this, received.back());
  }
  void on_stream(const std::string& from, const std::string& bytes, Clock now) override {
    received.push_back({now, world ? world->now_ms() : 0, Channel::kStream, from, bytes});
    if (on_receive_fn) on_receive_fn(*this, received.back());
  }
  void on_tick(Clock now) override {
    ticks.push_back(now);
    if (on_tick_fn) on_tick_fn(*this, now);
  }
  void on_durable(uint64_t seq, Clock) override { durable.push_back(seq); }
  void on_invocation_done(const InvocationResult& r, Clock) override { done.push_back(r); }
  int64_t next_deadline_mono() const override { return deadline_mono; }
  std::vector<std::pair<std::string, int>> member_view() const override { return view; }
  std::vector<std::pair<std::string, uint64_t>> volume_digests() const override { return digests; }
  bool poll_transmit(Transmit& out) override { return pop(outbox, out); }
  bool poll_storage(StorageBatch& out) override { return pop(batches, out); }
  bool poll_invocation(Invocation& out) override { return pop(invocations, out); }
  bool poll_observation(Observation& out) override { return pop(observations, out); }

 private:
  template <class T>
  static bool pop(std::vector<T>& q, T& out) {
    if (q.empty()) return false;
    out = std::move(q.front());
    q.erase(q.begin());
    return true;
  }
};

inline ClusterSpec make_cluster(int n) {
  ClusterSpec c;
  for (int i = 1; i <= n; ++i) {
    NodeSpec s;
    s.id = "n" + std::to_string(i);
    s.gossip_addr = s.id + ":7946";
    s.stream_addr = s.id + ":7947";
    c.nodes.push_back(s);
  }
  return c;
}

// A World of TestProcesses; procs[i] always points at node i's current process.
struct TestWorld {
  std::vector<TestProcess*> procs;
  std::unique_ptr<World> world;

  TestWorld(int n, WorldOptions options, std::vector<Checker*> checkers = {})
      : procs(static_cast<size_t>(n), nullptr) {
    world = std::make_unique<World>(make_cluster(n), std::move(options),
                                    [this](const ProcessContext& ctx) {
                                      auto p = std::make_unique<TestProcess>();
                                      p->world = world.get();
                                      procs[ctx.self] = p.get();
                                      return p;
                                    });
    for (Checker* c : checkers) world->add_checker(c);
    world->start();
  }
  TestProcess& p(uint32_t i) { return *procs[i]; }
  // Queues a frame from node `from` to node `to` and lets the World route it now.
  void send(uint32_t from, uint32_t to, Channel ch, std::string bytes) {
    const NodeSpec& dst = world->spec(to);
    p(from).outbox.push_back({ch, ch == Channel::kDatagram ? dst.gossip_addr : dst.stream_addr,
                              std::move(bytes)});
    world->drain_outputs(from);
  }
  size_t count(uint32_t node, Channel ch) {
    size_t n = 0;
    for (const auto& r : p(node).received) n += r.channel == ch ? 1 : 0;
    return n;
  }
};

// A quiet network: constant latency, nothing lost.
inline WorldOptions quiet_options(uint64_t seed = 1, int64_t latency_ms = 5) {
  WorldOptions o;
  o.seed = seed;
  o.network.latency = Distribution::constant(latency_ms);
  o.disk_sync = Distribution::constant(10);
  return o;
}

// The seed for randomized tests: CAESIUM_SEED when set (to replay), else `fallback`.
inline uint64_t test_seed(uint64_t fallback) {
  const char* env = std::getenv("CAESIUM_SEED");
  return env ? std::strtoull(env, nullptr, 10) : fallback;
}

}  // namespace caesium::sim::testing
