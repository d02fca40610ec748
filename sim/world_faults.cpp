// World: faults (crash, restart, leave, partitions, skew, slowness), the workload's API
// writes, ground-truth histories for checkers, and the World's own figures.
#include <algorithm>
#include <cassert>
#include <map>
#include <utility>

#include "schedule/entry.h"
#include "sim/world.h"

namespace caesium::sim {

void World::record_fault(FaultKind kind, std::vector<uint32_t> nodes, std::string detail) {
  FaultRecord f{now_ms_, kind, std::move(nodes), std::move(detail)};
  mix(0xFA17 ^ static_cast<uint64_t>(kind));
  for (uint32_t n : f.nodes) mix(n);
  if (trace_sink_) {
    std::string line = std::string("fault ") + fault_name(kind);
    for (uint32_t n : f.nodes) line += " " + spec(n).id;
    if (!f.detail.empty()) line += " (" + f.detail + ")";
    trace(line);
  }
  fault_log_.push_back(f);
  for (Checker* c : checkers_) c->on_fault(*this, fault_log_.back());
}

void World::record_status(uint32_t node) {
  SimNode& n = nodes_[node];
  const StatusChange change{now_ms_, n.up, is_slow(node)};
  if (!n.history.empty() && n.history.back().time_ms == now_ms_) {
    n.history.back() = change;
  } else {
    n.history.push_back(change);
  }
}

void World::crash(uint32_t node) {
  SimNode& n = nodes_[node];
  if (!n.up) return;
  stop_process(node);
  record_fault(FaultKind::kCrash, {node});
}

void World::restart(uint32_t node, bool wipe_disk) {
  SimNode& n = nodes_[node];
  if (n.up) stop_process(node);  // restart of a running node = crash + start
  if (wipe_disk) n.disk.wipe();
  // Checkers hear of the restart before the new process's first outputs.
  start_process(node, false);
  record_fault(FaultKind::kRestart, {node}, wipe_disk ? "wipe" : "");
  drain(node);
}

void World::leave(uint32_t node) {
  SimNode& n = nodes_[node];
  if (!n.up || n.leaving) return;
  n.leaving = true;
  record_fault(FaultKind::kLeave, {node});
  n.process->leave(clock_of(node));
  drain(node);
  const uint32_t gen = n.generation;
  at(now_ms_ + options_.leave_grace_ms, [this, node, gen] {
    SimNode& m = nodes_[node];
    if (!m.up || m.generation != gen) return;
    m.disk.flush();  // a graceful stop syncs what was submitted
    stop_process(node);
    record_fault(FaultKind::kStopped, {node});
  });
}

void World::change_links(const std::function<void(LinkState&)>& edit) {
  LinkState next = links_.current();
  edit(next);
  links_.push(now_ms_, std::move(next));
  links_changed();
}

void World::partition(const std::vector<std::vector<uint32_t>>& groups) {
  change_links([&](LinkState& l) { l.partition(groups); });
  std::vector<uint32_t> flat;
  std::string detail;
  for (const auto& g : groups) {
    detail += detail.empty() ? "[" : " | [";
    for (size_t i = 0; i < g.size(); ++i) detail += (i ? "," : "") + spec(g[i]).id;
    detail += "]";
    flat.insert(flat.end(), g.begin(), g.end());
  }
  if (groups.empty()) {
    record_fault(FaultKind::kHeal, {}, "groups cleared");  // cuts, if any, stay
  } else {
    record_fault(FaultKind::kPartition, std::move(flat), detail);
  }
}

void World::cut(uint32_t a, uint32_t b) {
  change_links([&](LinkState& l) { l.cut(a, b); });
  record_fault(FaultKind::kCut, {a, b});
}

void World::oneway(uint32_t from, uint32_t to) {
  change_links([&](LinkState& l) { l.oneway(from, to); });
  record_fault(FaultKind::kOneway, {from, to});
}

void World::heal_all() {
  change_links([](LinkState& l) { l.heal_all(); });
  record_fault(FaultKind::kHeal, {});
}

void World::heal_pair(uint32_t a, uint32_t b) {
  change_links([&](LinkState& l) { l.heal_pair(a, b); });
  record_fault(FaultKind::kHeal, {a, b});
}

void World::set_skew(uint32_t node, int64_t offset_ms, double drift) {
  SimNode& n = nodes_[node];
  n.skew_offset_ms = offset_ms;
  n.drift = drift;
  n.drift_since_ms = now_ms_;
  record_fault(FaultKind::kSkew, {node},
               "offset " + std::to_string(offset_ms) + "ms drift " + std::to_string(drift));
}

void World::set_slow(uint32_t node, int64_t delay_ms, int64_t for_ms, bool inbound_only) {
  SimNode& n = nodes_[node];
  n.slow_delay_ms = delay_ms;
  n.slow_inbound_only = inbound_only;
  n.slow_until_ms = for_ms == kNever ? kNever : now_ms_ + for_ms;
  record_status(node);
  record_fault(FaultKind::kSlow, {node},
               "delay " + format_duration_ms(delay_ms) + (inbound_only ? " (inbound only)" : ""));
  if (for_ms != kNever) {
    const int64_t until = n.slow_until_ms;
    at(until, [this, node, until] {
      SimNode& m = nodes_[node];
      if (m.slow_until_ms != until) return;  // replaced by a later slow fault
      m.slow_delay_ms = 0;
      record_status(node);
      record_fault(FaultKind::kSlowEnd, {node});
    });
  }
}

void World::heal_slowness() {
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    SimNode& n = nodes_[i];
    if (n.slow_delay_ms == 0) continue;
    n.slow_delay_ms = 0;
    n.slow_until_ms = 0;
    record_status(i);
    record_fault(FaultKind::kSlowEnd, {i});
  }
}

