#include "sim/node_process.h"

#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "node/core/node.h"
#include "schedule/entry_json.h"
#include "schedule/occurrence.h"
#include "sim/fire_checker.h"
#include "sim/notify_checker.h"
#include "sim/scenario.h"
#include "sim/restart_checker.h"
#include "sim/write_checker.h"
#include "base/toml/toml_reader.h"

namespace caesium::sim {
namespace {

struct NodeProcessOptions {
  node::NodeOptions node;
  FireChecker::Options checker;
};

Result<NodeProcessOptions> read_options(const toml::table& table, const std::string& path) {
  NodeProcessOptions o;
  auto& n = o.node;
  // The simulator runs many nodes per second of wall time; the defaults are the
  // daemon's, except anti-entropy, which runs a little more often in short runs.
  n.sync_interval_ms = 5'000;
  TomlErrors errors;
  {
    TomlReader r(table, "node_options", path, errors);
    auto& m = n.membership;
    m.probe_interval_ms = r.duration("probe_interval").value_or(m.probe_interval_ms);
    m.probe_timeout_ms = r.duration("probe_timeout").value_or(m.probe_timeout_ms);
    m.gossip_interval_ms = r.duration("gossip_interval").value_or(m.gossip_interval_ms);
    m.push_pull_interval_ms = r.duration("push_pull_interval").value_or(m.push_pull_interval_ms);
    m.suspicion_mult = static_cast<int>(r.integer("suspicion_mult", 1, 100).value_or(m.suspicion_mult));
    m.indirect_checks = static_cast<int>(r.integer("indirect_checks", 0, 100).value_or(m.indirect_checks));
    m.retransmit_mult = static_cast<int>(r.integer("retransmit_mult", 1, 100).value_or(m.retransmit_mult));
    m.lifeguard = r.boolean("lifeguard").value_or(m.lifeguard);
    n.sync_interval_ms = r.duration("sync_interval").value_or(n.sync_interval_ms);
    n.startup_grace_ms = r.duration("startup_grace").value_or(n.startup_grace_ms);
    n.lazy_push_hold_ms = r.duration("lazy_push_hold").value_or(n.lazy_push_hold_ms);
    n.burst_hold_ms = r.duration("burst_hold").value_or(n.burst_hold_ms);
    auto& s = n.scheduler;
    s.claim_retry_ms = r.duration("claim_retry").value_or(s.claim_retry_ms);
    s.claim_give_up_ms = r.duration("claim_give_up").value_or(s.claim_give_up_ms);
    s.owner_silence_ms = r.duration("owner_silence").value_or(s.owner_silence_ms);
    s.misfire_threshold_ms = r.duration("misfire_threshold").value_or(s.misfire_threshold_ms);
    s.max_clock_skew_ms = r.duration("max_clock_skew").value_or(s.max_clock_skew_ms);
    s.occurrence_retention_ms = r.duration("occurrence_retention").value_or(s.occurrence_retention_ms);
    s.prepare_ahead_ms = r.duration("prepare_ahead").value_or(s.prepare_ahead_ms);
    s.backup_step_ms = r.duration("backup_step").value_or(s.backup_step_ms);
    s.max_claims_in_flight = r.integer("max_claims_in_flight", 0, 10'000'000).value_or(s.max_claims_in_flight);
    // The firing core's invariants after every input (SchedulerOptions::check_invariants):
    // on in the simulator unless a scenario turns them off (a benchmark).
    s.check_invariants = r.boolean("check_invariants").value_or(true);
    s.test_grant_every_claim = r.boolean("test_grant_every_claim").value_or(false);
    s.test_grant_ignores_overlap = r.boolean("test_grant_ignores_overlap").value_or(false);
    s.test_ignore_running_cap = r.boolean("test_ignore_running_cap").value_or(false);
    n.capacity.cores = static_cast<uint32_t>(r.integer("cores", 1, 4096).value_or(n.capacity.cores));
    // max_running, when set, is also the hard running cap (as [capacity] max_running).
    if (auto cap = r.integer("max_running", 1, 1 << 20)) {
      n.capacity.max_running = static_cast<uint32_t>(*cap);
      s.running_cap = n.capacity.max_running;
      o.checker.running_cap = s.running_cap;
    }
    // The cluster's notify handler ([notify] handler / withheld_after; every event).
    n.notify.handler = r.string("notify_handler").value_or("");
    n.notify.withheld_after_ms = r.duration("notify_withheld_after", 1000).value_or(n.notify.withheld_after_ms);
    o.checker.detection_bound_ms = r.duration("checker_detection_bound").value_or(o.checker.detection_bound_ms);
    o.checker.misfire_threshold_ms = s.misfire_threshold_ms;
    o.checker.max_clock_skew_ms = s.max_clock_skew_ms;
    o.checker.prepare_ahead_ms = s.prepare_ahead_ms;
    r.finish();
  }
  if (errors.any()) return errors.combined();
  if (Status st = gossip::check_config(n.membership); !st.ok()) return st.error();
  return o;
}

node::ClusterConfig cluster_config_of(const ClusterSpec& c) {
  node::ClusterConfig cfg;
  cfg.epoch = 1;
  for (const auto& n : c.nodes) {
    node::NodeSpec s;
    s.id = n.id;
    if (n.priority != 0) s.priority = n.priority;
    s.tags = n.tags;
    cfg.nodes.push_back(std::move(s));
  }
  for (const auto& v : c.volumes) cfg.volumes.push_back({v.name, v.replicas, {}});
  auto normalized = node::normalize(std::move(cfg));
  return normalized.ok() ? std::move(*normalized) : node::ClusterConfig{};
}

class NodeProcess final : public Process {
 public:
  ~NodeProcess() override {
    if (std::getenv("CAESIUM_DEBUG_COUNTERS") == nullptr) return;
    const auto& c = node_->counters();
    std::fprintf(stderr,
                 "[%s] counters: auth_failures=%llu replays=%llu malformed=%llu unknown=%llu misrouted=%llu "
                 "frames_in=%llu frames_out=%llu dgrams_in=%llu dgrams_out=%llu syncs=%llu/%llu/%llu\n",
                 id_.c_str(), static_cast<unsigned long long>(c.auth_failures), static_cast<unsigned long long>(c.replays),
                 static_cast<unsigned long long>(c.malformed), static_cast<unsigned long long>(c.unknown_messages),
                 static_cast<unsigned long long>(c.misrouted), static_cast<unsigned long long>(c.frames_in),
                 static_cast<unsigned long long>(c.frames_out), static_cast<unsigned long long>(c.datagrams_in),
                 static_cast<unsigned long long>(c.datagrams_out), static_cast<unsigned long long>(c.syncs_started),
                 static_cast<unsigned long long>(c.syncs_completed), static_cast<unsigned long long>(c.syncs_failed));
  }

