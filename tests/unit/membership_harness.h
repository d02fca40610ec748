// A minimal deterministic network for Membership unit tests: N state machines, a virtual
// clock, and an in-memory message queue with latency, loss, partitions, crashes and a
// per-node inbound delay (a slow node).  The real simulator (sim/) replaces this for
// system-level runs; this one exists so that gossip/ can be tested on its own.
//
// Every input is followed by check_invariants() and by a size check of every datagram
// against the budget, so each scenario also exercises those.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "base/rng.h"
#include "gossip/membership.h"
#include "gossip/membership_wire_size.h"

namespace caesium::gossip::testing {

// Seeds for randomized tests: CAESIUM_SEED=<n> replays one; otherwise `count` fixed ones.
inline std::vector<uint64_t> test_seeds(size_t count, uint64_t first = 1) {
  if (const char* env = std::getenv("CAESIUM_SEED")) return {std::strtoull(env, nullptr, 10)};
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < count; ++i) seeds.push_back(first + i);
  return seeds;
}

struct NetConfig {
  int64_t latency_min_ms = 1;
  int64_t latency_max_ms = 10;
  double loss = 0.0;  // datagrams only; streams are reliable while connected
};

struct LoggedEvent {
  int64_t at_ms = 0;
  std::string observer;
  MemberEvent event;
};

inline std::string node_id(size_t i) { return "n" + std::to_string(i); }

class Cluster {
 public:
  struct Node {
    std::string id;
    std::string addr;         // gossip
    std::string stream_addr;  // push-pull
    std::unique_ptr<Membership> m;
    bool up = false;
    int64_t inbound_delay_ms = 0;
    int group = 0;  // nodes talk only within their partition group
  };

  // A datagram or stream message about to be delivered; the filter may drop it.
  using DropFilter = std::function<bool(const Node& from, const Node& to, const Outgoing& msg)>;
  // Sees every message a node sends (for counting).
  using SendObserver = std::function<void(const Node& from, const Outgoing& msg, int64_t at_ms)>;

  Cluster(uint64_t seed, MembershipConfig config, NetConfig net = {}) : config_(config), net_(net), rng_(seed) {}

  // Adds node `id` (not started).  Returns its index.
  size_t add(std::string id, MemberMeta meta = {}, std::string addr = {}, uint64_t incarnation = 0) {
    Node n;
    n.id = std::move(id);
    n.addr = addr.empty() ? n.id + ":7946" : addr;
    n.stream_addr = addr.empty() ? n.id + ":7947" : addr + "/stream";
    meta.stream_addr = n.stream_addr;
    REQUIRE(Membership::check_identity(n.id, n.addr, meta, config_).ok());
    n.m = std::make_unique<Membership>(n.id, n.addr, meta, incarnation, config_, rng_.fork());
    nodes_.push_back(std::move(n));
    const size_t i = nodes_.size() - 1;
    by_addr_[nodes_[i].addr] = i;
    by_addr_[nodes_[i].stream_addr] = i;
    return i;
  }

  // Starts node i and has it join through node `seed` (itself: a new cluster).
  void start(size_t i, size_t seed) {
    Node& n = nodes_[i];
    n.up = true;
    std::vector<std::string> seeds;
    if (seed != i) seeds.push_back(nodes_[seed].stream_addr);
    n.m->join(seeds, now_ms_);
    drain(i);
  }

  // n nodes "n0".."n<n-1>"; n0 starts the cluster, the others join it 50 ms apart.
  void boot(size_t n) {
    for (size_t i = 0; i < n; ++i) add(node_id(i));
    for (size_t i = 0; i < n; ++i) {
      run_until(now_ms_ + 50);
      start(i, 0);
    }
  }

  // boot(n), then requires that the view converges within `within_ms`.
  void boot_converged(size_t n, int64_t within_ms = 20000) {
    boot(n);
    REQUIRE(run_until_converged(now_ms_ + within_ms) >= 0);
  }

  void crash(size_t i) { nodes_[i].up = false; }

  // Replaces node i's process with a fresh one at `incarnation`, joining through `seed`.
  void restart(size_t i, uint64_t incarnation, size_t seed) {
    Node& n = nodes_[i];
    MemberMeta meta;
    meta.stream_addr = n.stream_addr;
    n.m = std::make_unique<Membership>(n.id, n.addr, meta, incarnation, config_, rng_.fork());
    start(i, seed);
  }