void World::write_entry(uint32_t node, size_t workload_index, EntryWrite write, bool want_majority) {
  SimNode& n = nodes_[node];
  mix(0x9077 ^ hash64(write.json) ^ (write.remove ? 0xDE1 : 0));
  WriteRecord rec;
  rec.id = writes_.size() + 1;
  rec.workload = workload_index;
  rec.node = node;
  rec.remove = write.remove;
  rec.volume = write.volume;
  rec.key = schedule::entry_key(write.entity, write.name);
  if (want_majority) write.want_acks = static_cast<uint32_t>(replicas_at(write.volume, now_ms_).size() / 2 + 1);
  rec.want_acks = std::max<uint32_t>(1, write.want_acks);
  write.id = rec.id;
  const std::string what = std::string(write.remove    ? "delete "
                                       : write.trigger ? "trigger "
                                       : !write.pause  ? "put "
                                       : *write.pause  ? "pause "
                                                       : "resume ") +
                           (write.idempotency_key.empty() ? "" : "key=" + write.idempotency_key + " ") + write.volume + "/" + write.entity + "/" +
                           write.name + (rec.want_acks > 1 ? " w=" + std::to_string(rec.want_acks) : "");
  if (!n.up) {
    ++puts_dropped_;
    trace(spec(node).id + " is down: API " + what + " refused");
    writes_.push_back(std::move(rec));
    return;
  }
  ++(write.remove ? deletes_ : puts_);
  rec.issued_ms = now_ms_;
  writes_.push_back(std::move(rec));
  trace(spec(node).id + " API " + what + " (write " + std::to_string(write.id) + ")");
  n.process->write_entry(write, clock_of(node));
  drain(node);
}

void World::reconfigure(uint32_t node, const std::string& volume, const std::vector<std::string>& replicas,
                        const std::vector<std::string>& previous) {
  SimNode& n = nodes_[node];
  mix(0xC0F1 ^ hash64(volume));
  std::string sets = volume + " -> [";
  for (const auto& r : replicas) sets += (sets.back() == '[' ? "" : ",") + r;
  sets += "]";
  if (!previous.empty()) {
    sets += " previous [";
    for (const auto& r : previous) sets += (sets.back() == '[' ? "" : ",") + r;
    sets += "]";
  }
  if (!n.up) {
    ++configs_refused_;
    trace(spec(node).id + " is down: config change " + sets + " refused");
    return;
  }
  const std::string error = n.process->reconfigure(volume, replicas, previous, clock_of(node));
  if (!error.empty()) {
    drain(node);
    ++configs_refused_;
    trace(spec(node).id + " refused config change " + sets + ": " + error);
    return;
  }
  // Applied, or being agreed: counted when the process reports how it ended
  // (kConfigResult), and in effect from when the first node adopts it (kConfigAdopted).
  record_fault(FaultKind::kConfig, {node}, sets);
  drain(node);
}

void World::observe_config(uint32_t node, const Observation& obs) {
  if (obs.kind == Observation::Kind::kConfigResult) {
    if (obs.text.empty()) {
      ++configs_applied_;
      trace(spec(node).id + " config change agreed");
    } else {
      ++configs_refused_;
      trace(spec(node).id + " refused config change: " + obs.text);
    }
    return;
  }
  std::string sets = obs.volume + " -> [";
  for (const auto& r : obs.replicas) sets += (sets.back() == '[' ? "" : ",") + r;
  sets += "]";
  trace(spec(node).id + " adopted config epoch " + std::to_string(obs.epoch) + ": " + sets);
  if (!configs_seen_.insert({obs.epoch, obs.volume}).second) return;
  ConfigChange c{now_ms_, obs.volume, obs.replicas, obs.previous};
  std::sort(c.replicas.begin(), c.replicas.end());
  std::sort(c.previous.begin(), c.previous.end());
  config_changes_.push_back(std::move(c));
}