  NodeProcess(const ProcessContext& ctx, node::NodeOptions options) : id_(ctx.spec().id) {
    options.id = ctx.spec().id;
    options.cluster_name = "sim";
    options.gossip_addr = ctx.spec().gossip_addr;
    options.stream_addr = ctx.spec().stream_addr;
    options.initial_config = cluster_config_of(*ctx.cluster);
    // A node's first process in the run never ran before: it is started as the docs say
    // to start a new node (`caesium node --first-start`) and votes at once.  A restart —
    // with its disk or wiped — is not a first start.
    options.first_start = ctx.incarnation == 0;
    // Every node joins through the first three nodes (other than itself), except at a
    // converged start (the world hands it the view instead; a restart still joins).
    const bool joined_start = ctx.cluster->start_joined && ctx.incarnation == 0;
    for (const auto& n : ctx.cluster->nodes) {
      if (!joined_start && n.id != options.id && options.seeds.size() < 3) options.seeds.push_back(n.stream_addr);
    }
    wire::Key key;
    key.fill(0x5a);
    options.keyring = wire::Keyring::single(key);
    node_ = std::make_unique<node::Node>(std::move(options), ctx.seed);
  }

  void start(std::vector<StoredRecord> disk, Clock now) override {
    Status st = node_->start(disk, now);
    if (!st.ok()) note("start failed: " + st.error().message);
    started_ = st.ok();
    if (started_) seen_config_ = node_->config();  // the config it starts from is no change
    drain();
  }
  std::optional<gossip::Alive> self_alive() const override {
    if (!started_) return std::nullopt;
    return node_->self_alive();
  }
  void adopt_members(const std::vector<gossip::Alive>& members, Clock now) override {
    if (!started_) return;
    node_->adopt_members(members, now);
    drain();
  }
  void leave(Clock now) override {
    node_->leave(now);
    drain();
  }
  void on_datagram(const std::string& from_addr, const std::string& bytes, Clock now) override {
    node_->on_datagram(from_addr, bytes, now);
    drain();
  }
  void on_stream(const std::string& from_addr, const std::string& bytes, Clock now) override {
    node_->on_stream(from_addr, bytes, now);
    drain();
  }
  void on_tick(Clock now) override {
    node_->on_tick(now);
    drain();
#ifndef NDEBUG
    // Debug and sanitizer builds: the node's whole internal consistency (scheduler,
    // membership, stores), walked at most once per kFullCheckEveryMs of simulated time per
    // node.  The walk costs the size of the stores, which grow through a run; the firing
    // core's own checks (check_occ, check_vote) still follow every input that touches an
    // occurrence or a vote (SchedulerOptions::check_invariants).
    if (now.mono_ms >= next_full_check_mono_ms_) {
      next_full_check_mono_ms_ = now.mono_ms + kFullCheckEveryMs;
      node_->check_invariants();
    }
#endif
  }
  void on_durable(uint64_t seq, Clock now) override {
    node_->on_durable(seq, now);
    drain();
  }
  void on_invocation_done(const InvocationResult& result, Clock now) override {
    node_->on_invocation_done(result, now);
    drain();
  }
  int64_t next_deadline_mono() const override { return node_->next_deadline_mono(); }
  bool poll_transmit(Transmit& out) override { return node_->poll_transmit(out); }
  bool poll_storage(StorageBatch& out) override { return node_->poll_storage(out); }
  bool poll_invocation(Invocation& out) override { return node_->poll_invocation(out); }
  bool poll_cancel(uint64_t& invocation_id) override { return node_->poll_cancel(invocation_id); }
  bool poll_reconnect(std::string& stream_addr) override { return node_->poll_reconnect(stream_addr); }
  std::vector<std::pair<std::string, double>> counters() const override {
    if (!started_) return {};
    const auto& c = node_->counters();
    return {{"store.pushes_out", static_cast<double>(c.store_pushes_out)},
            {"store.records_pushed", static_cast<double>(c.records_pushed)},
            {"store.records_merged", static_cast<double>(c.records_merged)},
            {"scheduler.granted", static_cast<double>(node_->scheduler_counters().granted)},
            {"scheduler.prepared", static_cast<double>(node_->scheduler_counters().prepared)},
            {"scheduler.prepared_revoked", static_cast<double>(node_->scheduler_counters().prepared_revoked)},
            {"scheduler.prepared_fenced", static_cast<double>(node_->scheduler_counters().prepared_fenced)},
            {"scheduler.prepared_no_go", static_cast<double>(node_->scheduler_counters().prepared_no_go)},
            {"scheduler.prepared_no_replicas_go",
             static_cast<double>(node_->scheduler_counters().prepared_no_replicas_go)},
            {"scheduler.prepared_fenced_by_promises",
             static_cast<double>(node_->scheduler_counters().prepared_fenced_by_promises)},
            {"scheduler.go_asks_sent", static_cast<double>(node_->scheduler_counters().go_asks_sent)},
            {"scheduler.go_yes_given", static_cast<double>(node_->scheduler_counters().go_yes_given)},
            {"scheduler.claims_widened", static_cast<double>(node_->scheduler_counters().claims_widened)},
            {"scheduler.stale_claims_refused", static_cast<double>(node_->scheduler_counters().stale_claims_refused)},
            {"scheduler.ran_claims_refused", static_cast<double>(node_->scheduler_counters().ran_claims_refused)},
            {"scheduler.retried", static_cast<double>(node_->scheduler_counters().retried)},
            {"scheduler.dispatches_ignored_after_wipe",
             static_cast<double>(node_->scheduler_counters().dispatches_ignored_after_wipe)},
            {"config.votes_refused", static_cast<double>(c.config_votes_refused)},
            {"clock.skew_warnings", static_cast<double>(c.clock_skew_warnings)},
            {"notify.written", static_cast<double>(c.notifications_written)}};
  }
  bool poll_observation(Observation& out) override {
    drain();
    if (observations_.empty()) return false;
    out = std::move(observations_.front());
    observations_.pop_front();
    return true;
  }

