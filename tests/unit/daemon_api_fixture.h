// A real Node core driven by hand for the API tests: node "n1" (or another id) in a
// three-node config whose volumes are
//   "v"     replicas n1         (local to n1)
//   "pair"  replicas n1, n2     (local to n1 and n2, w=2 possible)
//   "far"   replicas n2, n3     (not local to n1: forwarded)
// Storage is durable only when the test says so (settle()), so a test can see a write
// wait for durability.  Time is hand-set.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/core/node.h"
#include "node/daemon/api/api.h"
#include "node/daemon/api/api_backend.h"

namespace caesium::test {

inline constexpr int64_t kApiTestStartUtcMs = 1'774'000'000'000;  // 2026-03-20T09:46:40Z
inline constexpr const char* kApiTestToken = "s3cret-token";

inline node::ClusterConfig api_test_config(uint64_t epoch = 1) {
  node::ClusterConfig c;
  c.epoch = epoch;
  c.nodes = {{"n1", std::nullopt, {}}, {"n2", std::nullopt, {}}, {"n3", std::nullopt, {}}};
  c.volumes = {{"far", {"n2", "n3"}, {}}, {"pair", {"n1", "n2"}, {}}, {"v", {"n1"}, {}}};
  return node::normalize(c).value();
}

class ApiTestNode {
 public:
  explicit ApiTestNode(const std::string& id = "n1") {
    node::NodeOptions o;
    o.id = id;
    o.gossip_addr = "127.0.0.1:17001";
    o.stream_addr = "127.0.0.1:17002";
    o.api_addr = "127.0.0.1:17003";
    o.initial_config = api_test_config();
    node_ = std::make_unique<node::Node>(std::move(o), 7);
    clock_ = Clock{1'000, kApiTestStartUtcMs};
    Status s = node_->start({}, clock_);
    if (!s.ok()) throw std::runtime_error(s.error().message);
    daemon::NodeApiBackend::Hooks hooks;
    hooks.now = [this] { return clock_; };
    hooks.random64 = [this] { return ++random_; };
    backend_ = std::make_unique<Backend>(*node_, std::move(hooks), this);
    drain();
  }

  node::Node& node() { return *node_; }
  daemon::ApiBackend& backend() { return *backend_; }
  Clock& clock() { return clock_; }
  void advance(int64_t ms) {
    clock_.mono_ms += ms;
    clock_.utc_ms += ms;
    node_->on_tick(clock_);
    drain();
  }

  // Pretends every storage batch handed out so far is durable.
  void settle() {
    drain();
    if (polled_seq_ > node_->durable_seq()) node_->on_durable(polled_seq_, clock_);
    drain();
  }

  // Forwarding targets the backend reports, by volume (default: what the Node knows).
  std::map<std::string, std::vector<daemon::ReplicaContact>> contacts;
  // Fire events drained from the Node's event queue (what a fire observer would take).
  std::vector<schedule::FireEvent::Kind> queued_fire_events;

 private:
  class Backend : public daemon::NodeApiBackend {
   public:
    Backend(node::Node& n, Hooks h, ApiTestNode* owner) : daemon::NodeApiBackend(n, std::move(h)), owner_(owner) {}
    std::vector<daemon::ReplicaContact> replica_contacts(const std::string& volume) const override {
      auto it = owner_->contacts.find(volume);
      if (it != owner_->contacts.end()) return it->second;
      return daemon::NodeApiBackend::replica_contacts(volume);
    }

   private:
    ApiTestNode* owner_;
  };

  // Drops what the node sends and runs (no peers, no handlers here) and records the
  // storage batches handed out.
  void drain() {
    node::StorageBatch b;
    while (node_->poll_storage(b)) polled_seq_ = b.seq;
    node::Transmit t;
    while (node_->poll_transmit(t)) {}
    node::Invocation inv;
    while (node_->poll_invocation(inv)) {}
    node::NodeEvent e;
    while (node_->poll_event(e)) {
      if (e.kind == node::NodeEvent::Kind::kFire) queued_fire_events.push_back(e.fire.kind);
    }
  }

  std::unique_ptr<node::Node> node_;
  std::unique_ptr<Backend> backend_;
  Clock clock_;
  uint64_t random_ = 0x0123456789abcdefULL;
  uint64_t polled_seq_ = 0;
};

inline daemon::ServerRequest api_request(std::string method, std::string target, std::string body = {},
                                         bool with_token = true) {
  daemon::ServerRequest r;
  r.method = std::move(method);
  r.target = target;
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? std::string() : target.substr(q + 1);
  r.headers.emplace_back("host", "localhost");
  if (with_token) r.headers.emplace_back("authorization", std::string("Bearer ") + kApiTestToken);
  r.body = std::move(body);
  return r;
}

inline daemon::ApiOptions api_test_options() {
  daemon::ApiOptions o;
  o.token = kApiTestToken;
  o.chronos_volume = "v";
  return o;
}

}  // namespace caesium::test