const std::vector<std::string>& World::replicas_at(const std::string& volume, int64_t time_ms) const {
  for (size_t i = config_changes_.size(); i-- > 0;) {
    const ConfigChange& c = config_changes_[i];
    if (c.volume == volume && c.at_ms <= time_ms) return c.replicas;
  }
  for (const auto& v : cluster_.volumes) {
    if (v.name == volume) return v.replicas;
  }
  static const std::vector<std::string> kNone;
  return kNone;
}

const std::vector<std::string>& World::previous_replicas_at(const std::string& volume, int64_t time_ms) const {
  for (size_t i = config_changes_.size(); i-- > 0;) {
    const ConfigChange& c = config_changes_[i];
    if (c.volume == volume && c.at_ms <= time_ms) return c.previous;
  }
  static const std::vector<std::string> kNone;
  return kNone;
}

bool World::config_changed_between(const std::string& volume, int64_t from_ms, int64_t to_ms) const {
  for (const ConfigChange& c : config_changes_) {
    if (c.volume == volume && c.at_ms > from_ms && c.at_ms <= to_ms) return true;
  }
  return false;
}

// --- Ground truth -------------------------------------------------------------------------------

bool World::healthy_throughout(uint32_t node, int64_t from_ms, int64_t to_ms) const {
  const auto& h = nodes_[node].history;
  for (size_t i = h.size(); i-- > 0;) {
    if (h[i].time_ms > to_ms) continue;
    if (!h[i].up || h[i].slow) return false;
    if (h[i].time_ms <= from_ms) return true;
  }
  return false;  // not started before from_ms
}

bool World::healthy_pair_throughout(uint32_t a, uint32_t b, int64_t from_ms,
                                    int64_t to_ms) const {
  if (!healthy_throughout(a, from_ms, to_ms) || !healthy_throughout(b, from_ms, to_ms) ||
      !links_.connected_throughout(a, b, from_ms, to_ms)) {
    return false;
  }
  if (spikes_overflow_ms_ >= 0 && to_ms >= spikes_overflow_ms_) return false;
  // spikes_ is ordered by sent_ms: only those sent in [from - longest, to] can overlap.
  const auto first = std::lower_bound(spikes_.begin(), spikes_.end(), from_ms - longest_spike_ms_,
                                      [](const LatencySpike& s, int64_t t) { return s.sent_ms < t; });
  const auto last = std::upper_bound(first, spikes_.end(), to_ms,
                                     [](int64_t t, const LatencySpike& s) { return t < s.sent_ms; });
  return std::none_of(first, last, [&](const LatencySpike& s) {
    const bool pair = (s.src == a && s.dst == b) || (s.src == b && s.dst == a);
    return pair && s.arrive_ms >= from_ms;
  });
}

int64_t World::up_node_ms() const {
  int64_t total = 0;
  for (const SimNode& n : nodes_) {
    total += n.up_total_ms + (n.up ? now_ms_ - n.up_since_ms : 0);
  }
  return total;
}