  std::string reconfigure(const std::string& volume, const std::vector<std::string>& replicas,
                          const std::vector<std::string>& previous, Clock now) override {
    if (!started_) return "not started";
    node::ClusterConfig next = node_->config();
    next.epoch += 1;
    auto it = std::find_if(next.volumes.begin(), next.volumes.end(),
                           [&](const node::VolumeSpec& v) { return v.name == volume; });
    if (it == next.volumes.end()) return "no volume " + volume + " in the config";
    it->replicas = replicas;
    it->previous_replicas = previous;
    auto ack = node_->apply_config(std::move(next), now);
    if (!ack) {
      drain();
      note("config change refused: " + ack.error().message);
      return ack.error().message;
    }
    if (ack->config_proposal != 0) {
      pending_proposal_ = ack->config_proposal;
      note("config change of epoch " + std::to_string(node_->config().epoch + 1) + " proposed");
    } else {
      config_result({});
    }
    drain();
    return {};
  }
  std::optional<bool> holds_record(const std::string& volume, const std::string& key) const override {
    if (!started_) return std::nullopt;
    const schedule::VolumeStore* store = node_->store(volume);
    if (store == nullptr) return std::nullopt;
    auto view = store->find(key);
    return view && view->value;
  }

  std::optional<bool> holds_completion(const std::string& volume, const std::string& entry_key,
                                       int64_t scheduled_utc_ms, const std::string& fire_id) const override {
    if (!started_) return std::nullopt;
    const schedule::VolumeStore* store = node_->store(volume);
    if (store == nullptr) return std::nullopt;
    auto view = store->find(schedule::worker_record_key({entry_key, scheduled_utc_ms}, fire_id));
    if (!view || !view->value) return false;
    auto record = schedule::decode_worker_record(*view->value);
    return record.ok() && schedule::finished(record->state);
  }