  void partition(const std::vector<std::vector<size_t>>& groups) {
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t i : groups[g]) nodes_[i].group = static_cast<int>(g) + 1;
  }
  void heal() {
    for (auto& n : nodes_) n.group = 0;
  }

  void set_drop_filter(DropFilter f) { drop_ = std::move(f); }
  void set_send_observer(SendObserver f) { observe_ = std::move(f); }

  // Runs every message delivery and timer up to and including `until_ms`.
  void run_until(int64_t until_ms) {
    int same_instant_steps = 0;
    int64_t last_at = -1;
    for (;;) {
      int64_t best = until_ms + 1;
      int best_node = -1;  // -1: a message
      if (!inflight_.empty()) best = inflight_.top().at_ms;
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i].up) continue;
        const int64_t d = std::max(nodes_[i].m->next_deadline_ms(), now_ms_);
        if (d < best) {
          best = d;
          best_node = static_cast<int>(i);
        }
      }
      if (best > until_ms) break;
      now_ms_ = best;
      same_instant_steps = best == last_at ? same_instant_steps + 1 : 0;
      last_at = best;
      // A state machine that keeps asking to be ticked at the same instant would hang a
      // real driver: next_deadline_ms must move past `now` once the work is done.
      REQUIRE(same_instant_steps < 100000);
      if (best_node >= 0) {
        nodes_[static_cast<size_t>(best_node)].m->on_tick(now_ms_);
        drain(static_cast<size_t>(best_node));
      } else {
        deliver();
      }
    }
    now_ms_ = until_ms;
  }

  Membership& m(size_t i) { return *nodes_[i].m; }
  Node& node(size_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  int64_t now_ms() const { return now_ms_; }
  const std::vector<LoggedEvent>& events() const { return events_; }
  size_t max_datagram_bytes_seen() const { return max_datagram_bytes_; }
  size_t max_updates_in_datagram() const { return max_updates_; }
  uint64_t datagrams_sent() const { return datagrams_; }

  // True if every up node sees every up node alive and all of them hold the same records
  // (id, address, incarnation, state) for the up nodes.
  bool converged() const {
    std::set<std::pair<std::string, std::string>> up_nodes;  // (id, address)
    size_t up = 0;
    for (const auto& n : nodes_) {
      if (!n.up) continue;
      up_nodes.emplace(n.id, n.addr);
      ++up;
    }
    std::vector<MemberRecord> reference;
    bool first = true;
    for (const auto& observer : nodes_) {
      if (!observer.up) continue;
      std::vector<MemberRecord> view;
      for (auto& r : observer.m->members()) {
        if (up_nodes.count({r.node, r.addr}) == 0) continue;
        if (r.state != MemberState::kAlive) return false;
        r.meta = {};  // meta is compared by the tests that care
        view.push_back(std::move(r));
      }
      if (view.size() != up) return false;
      if (first) {
        reference = view;
        first = false;
      } else if (view != reference) {
        return false;
      }
    }
    return true;
  }

  // Runs in steps of `step_ms` until converged() or `deadline_ms`; returns the time of
  // convergence or -1.
  int64_t run_until_converged(int64_t deadline_ms, int64_t step_ms = 100) {
    while (now_ms_ < deadline_ms) {
      if (converged()) return now_ms_;
      run_until(std::min(deadline_ms, now_ms_ + step_ms));
    }
    return converged() ? now_ms_ : -1;
  }

  // Events of `kind` about `subject` (any observer, or only `observer` if given).
  size_t count_events(MemberEvent::Kind kind, const std::string& subject, const std::string& observer = {}) const {
    size_t n = 0;
    for (const auto& e : events_) {
      if (e.event.kind == kind && e.event.node == subject && (observer.empty() || e.observer == observer)) ++n;
    }
    return n;
  }

 private:
  struct InFlight {
    int64_t at_ms = 0;
    uint64_t order = 0;
    size_t from = 0;
    size_t to = 0;
    Outgoing msg;
  };
  struct Later {
    bool operator()(const InFlight& a, const InFlight& b) const {
      if (a.at_ms != b.at_ms) return a.at_ms > b.at_ms;
      return a.order > b.order;
    }
  };

  bool connected(size_t a, size_t b) const {
    return nodes_[a].up && nodes_[b].up && nodes_[a].group == nodes_[b].group;
  }

  void drain(size_t i) {
    Node& n = nodes_[i];
    n.m->check_invariants();
    Outgoing out;
    while (n.m->poll_send(out)) {
      if (out.channel == Outgoing::Channel::kDatagram) {
        const auto* p = std::get_if<Packet>(&out.msg);
        REQUIRE(p != nullptr);
        const size_t bytes = estimated_wire_size(*p);
        REQUIRE(bytes <= n.m->datagram_budget_bytes());
        max_datagram_bytes_ = std::max(max_datagram_bytes_, bytes);
        max_updates_ = std::max(max_updates_, p->updates.size());
        ++datagrams_;
      } else {
        REQUIRE(std::holds_alternative<PushPull>(out.msg));
      }
      if (observe_) observe_(n, out, now_ms_);
      auto it = by_addr_.find(out.to_addr);
      if (it == by_addr_.end()) continue;
      const size_t to = it->second;
      if (!connected(i, to)) continue;
      if (out.channel == Outgoing::Channel::kDatagram && net_.loss > 0 && rng_.chance(net_.loss)) continue;
      if (drop_ && drop_(n, nodes_[to], out)) continue;
      const int64_t latency = rng_.between(net_.latency_min_ms, net_.latency_max_ms) + nodes_[to].inbound_delay_ms;
      inflight_.push(InFlight{now_ms_ + latency, next_order_++, i, to, std::move(out)});
    }
    MemberEvent e;
    while (n.m->poll_event(e)) events_.push_back(LoggedEvent{now_ms_, n.id, std::move(e)});
  }

  void deliver() {
    InFlight f = inflight_.top();
    inflight_.pop();
    if (!connected(f.from, f.to)) return;  // crashed or partitioned while in flight
    const Node& from = nodes_[f.from];
    const Peer peer{from.id, from.addr};
    Membership& dest = *nodes_[f.to].m;
    if (const auto* p = std::get_if<Packet>(&f.msg.msg)) {
      dest.on_packet(peer, *p, now_ms_);
    } else {
      dest.on_push_pull(peer, std::get<PushPull>(f.msg.msg), now_ms_);
    }
    drain(f.to);
  }

  MembershipConfig config_;
  NetConfig net_;
  Rng rng_;
  int64_t now_ms_ = 0;
  std::vector<Node> nodes_;
  std::map<std::string, size_t> by_addr_;
  std::priority_queue<InFlight, std::vector<InFlight>, Later> inflight_;
  uint64_t next_order_ = 0;
  DropFilter drop_;
  SendObserver observe_;
  std::vector<LoggedEvent> events_;
  size_t max_datagram_bytes_ = 0;
  size_t max_updates_ = 0;
  uint64_t datagrams_ = 0;
};

}  // namespace caesium::gossip::testing