void World::finish(Report& report) {
  report.virtual_ms = now_ms_;
  report.events = events_;
  report.trace_hash = trace_hash_;
  const double node_seconds = static_cast<double>(std::max<int64_t>(1, up_node_ms())) / 1000.0;
  auto channel = [&](const char* name, const ChannelStats& s) {
    const std::string p = std::string("net.") + name + ".";
    report.set(p + "sent", static_cast<double>(s.sent));
    report.set(p + "sent_bytes", static_cast<double>(s.sent_bytes));
    report.set(p + "delivered", static_cast<double>(s.delivered));
    report.set(p + "dropped_loss", static_cast<double>(s.dropped_loss));
    report.set(p + "dropped_partition", static_cast<double>(s.dropped_partition));
    report.set(p + "dropped_down", static_cast<double>(s.dropped_down));
    report.set(p + "unroutable", static_cast<double>(s.unroutable));
    report.set(p + "duplicated", static_cast<double>(s.duplicated));
    report.set(p + "corrupted", static_cast<double>(s.corrupted));
    report.set(p + "max_bytes", static_cast<double>(s.max_bytes));
    report.set(p + "msgs_per_node_s", static_cast<double>(s.sent) / node_seconds);
    report.set(p + "bytes_per_node_s", static_cast<double>(s.sent_bytes) / node_seconds);
  };
  channel("datagram", datagram_);
  channel("stream", stream_);
  report.set("net.datagram.oversize", static_cast<double>(datagram_.oversize));
  report.set("net.stream.broken", static_cast<double>(stream_.broken));
  report.set("net.stream.queued", static_cast<double>(stream_.queued));
  report.set("net.stream.queue_dropped", static_cast<double>(stream_.queue_dropped));
  report.set("net.stream.connects", static_cast<double>(stream_.connects));
  report.set("net.stream.connect_failures", static_cast<double>(stream_.connect_failures));
  report.set("net.stream.reconnects_now", static_cast<double>(stream_.reconnects_now));
  // The busiest node's send rate, against the mean: a flat protocol keeps this near 1.
  double max_rate = 0;
  for (const SimNode& n : nodes_) {
    const int64_t up = n.up_total_ms + (n.up ? now_ms_ - n.up_since_ms : 0);
    if (up > 0) {
      max_rate = std::max(max_rate, static_cast<double>(n.sent_msgs) * 1000.0 /
                                        static_cast<double>(up));
    }
  }
  report.set("net.max_node_msgs_per_s", max_rate);
  report.set("sim.nodes", static_cast<double>(nodes_.size()));
  std::map<std::string, double> process_counters;
  for (const auto& n : nodes_) {
    if (!n.process) continue;
    for (const auto& [name, value] : n.process->counters()) process_counters[name] += value;
  }
  for (const auto& [name, value] : process_counters) report.set("process." + name, value);
  report.set("sim.ticks", static_cast<double>(ticks_));
  report.set("sim.disk.syncs", static_cast<double>(syncs_));
  report.set("sim.disk.batches_lost", static_cast<double>(batches_lost_));
  report.set("sim.observations", static_cast<double>(observations_));
  report.set("sim.api.puts", static_cast<double>(puts_));
  report.set("sim.api.puts_refused", static_cast<double>(puts_dropped_));
  report.set("sim.api.deletes", static_cast<double>(deletes_));
  uint64_t acked = 0;
  for (const WriteRecord& w : writes_) acked += w.acked_ms >= 0 ? 1 : 0;
  report.set("sim.api.writes_acked", static_cast<double>(acked));
  report.set("sim.config.applied", static_cast<double>(configs_applied_));
  report.set("sim.config.refused", static_cast<double>(configs_refused_));
  uint64_t ok = 0, failed = 0, abandoned = 0, hung = 0, running = 0, timed_out = 0, replaced = 0;
  for (const Execution& ex : executions_) {
    switch (ex.outcome) {
      case Execution::Outcome::kOk: ++ok; break;
      case Execution::Outcome::kFailed: ++failed; break;
      case Execution::Outcome::kAbandoned: ++abandoned; break;
      case Execution::Outcome::kHung: ++hung; break;
      case Execution::Outcome::kTimedOut: ++timed_out; break;
      case Execution::Outcome::kReplaced: ++replaced; break;
      case Execution::Outcome::kRunning: ++running; break;
    }
  }
  report.set("handler.executions", static_cast<double>(executions_.size()));
  // How evenly the work spread: the busiest node's share of all executions (1/N when
  // even, 1 when one node ran everything).
  std::vector<uint64_t> per_node(nodes_.size(), 0);
  for (const Execution& ex : executions_) {
    if (ex.node < per_node.size()) ++per_node[ex.node];
  }
  const uint64_t busiest = per_node.empty() ? 0 : *std::max_element(per_node.begin(), per_node.end());
  report.set("handler.busiest_node_share",
             executions_.empty() ? 0.0 : static_cast<double>(busiest) / static_cast<double>(executions_.size()));
  report.set("handler.ok", static_cast<double>(ok));
  report.set("handler.failed", static_cast<double>(failed));
  report.set("handler.abandoned", static_cast<double>(abandoned));
  report.set("handler.hung", static_cast<double>(hung));
  if (timed_out > 0) report.set("handler.timed_out", static_cast<double>(timed_out));
  if (replaced > 0) report.set("handler.replaced", static_cast<double>(replaced));
  report.set("handler.running_at_end", static_cast<double>(running));
  size_t faults = 0;
  for (const FaultRecord& f : fault_log_) faults += f.kind != FaultKind::kSlowEnd ? 1 : 0;
  report.set("sim.faults", static_cast<double>(faults));
  // A run stopped as a livelock did not reach its end: the checkers' end-of-run verdicts
  // (liveness, convergence) would judge a run cut short, and bury the one that matters.
  if (!livelocked_) {
    for (Checker* c : checkers_) c->finish(*this, report);
  }
  for (const Violation& v : violations_) report.violate(v);
}

}  // namespace caesium::sim