  void put_entry(const std::string& volume, const std::string& entity, const std::string& name,
                 const std::string& json, Clock now) override {
    EntryWrite w;
    w.volume = volume;
    w.entity = entity;
    w.name = name;
    w.json = json;
    write_entry(w, now);
  }

  // The API's PUT / DELETE with ?w=N: the write is acknowledged once this node holds it
  // durably and replica_acks counts N (reported as kWriteAcked from drain()).
  void write_entry(const EntryWrite& w, Clock now) override {
    const std::string what = "workload " + std::string(w.remove ? "delete of " : "entry ") + w.entity + "/" + w.name;
    Result<node::WriteAck> ack = Error("not started", "node");
    std::optional<node::Node::TriggerAck> triggered;
    if (w.trigger) {
      auto t = node_->trigger_entry(w.volume, w.entity, w.name, w.idempotency_key, now, w.want_acks > 1);
      if (t) {
        triggered = *t;
        ack = std::move(t->ack);
      } else {
        ack = t.error();
      }
    } else if (w.remove) {
      ack = node_->delete_entry(w.volume, w.entity, w.name, now, w.want_acks > 1);
    } else if (w.pause) {
      ack = node_->set_paused(w.volume, w.entity, w.name, *w.pause, now, w.want_acks > 1);
    } else {
      nlohmann::json j = nlohmann::json::parse(w.json, nullptr, false);
      if (j.is_discarded()) {
        note(what + ": not JSON");
        return;
      }
      auto entry = schedule::entry_from_json(j, w.entity, w.name, now.utc_ms, id_);
      if (!entry) {
        note(what + " refused: " + entry.error().message);
        return;
      }
      ack = node_->put_entry(w.volume, *entry, now, w.want_acks > 1);
    }
    if (!ack) {
      note(what + " refused: " + ack.error().message);
      return;
    }
    Observation o;
    o.kind = Observation::Kind::kEntry;
    o.volume = w.volume;
    o.key = schedule::entry_key(w.entity, w.name);
    o.at_utc_ms = now.utc_ms;
    o.write_id = w.id;
    o.version = ack->record.version;
    if (w.remove) o.text = "delete";
    if (w.pause) {
      // The definition written: the node's stored one, paused or not — which may be one
      // the checkers order before a delete it had not received yet (a pause then
      // recreates the entry, last writer wins).
      o.text = *w.pause ? "pause" : "resume";
      o.detail = ack->record.value.value_or("");
    }
    if (triggered) {
      // The definition written (or, for a retry that found its trigger, held): the
      // checkers read the manual occurrence from it.
      o.text = triggered->existing ? "trigger-repeat" : "trigger";
      o.subject = triggered->trigger.id;
      o.scheduled_utc_ms = triggered->trigger.at_utc_ms;
      o.detail = ack->record.value.value_or("");
    }
    observations_.push_back(std::move(o));
    if (w.id != 0) pending_writes_.push_back({w.id, w.volume, ack->record.key, ack->record.version, ack->durable_seq, w.want_acks});
    drain();
  }

