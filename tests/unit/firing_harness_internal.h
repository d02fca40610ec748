// The harness's private parts, shared by its two files: a node (Cluster::Member), its
// scheduler host (Cluster::Host) and a turn (one input to one scheduler, then what it
// caused on that node).  Only tests/unit/firing_harness*.cpp include this.
#pragma once

#include <algorithm>
#include <sstream>

#include "tests/unit/firing_harness.h"

namespace caesium::firing_test {

// One node: its process (scheduler + host), its disk, its queues, its views.
struct Cluster::Member {
  std::string id;
  size_t index = 0;
  bool up = false;
  uint64_t boot = 0, generation = 0;
  int64_t skew_ms = 0;
  Topology topology;
  std::set<std::string> masters;
  bool active = true;
  int64_t horizon_utc = 0;  // persisted on the disk, like the Node's amnesia record
  // Disk (durable) and memory (as written).  Store keys are (volume, key).
  std::map<std::pair<std::string, std::string>, Record> store, disk_store;
  std::map<std::string, std::string> local, disk_local;
  struct Op {
    bool local = false, erase = false;
    std::string volume, key;
    Record rec;
  };
  std::vector<Op> batch;  // written, not yet durable
  uint64_t written = 0, durable = 0;
  bool auto_flush = true;
  struct Out {
    uint64_t barrier = 0;
    std::string to;
    std::variant<FireMessage, Invocation> what;
  };
  std::deque<Out> outbox;        // sends and starts waiting for durability (barriers non-decreasing)
  std::deque<FireMessage> self;  // released messages to this node itself
  struct Echo {
    std::string volume, key;
    std::optional<std::string> value;
  };
  std::deque<Echo> echoes;  // store writes, for on_record after the call returns
  std::map<std::string, ObservedView> views;
  std::map<uint64_t, size_t> running;  // invocation id -> index in Cluster::runs_
  std::unique_ptr<Host> host;
  std::unique_ptr<Scheduler> sched;
};

// The SchedulerHost of one node.  It never calls back into the scheduler: it queues,
// and Cluster::settle feeds the queues back after the scheduler returned.
class Cluster::Host final : public schedule::SchedulerHost {
 public:
  Host(Cluster& c, Member& m) : c_(c), m_(m) {}
  void send(const std::string& node, FireMessage msg, bool after_durable) override {
    push_out(after_durable ? m_.written : 0, node, std::move(msg));
  }
  void store_put(const std::string& volume, const std::string& key, std::string value) override {
    c_.write(m_, volume, key, std::move(value), false, true);
  }
  void store_put_lazy(const std::string& volume, const std::string& key, std::string value) override {
    c_.write(m_, volume, key, std::move(value), true, true);
  }
  void local_put(const std::string& key, std::string value) override {
    m_.local[key] = value;
    m_.batch.push_back(Member::Op{true, false, {}, key, Record{std::move(value), 0}});
    ++m_.written;
  }
  void local_erase(const std::string& key) override {
    m_.local.erase(key);
    m_.batch.push_back(Member::Op{true, true, {}, key, {}});
    ++m_.written;
  }
  void invoke(Invocation invocation) override { push_out(m_.written, m_.id, std::move(invocation)); }
  uint64_t write_mark() const override { return m_.written; }
  void invoke_after(Invocation invocation, uint64_t mark) override { push_out(mark, m_.id, std::move(invocation)); }
  void cancel(uint64_t invocation_id) override {
    if (auto it = m_.running.find(invocation_id); it != m_.running.end()) c_.runs_[it->second].stop_requested = true;
  }
  void emit(const FireEvent& event) override {
    const Clock now = c_.clock(m_.id);
    c_.events_.push_back(LoggedEvent{m_.id, now.mono_ms, now.utc_ms, event});
  }
  PeerView peer(const std::string& node) const override { return c_.peer_view(m_, node); }
  std::optional<std::string> store_get(const std::string& volume, const std::string& key) const override {
    auto it = m_.store.find({volume, key});
    if (it == m_.store.end() || it->second.deleted) return std::nullopt;
    return it->second.value;
  }
  // The harness's write counter stands for the record's version (last writer wins).
  std::optional<schedule::Version> entry_version(const std::string& volume, const std::string& key) const override {
    auto it = m_.store.find({volume, key});
    if (it == m_.store.end()) return std::nullopt;
    return schedule::Version{static_cast<int64_t>(it->second.version), 0, "h"};
  }

 private:
  void push_out(uint64_t barrier, const std::string& to, std::variant<FireMessage, Invocation> what) {
    if (!m_.outbox.empty()) barrier = std::max(barrier, m_.outbox.back().barrier);  // kept in order
    m_.outbox.push_back(Member::Out{barrier, to, std::move(what)});
  }
  Cluster& c_;
  Member& m_;
};

template <class F>
void Cluster::turn(Member& m, F&& f) {
  if (!m.up) return;
  f(*m.sched, clock(m.id));
  if (m.up) m.sched->settle(clock(m.id));  // records fed by f are decided on, as the Node's pump does
  settle(m);
}

}  // namespace caesium::firing_test
