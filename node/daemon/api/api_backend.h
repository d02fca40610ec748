// ApiBackend over a node::Node: what the daemon serves, and what the tests drive with a
// Node they feed by hand.  The few things that touch the world (the clock, the
// daemon's drain after a write, metrics, randomness) are hooks.
#pragma once

#include <functional>
#include <string>

#include "node/core/node.h"
#include "node/daemon/api/api.h"

namespace caesium::daemon {

class NodeApiBackend : public ApiBackend {
 public:
  struct Hooks {
    std::function<Clock()> now;                 // required
    std::function<void()> after_write;          // e.g. the runtime's drain(); may be empty
    std::function<std::string()> metrics_text;  // empty = render_metrics over the node alone
    std::function<uint64_t()> random64;         // required for Chronos ids
  };

  // REQUIRES: `node` outlives the backend; hooks.now and hooks.random64 are set.
  NodeApiBackend(node::Node& node, Hooks hooks);

  const std::string& node_id() const override { return node_.id(); }
  Clock now() const override { return hooks_.now(); }
  const node::ClusterConfig& cluster_config() const override { return node_.config(); }
  bool is_replica(const std::string& volume) const override { return node_.is_replica(volume); }
  Result<node::WriteAck> put_entry(const std::string& volume, const schedule::Entry& entry, bool want_acks) override;
  Result<node::WriteAck> set_paused(const std::string& volume, const std::string& entity, const std::string& name,
                                    bool paused, bool want_acks) override;
  Result<node::Node::TriggerAck> trigger_entry(const std::string& volume, const std::string& entity,
                                               const std::string& name, std::string_view idempotency_key,
                                               bool want_acks) override;
  Result<node::WriteAck> delete_entry(const std::string& volume, const std::string& entity, const std::string& name,
                                      bool want_acks) override;
  Result<node::WriteAck> apply_config(node::ClusterConfig config, bool force) override;
  std::optional<schedule::Entry> get_entry(const std::string& volume, const std::string& entity,
                                           const std::string& name) const override {
    return node_.get_entry(volume, entity, name);
  }
  std::vector<schedule::Entry> list_entries(const std::string& volume, const std::string& entity_prefix,
                                            const std::string& start_after, size_t limit) const override {
    return node_.list_entries(volume, entity_prefix, start_after, limit);
  }
  std::vector<node::Node::OccurrenceHistory> history(const std::string& volume, const std::string& entity,
                                                     const std::string& name, size_t limit) const override {
    return node_.history(volume, entity, name, limit);
  }
  std::optional<int64_t> next_occurrence(const std::string& volume, const std::string& key) const override {
    return node_.next_occurrence(volume, key);
  }
  std::vector<ReplicaContact> replica_contacts(const std::string& volume) const override;
  nlohmann::json status() const override;
  std::string metrics_text() const override;
  std::optional<Status> config_outcome(uint64_t id) const override { return node_.config_outcome(id); }
  uint64_t durable_seq() const override { return node_.durable_seq(); }
  size_t replica_acks(const std::string& volume, const std::string& key,
                      const schedule::Version& version) const override {
    return node_.replica_acks(volume, key, version);
  }
  uint64_t random64() override { return hooks_.random64(); }

 private:
  void wrote() const {
    if (hooks_.after_write) hooks_.after_write();
  }

  node::Node& node_;
  Hooks hooks_;
};

// GET /v1/status for `node` (docs/api.md "Status").
nlohmann::json status_json(const node::Node& node);

}  // namespace caesium::daemon