  std::vector<std::pair<std::string, int>> member_view() const override {
    std::vector<std::pair<std::string, int>> out;
    for (const auto& m : node_->membership().members()) out.emplace_back(m.node, static_cast<int>(m.state));
    return out;
  }
  std::vector<std::pair<std::string, uint64_t>> volume_digests() const override { return node_->volume_digests(); }
  std::optional<std::pair<uint64_t, uint64_t>> config_identity() const override {
    if (!started_) return std::nullopt;
    return std::make_pair(node_->config().epoch, node_->config().fingerprint());
  }

 private:
  static constexpr int64_t kFullCheckEveryMs = 1000;
  int64_t next_full_check_mono_ms_ = 0;

  void note(std::string text) {
    Observation o;
    o.kind = Observation::Kind::kNote;
    o.text = std::move(text);
    observations_.push_back(std::move(o));
  }

  // Node events become observations for the report and the checkers.
  void drain() {
    // Workload writes whose acknowledgement came.  They were queued in the order of their
    // durable_seq, so only the prefix the node made durable can be acknowledged: a burst of
    // writes waiting for one commit costs nothing per drain, and those acknowledged are
    // compacted out in one pass (not erased one by one).
    const uint64_t durable = node_->durable_seq();
    size_t kept = 0, i = 0;
    for (; i < pending_writes_.size() && pending_writes_[i].durable_seq <= durable; ++i) {
      PendingWrite& p = pending_writes_[i];
      if (p.want_acks <= 1 || node_->replica_acks(p.volume, p.key, p.version) >= p.want_acks) {
        Observation o;
        o.kind = Observation::Kind::kWriteAcked;
        o.volume = p.volume;
        o.key = p.key;
        o.write_id = p.id;
        observations_.push_back(std::move(o));
      } else {
        if (kept != i) pending_writes_[kept] = std::move(p);
        ++kept;
      }
    }
    if (kept != i) {
      pending_writes_.erase(pending_writes_.begin() + static_cast<std::ptrdiff_t>(kept),
                            pending_writes_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    node::NodeEvent e;
    while (node_->poll_event(e)) {
      Observation o;
      switch (e.kind) {
        case node::NodeEvent::Kind::kMember:
          o.kind = Observation::Kind::kMemberState;
          o.subject = e.subject;
          o.state = static_cast<int>(e.state);
          o.incarnation = e.incarnation;
          break;
        case node::NodeEvent::Kind::kMaster:
          o.kind = Observation::Kind::kMaster;
          o.subject = e.subject;
          o.volume = e.volume;
          break;
        case node::NodeEvent::Kind::kFire:
          o.kind = Observation::Kind::kFire;
          o.volume = e.fire.volume;
          o.key = e.fire.occ.entry_key;
          o.scheduled_utc_ms = e.fire.occ.scheduled_utc_ms;
          o.text = schedule::to_string(e.fire.kind);
          o.at_most_once = e.fire.at_most_once;
          o.subject = e.fire.node;
          o.attempt = e.fire.attempt;
          o.detail = e.fire.detail.empty() ? schedule::to_string(e.fire.path) : e.fire.detail;
          break;
        case node::NodeEvent::Kind::kConfig:
        case node::NodeEvent::Kind::kWarning:
          o.kind = Observation::Kind::kNote;
          o.text = e.text;
          break;
      }
      observations_.push_back(std::move(o));
    }
    if (!started_) return;
    if (node_->config().epoch > seen_config_.epoch) {
      // Report every volume whose replica sets the newly adopted config changed.
      for (const auto& v : node_->config().volumes) {
        const node::VolumeSpec* old = seen_config_.volume(v.name);
        if (old != nullptr && old->replicas == v.replicas && old->previous_replicas == v.previous_replicas) continue;
        Observation o;
        o.kind = Observation::Kind::kConfigAdopted;
        o.volume = v.name;
        o.epoch = node_->config().epoch;
        o.replicas = v.replicas;
        o.previous = v.previous_replicas;
        observations_.push_back(std::move(o));
      }
      seen_config_ = node_->config();
    }
    if (pending_proposal_ != 0) {
      if (auto outcome = node_->config_outcome(pending_proposal_)) {
        pending_proposal_ = 0;
        config_result(outcome->ok() ? std::string() : outcome->error().message);
      }
    }
  }
  void config_result(std::string error) {
    Observation o;
    o.kind = Observation::Kind::kConfigResult;
    o.text = std::move(error);
    observations_.push_back(std::move(o));
  }

  struct PendingWrite {
    uint64_t id = 0;
    std::string volume, key;
    schedule::Version version;
    uint64_t durable_seq = 0;
    uint32_t want_acks = 1;
  };
  std::vector<PendingWrite> pending_writes_;  // workload writes not yet acknowledged
  node::ClusterConfig seen_config_;  // the config last reported (kConfigAdopted)
  uint64_t pending_proposal_ = 0;    // a reconfigure being agreed
  std::string id_;
  std::unique_ptr<node::Node> node_;
  bool started_ = false;
  std::deque<Observation> observations_;
};

// Entries for a swarm run: a mix of both semantics, cron and timers, over the volumes.
void swarm_workload(Rng& rng, Scenario& s) {
  if (s.cluster.volumes.empty() || s.cluster.nodes.empty()) return;
  const int entries = static_cast<int>(rng.between(4, 12));
  for (int i = 0; i < entries; ++i) {
    WorkloadEntry w;
    const auto& v = s.cluster.volumes[rng.below(s.cluster.volumes.size())];
    w.volume = v.name;
    w.via = v.replicas[rng.below(v.replicas.size())];
    w.entity = "e" + std::to_string(i % 3);
    w.name = "job" + std::to_string(i);
    w.at_ms = rng.between(5, 20) * kMsPerSecond;
    nlohmann::json f;
    f["handler"] = "noop";
    f["semantics"] = rng.chance(0.5) ? "at_most_once" : "at_least_once";
    switch (rng.below(3)) {
      case 0: f["cron"] = "*/" + std::to_string(rng.between(5, 30)) + " * * * * *"; break;
      case 1: f["cron"] = "* * * * *"; break;
      default:
        f["timer"] = {{"interval", std::to_string(rng.between(5, 40)) + "s"},
                      {"repeat_for", std::to_string(rng.between(2, 20)) + "m"}};
        break;
    }
    if (rng.chance(0.3)) f["complete_time"] = std::to_string(rng.between(5, 60)) + "s";
    f["misfire_window"] = "30m";
    w.fields = std::move(f);
    s.workload.push_back(std::move(w));
  }
}

}  // namespace

ProcessKind node_process_kind() {
  static bool sodium_ready = sodium_init() >= 0;
  (void)sodium_ready;
  ProcessKind k;
  k.name = "node";
  k.summary = "the real Node core (membership, stores, anti-entropy, scheduler) with the real codec";
  k.factory = [](const ProcessContext& ctx) -> std::unique_ptr<Process> {
    auto options = read_options(*ctx.node_options, "node_options");
    // The scenario was validated before the run; a failure here cannot happen.
    return std::make_unique<NodeProcess>(ctx, options.ok() ? options->node : node::NodeOptions{});
  };
  k.validate = [](const Scenario& s) -> Status {
    auto o = read_options(*s.node_options, s.path);
    if (!o) return o.error();
    return Status::success();
  };
  k.make_checkers = [](const Scenario& s) {
    std::vector<std::unique_ptr<Checker>> out;
    auto o = read_options(*s.node_options, s.path);
    out.push_back(std::make_unique<FireChecker>(s, o.ok() ? o->checker : FireChecker::Options{}));
    out.push_back(std::make_unique<WriteChecker>(s));
    out.push_back(std::make_unique<RestartChecker>(s));
    out.push_back(std::make_unique<NotifyChecker>(s, o.ok() ? o->node.notify.handler : "",
                                                  o.ok() ? o->node.notify.failed : true));
    return out;
  };
  k.swarm_workload = swarm_workload;
  return k;
}

void register_node_process_kind() {
  if (find_process_kind("node") == nullptr) register_process_kind(node_process_kind());
}

}  // namespace caesium::sim
