// NodeApiBackend and the status document.
#include "node/daemon/api/api_backend.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "node/daemon/metrics/metrics.h"

namespace caesium::daemon {

using nlohmann::json;

NodeApiBackend::NodeApiBackend(node::Node& node, Hooks hooks) : node_(node), hooks_(std::move(hooks)) {}

Result<node::WriteAck> NodeApiBackend::put_entry(const std::string& volume, const schedule::Entry& entry,
                                                 bool want_acks) {
  auto ack = node_.put_entry(volume, entry, hooks_.now(), want_acks);
  wrote();
  return ack;
}

Result<node::WriteAck> NodeApiBackend::delete_entry(const std::string& volume, const std::string& entity,
                                                    const std::string& name, bool want_acks) {
  auto ack = node_.delete_entry(volume, entity, name, hooks_.now(), want_acks);
  wrote();
  return ack;
}

Result<node::WriteAck> NodeApiBackend::set_paused(const std::string& volume, const std::string& entity,
                                                  const std::string& name, bool paused, bool want_acks) {
  auto ack = node_.set_paused(volume, entity, name, paused, hooks_.now(), want_acks);
  wrote();
  return ack;
}

Result<node::Node::TriggerAck> NodeApiBackend::trigger_entry(const std::string& volume, const std::string& entity,
                                                             const std::string& name,
                                                             std::string_view idempotency_key, bool want_acks) {
  auto ack = node_.trigger_entry(volume, entity, name, idempotency_key, hooks_.now(), want_acks);
  wrote();
  return ack;
}

Result<node::WriteAck> NodeApiBackend::apply_config(node::ClusterConfig config, bool force) {
  auto ack = node_.apply_config(std::move(config), hooks_.now(), force);
  wrote();
  return ack;
}

std::vector<ReplicaContact> NodeApiBackend::replica_contacts(const std::string& volume) const {
  std::vector<ReplicaContact> out;
  const node::VolumeSpec* spec = node_.config().volume(volume);
  if (spec == nullptr) return out;
  std::set<std::string> ids(spec->replicas.begin(), spec->replicas.end());
  ids.insert(spec->previous_replicas.begin(), spec->previous_replicas.end());
  const auto master = node_.master_of(volume);
  const gossip::Membership& m = node_.membership();
  for (const auto& id : ids) {
    ReplicaContact c;
    c.node = id;
    c.reachable = m.reachable(id);
    if (const gossip::MemberMeta* meta = m.meta_of(id)) c.api_addr = meta->api_addr;
    c.master = master && *master == id;
    out.push_back(std::move(c));
  }
  return out;
}

json NodeApiBackend::status() const { return status_json(node_); }

std::string NodeApiBackend::metrics_text() const {
  if (hooks_.metrics_text) return hooks_.metrics_text();
  MetricsInputs in;
  in.node = &node_;
  return render_metrics(in);
}

json status_json(const node::Node& node) {
  json members = json::array();
  for (const auto& m : node.membership().members()) {
    const gossip::MemberMeta& meta = m.meta;
    const auto ahead = m.node == node.id() ? std::nullopt : node.peer_clock_ahead_ms(m.node);
    members.push_back({{"id", m.node},
                       {"state", member_state_label(m.state)},
                       {"incarnation", m.incarnation},
                       {"gossip_addr", m.addr},
                       {"api_addr", meta.api_addr},
                       {"priority", meta.priority},
                       {"tags", meta.tags},
                       {"config_epoch", meta.config_epoch},
                       {"protocol_version", meta.protocol_version},
                       {"unfilled_volumes", meta.unfilled_volumes},
                       {"clock_ahead_ms", ahead ? json(*ahead) : json(nullptr)},
                       {"load", {{"running", meta.load.running}, {"queued", meta.load.queued},
                                 {"cpu", static_cast<double>(meta.load.cpu_milli) / 1000.0}}},
                       {"capacity", {{"cores", meta.capacity.cores}, {"memory_mb", meta.capacity.memory_mb},
                                     {"max_running", meta.capacity.max_running}}}});
  }
  json volumes = json::array();
  for (const auto& v : node.config().volumes) {
    const auto master = node.master_of(v.name);
    json j = {{"name", v.name},
              {"replicas", v.replicas},
              {"master", master ? json(*master) : json(nullptr)},
              {"replica", node.is_replica(v.name)}};
    if (!v.previous_replicas.empty()) j["previous_replicas"] = v.previous_replicas;
    if (const auto* store = node.store(v.name)) {
      j["records"] = store->live_size();
      j["filled"] = node.volume_filled(v.name);
    }
    volumes.push_back(std::move(j));
  }
  const schedule::SchedulerCounters& s = node.scheduler_counters();
  const node::NodeCounters& c = node.counters();
  return {{"node", node.id()},
          {"active", node.active()},
          {"config_epoch", node.config().epoch},
          {"members", std::move(members)},
          {"volumes", std::move(volumes)},
          {"pending", {{"running_invocations", node.running_invocations()},
                       {"held_invocations", node.held_invocations()}}},
          {"scheduler", {{"due", s.due}, {"owned_quorum", s.owned_quorum}, {"owned_degraded", s.owned_degraded},
                         {"owned_takeover", s.owned_takeover}, {"dispatched", s.dispatched},
                         {"redispatched", s.redispatched}, {"accepted", s.accepted}, {"completed", s.completed},
                         {"failed", s.failed}, {"timed_out", s.timed_out}, {"retried", s.retried},
                         {"replace_asked", s.replace_asked}, {"replaced", s.replaced},
                         {"ran_claims_refused", s.ran_claims_refused}, {"withheld", s.withheld}, {"missed", s.missed}, {"lost", s.lost},
                         {"skipped", s.skipped}, {"skipped_overlap", s.skipped_overlap},
                         {"overlap_refused", s.overlap_refused}, {"granted", s.granted}, {"refused_claims", s.refused_claims},
                         {"dispatches_ignored_after_wipe", s.dispatches_ignored_after_wipe},
                         {"stale_claims_refused", s.stale_claims_refused},
                         {"stale_claims_sent", s.stale_claims_sent}, {"prepared", s.prepared},
                         {"prepared_revoked", s.prepared_revoked}, {"prepared_fenced", s.prepared_fenced},
                         {"prepared_no_go", s.prepared_no_go}, {"prepared_no_replicas_go", s.prepared_no_replicas_go},
                         {"prepared_fenced_by_promises", s.prepared_fenced_by_promises},
                         {"go_asks_sent", s.go_asks_sent}, {"go_yes_given", s.go_yes_given}}},
          {"counters", {{"datagrams_in", c.datagrams_in}, {"datagrams_out", c.datagrams_out},
                        {"frames_in", c.frames_in}, {"frames_out", c.frames_out},
                        {"auth_failures", c.auth_failures}, {"replays", c.replays}, {"malformed", c.malformed},
                        {"misrouted", c.misrouted}, {"clock_skew_warnings", c.clock_skew_warnings},
                        {"notifications_written", c.notifications_written},
                        {"notifications_too_late", c.notifications_too_late},
                        {"syncs_completed", c.syncs_completed},
                        {"syncs_failed", c.syncs_failed}, {"config_conflicts", c.config_conflicts},
                        {"config_agreed", c.config_agreed}, {"config_not_agreed", c.config_not_agreed},
                        {"config_votes_refused", c.config_votes_refused}}}};
}

}  // namespace caesium::daemon
