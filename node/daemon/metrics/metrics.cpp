// FireMetrics and the /metrics page (metrics.h).
#include "node/daemon/metrics/metrics.h"

#include <cmath>
#include <cstdio>

#include "schedule/occurrence.h"

namespace caesium::daemon {

const char* member_state_label(gossip::MemberState state) {
  switch (state) {
    case gossip::MemberState::kAlive: return "alive";
    case gossip::MemberState::kSuspect: return "suspect";
    case gossip::MemberState::kDead: return "dead";
    case gossip::MemberState::kLeft: return "left";
  }
  return "unknown";
}

void FireMetrics::on_fire(const schedule::FireEvent& f) {
  using K = schedule::FireEvent::Kind;
  switch (f.kind) {
    case K::kDue: ++counts_.due; break;
    case K::kGranted: ++counts_.granted; break;
    case K::kOwned: {
      const size_t path = static_cast<size_t>(f.path);
      if (path < 3) ++counts_.fired[f.at_most_once ? 1 : 0][path];
      break;
    }
    case K::kDispatched: ++counts_.dispatched; break;
    case K::kStarted: {
      const int64_t late = f.lateness_ms > 0 ? f.lateness_ms : 0;
      size_t i = 0;
      while (i < kLatenessBoundsMs.size() && late > kLatenessBoundsMs[i]) ++i;
      ++counts_.lateness[i];
      ++counts_.lateness_count;
      counts_.lateness_sum_ms += late;
      break;
    }
    case K::kRedispatched: ++counts_.redispatched; break;
    case K::kAccepted:
      ++counts_.accepted;
      if (f.attempt > 1) ++counts_.duplicate_runs;
      break;
    case K::kCompleted:
      if (!f.replaced) ++(f.ok ? counts_.completed_ok : counts_.completed_failed);  // replaced: its own counter
      break;
    case K::kWithheld: ++counts_.withheld; break;
    case K::kMissed: ++counts_.missed; break;
    case K::kLost: ++counts_.lost; break;
    case K::kSkipped: ++counts_.skipped; break;
    case K::kSkippedOverlap: ++counts_.skipped_overlap; break;
    case K::kRetryScheduled: ++counts_.retries; break;
    default: break;  // kinds that carry no count here (the scheduler may add more)
  }
}

size_t count_entries(const schedule::VolumeStore& store) {
  size_t n = 0;
  std::string after;
  bool done = false;
  while (!done) {
    size_t visited = 0;
    std::string last;
    store.scan("", after, 4096, [&](const schedule::RecordView& r) {
      ++visited;
      last = std::string(r.key);
      if (r.key >= schedule::kOccPrefix) done = true;  // occurrence records sort last
      if (!done && schedule::is_entry_key(r.key)) ++n;
    });
    if (visited == 0) break;
    after = std::move(last);
  }
  return n;
}

std::string PromWriter::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void PromWriter::family(const std::string& name, const char* type, const std::string& help) {
  out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PromWriter::sample(const std::string& name, const std::map<std::string, std::string>& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += k + "=\"";
      for (char c : v) {
        if (c == '\\') out_ += "\\\\";
        else if (c == '"') out_ += "\\\"";
        else if (c == '\n') out_ += "\\n";
        else out_ += c;
      }
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ' + format_value(value) + '\n';
}

namespace {

double d(uint64_t v) { return static_cast<double>(v); }

void counter(PromWriter& w, const std::string& name, const std::string& help, uint64_t value) {
  w.family(name, "counter", help);
  w.sample(name, d(value));
}

void in_out(PromWriter& w, const std::string& name, const std::string& help, uint64_t in, uint64_t out) {
  w.family(name, "counter", help);
  w.sample(name, {{"direction", "in"}}, d(in));
  w.sample(name, {{"direction", "out"}}, d(out));
}

void render_node(PromWriter& w, const node::Node& node) {
  w.family("caesium_node_info", "gauge", "This node's id (the value is always 1).");
  w.sample("caesium_node_info", {{"node", node.id()}}, 1);
  w.family("caesium_config_epoch", "gauge", "Epoch of the cluster config this node holds.");
  w.sample("caesium_config_epoch", d(node.config().epoch));

  std::map<std::string, double> members = {{"alive", 0}, {"suspect", 0}, {"dead", 0}, {"left", 0}};
  for (const auto& m : node.membership().members()) members[member_state_label(m.state)] += 1;
  w.family("caesium_members", "gauge", "Members in this node's view, by state (this node included).");
  for (const auto& [state, n] : members) w.sample("caesium_members", {{"state", state}}, n);
  w.family("caesium_peer_clock_ahead_ms", "gauge",
           "At least how far each peer's clock is ahead of this node's, from the send times of its recent "
           "frames (a lower bound: negative says nothing).");
  for (const auto& m : node.membership().members()) {
    if (m.node == node.id()) continue;
    if (auto ahead = node.peer_clock_ahead_ms(m.node)) {
      w.sample("caesium_peer_clock_ahead_ms", {{"peer", m.node}}, static_cast<double>(*ahead));
    }
  }

  const auto& volumes = node.config().volumes;
  w.family("caesium_volume_replica", "gauge", "1 if this node replicates the volume.");
  for (const auto& v : volumes) w.sample("caesium_volume_replica", {{"volume", v.name}}, node.is_replica(v.name) ? 1 : 0);
  w.family("caesium_volume_master", "gauge", "1 if this node is the volume's master in its own view.");
  for (const auto& v : volumes) {
    const auto master = node.master_of(v.name);
    w.sample("caesium_volume_master", {{"volume", v.name}}, master && *master == node.id() ? 1 : 0);
  }
  w.family("caesium_volume_entries", "gauge", "Schedule entries stored in the volume (replicas only).");
  for (const auto& v : volumes) {
    if (const auto* store = node.store(v.name)) w.sample("caesium_volume_entries", {{"volume", v.name}}, d(count_entries(*store)));
  }
  w.family("caesium_volume_records", "gauge", "Live records in the volume store: entries, entity state, occurrence state.");
  for (const auto& v : volumes) {
    if (const auto* store = node.store(v.name)) w.sample("caesium_volume_records", {{"volume", v.name}}, d(store->live_size()));
  }
  w.family("caesium_handlers_running", "gauge", "Handler invocations running on this node.");
  w.sample("caesium_handlers_running", d(node.running_invocations()));
  w.family("caesium_handlers_held", "gauge",
           "Accepted prepared attempts waiting for their instant and clock check (prepare_ahead).");
  w.sample("caesium_handlers_held", d(node.held_invocations()));
  counter(w, "caesium_prepared_total", "Attempts this node accepted ahead of their instant (prepare_ahead).",
          node.scheduler_counters().prepared);
  counter(w, "caesium_prepared_revoked_total",
          "Prepared attempts this node revoked before they started (the owner asked; this or a previous process accepted).",
          node.scheduler_counters().prepared_revoked);
  counter(w, "caesium_prepared_fenced_total",
          "Prepared attempts this node, as owner, fenced: their worker was gone before any go of its reached their instant, so they never start and the occurrence ran elsewhere.",
          node.scheduler_counters().prepared_fenced);
  counter(w, "caesium_prepared_dropped_no_go_total",
          "Held prepared runs this node, as worker, dropped (recorded revoked): their owner fenced them, or its go did not come.",
          node.scheduler_counters().prepared_no_go);
  counter(w, "caesium_prepared_dropped_no_replicas_go_total",
          "Held at-most-once runs this node, as worker, dropped (recorded revoked): no majority of the replicas said they may start by their go_by.",
          node.scheduler_counters().prepared_no_replicas_go);
  counter(w, "caesium_prepared_fenced_by_promises_total",
          "Prepared attempts this node, taking over, counted revoked: a majority of its promises never said yes to a go ask of the occurrence.",
          node.scheduler_counters().prepared_fenced_by_promises);
  counter(w, "caesium_go_asks_total", "Looks at held at-most-once runs that asked the replicas for their go.",
          node.scheduler_counters().go_asks_sent);
  counter(w, "caesium_go_yes_total", "Go asks this node, as replica, answered yes.",
          node.scheduler_counters().go_yes_given);
  counter(w, "caesium_dispatches_ignored_after_wipe_total",
          "At-most-once dispatches left unanswered: issued before this node restarted without its disk.",
          node.scheduler_counters().dispatches_ignored_after_wipe);
  counter(w, "caesium_stale_claims_refused_total",
          "Claims this node refused: the claimant's older config gave the volume other replica sets.",
          node.scheduler_counters().stale_claims_refused);
  counter(w, "caesium_handler_timeouts_total",
          "Handler runs on this node stopped at their entry's timeout (counted as failed runs too).",
          node.scheduler_counters().timed_out);
  counter(w, "caesium_replace_asked_total",
          "overlap = replace: earlier runs this node, deciding a later occurrence, asked to stop.",
          node.scheduler_counters().replace_asked);
  counter(w, "caesium_handler_replaced_total",
          "overlap = replace: handler runs on this node stopped (or dropped before their instant) for a later occurrence.",
          node.scheduler_counters().replaced);
  counter(w, "caesium_dispatches_refused_busy_total",
          "Dispatches this node refused as worker because a running cap was reached ([capacity] or handler max_running).",
          node.scheduler_counters().busy_refused);
  counter(w, "caesium_dispatches_busy_total",
          "Dispatches of this node as owner that a worker refused at a running cap (sent elsewhere, or waited for).",
          node.scheduler_counters().busy_refusals_received);

  const node::NodeCounters& c = node.counters();
  in_out(w, "caesium_gossip_datagrams_total", "Gossip datagrams (UDP).", c.datagrams_in, c.datagrams_out);
  in_out(w, "caesium_gossip_datagram_bytes_total", "Gossip datagram bytes.", c.datagram_bytes_in, c.datagram_bytes_out);
  in_out(w, "caesium_stream_frames_total", "Stream frames (TCP): anti-entropy, claims, dispatch.", c.frames_in, c.frames_out);
  in_out(w, "caesium_stream_frame_bytes_total", "Stream frame bytes.", c.frame_bytes_in, c.frame_bytes_out);
  counter(w, "caesium_frame_auth_failures_total", "Frames dropped: wrong key or cluster, tampered, not a frame.", c.auth_failures);
  counter(w, "caesium_frame_replays_total", "Frames dropped as replayed or too old.", c.replays);
  counter(w, "caesium_frames_malformed_total", "Authenticated frames that did not decode.", c.malformed);
  counter(w, "caesium_clock_skew_warnings_total",
          "Warnings that a peer's clock is ahead of this node's by more than twice max_clock_skew.",
          c.clock_skew_warnings);
  w.family("caesium_notifications_total", "counter",
           "Notification entries (docs/entries.md, Notifications): written by this node, events noticed too late "
           "to notify, entries deleted past retention.");
  w.sample("caesium_notifications_total", {{"result", "written"}}, d(c.notifications_written));
  w.sample("caesium_notifications_total", {{"result", "too_late"}}, d(c.notifications_too_late));
  w.sample("caesium_notifications_total", {{"result", "deleted"}}, d(c.notifications_deleted));
  counter(w, "caesium_messages_misrouted_total", "Messages for volumes this node does not replicate.", c.misrouted);
  in_out(w, "caesium_store_pushes_total", "Pushes of local writes to other replicas.", c.store_pushes_in, c.store_pushes_out);
  w.family("caesium_sync_sessions_total", "counter", "Anti-entropy sessions this node started, by result.");
  w.sample("caesium_sync_sessions_total", {{"result", "completed"}}, d(c.syncs_completed));
  w.sample("caesium_sync_sessions_total", {{"result", "failed"}}, d(c.syncs_failed));
  counter(w, "caesium_sync_records_applied_total", "Records repaired by anti-entropy.", c.sync_records_applied);
  counter(w, "caesium_config_conflicts_total", "Different cluster configs seen with the same epoch.", c.config_conflicts);
  w.family("caesium_config_changes_total", "counter", "Config changes proposed through this node, by outcome.");
  w.sample("caesium_config_changes_total", {{"outcome", "agreed"}}, d(c.config_agreed));
  w.sample("caesium_config_changes_total", {{"outcome", "not_agreed"}}, d(c.config_not_agreed));
  counter(w, "caesium_config_votes_refused_total", "Config votes refused: a higher ballot was promised.",
          c.config_votes_refused);
}

void render_fire(PromWriter& w, const FireMetrics::Counts& f) {
  counter(w, "caesium_occurrences_due_total", "Occurrences this replica tracked as due.", f.due);
  w.family("caesium_occurrences_fired_total", "counter",
           "Occurrences this node owned and fired, by semantics and path (degraded and takeover may duplicate).");
  static const char* kPaths[3] = {"quorum", "degraded", "takeover"};
  static const char* kSemantics[2] = {"at_least_once", "at_most_once"};
  for (size_t s = 0; s < 2; ++s) {
    for (size_t p = 0; p < 3; ++p) {
      w.sample("caesium_occurrences_fired_total", {{"path", kPaths[p]}, {"semantics", kSemantics[s]}}, d(f.fired[s][p]));
    }
  }
  counter(w, "caesium_occurrences_dispatched_total", "First attempts dispatched by this node as owner.", f.dispatched);
  counter(w, "caesium_occurrences_redispatched_total", "Further attempts dispatched by this node as owner.", f.redispatched);
  counter(w, "caesium_occurrences_withheld_total", "At-most-once occurrences withheld for lack of a quorum.", f.withheld);
  counter(w, "caesium_occurrences_missed_total", "Occurrences decided never to fire (window passed, no replica).", f.missed);
  counter(w, "caesium_occurrences_lost_total", "At-most-once occurrences whose attempt may or may not have run.", f.lost);
  counter(w, "caesium_occurrences_skipped_total", "Occurrences skipped by the entry's misfire policy.", f.skipped);
  counter(w, "caesium_occurrences_skipped_overlap_total",
          "Occurrences skipped because a run of their entry was still running (overlap = forbid).", f.skipped_overlap);
  counter(w, "caesium_claims_granted_total", "Claims this replica granted.", f.granted);
  counter(w, "caesium_retries_total",
          "Runs that failed definitely and are followed by another after the entry's back-off (retry), "
          "decided by this node.",
          f.retries);
  counter(w, "caesium_duplicate_runs_total", "Attempts after the first that a worker on this node accepted (ran).",
          f.duplicate_runs);
  w.family("caesium_handler_runs_total", "counter", "Handler runs finished on this node as worker, by result.");
  w.sample("caesium_handler_runs_total", {{"result", "failed"}}, d(f.completed_failed));
  w.sample("caesium_handler_runs_total", {{"result", "ok"}}, d(f.completed_ok));
  w.histogram("caesium_fire_lateness_seconds",
              "From an occurrence's fire time (scheduled + jitter) to the start of its handler on this node.",
              FireMetrics::kLatenessBoundsMs, f.lateness, f.lateness_count, static_cast<double>(f.lateness_sum_ms),
              1000.0);
}

void render_daemon(PromWriter& w, const DaemonMetrics& m) {
  const StorageMetrics& s = m.storage;
  counter(w, "caesium_storage_commits_total", "LMDB write transactions committed (each one sync).", s.commits);
  counter(w, "caesium_storage_batches_total", "Node storage batches committed (group commit puts many in one).", s.batches);
  counter(w, "caesium_storage_bytes_written_total", "Key and value bytes written.", s.bytes);
  counter(w, "caesium_storage_commit_failures_total", "Commits that failed and were retried.", s.failures);
  w.family("caesium_storage_map_bytes", "gauge", "Current LMDB map size.");
  w.sample("caesium_storage_map_bytes", d(s.map_bytes));
  w.histogram("caesium_storage_commit_latency_seconds", "From the start of a write transaction to after its sync.",
              LatencyHistogram::kBoundsUs, s.commit_latency.counts, s.commit_latency.count,
              static_cast<double>(s.commit_latency.sum_us), 1e6);
  const TransportMetrics& t = m.transport;
  counter(w, "caesium_transport_frames_dropped_total", "Frames dropped because a peer's send queue was full.", t.frames_dropped);
  counter(w, "caesium_transport_connect_failures_total", "Outbound TCP connections that failed.", t.connect_failures);
  w.family("caesium_transport_connections_open", "gauge", "Open TCP connections between nodes.");
  w.sample("caesium_transport_connections_open", d(t.connections_open));
  w.family("caesium_invocations_total", "counter", "Handler invocations started and finished by the daemon.");
  w.sample("caesium_invocations_total", {{"phase", "failed"}}, d(m.invocations_failed));
  w.sample("caesium_invocations_total", {{"phase", "finished"}}, d(m.invocations_finished));
  w.sample("caesium_invocations_total", {{"phase", "started"}}, d(m.invocations_started));
}

void render_api(PromWriter& w, const ApiCounters& a) {
  w.family("caesium_api_responses_total", "counter", "API responses, by HTTP status.");
  for (const auto& [status, n] : a.responses_by_status) {
    w.sample("caesium_api_responses_total", {{"code", std::to_string(status)}}, d(n));
  }
  counter(w, "caesium_api_auth_failures_total", "API requests refused for a missing or wrong bearer token.", a.auth_failures);
  counter(w, "caesium_api_scope_refusals_total", "API requests refused (403) for a token whose scope or volumes do not cover them.",
          a.scope_refusals);
  counter(w, "caesium_api_forwarded_total", "API requests forwarded to a replica of their volume.", a.forwarded);
  counter(w, "caesium_api_forward_failures_total", "Forwarded requests no replica answered.", a.forward_failures);
  counter(w, "caesium_api_write_timeouts_total", "Writes not confirmed (durable, or on w replicas) in time.", a.write_timeouts);
  counter(w, "caesium_triggers_total", "Manual occurrences added (POST .../trigger, run now).", a.triggers);
  counter(w, "caesium_trigger_repeats_total",
          "Triggers retried with an Idempotency-Key whose trigger the entry still held (nothing written).",
          a.trigger_repeats);
  counter(w, "caesium_api_chronos_requests_total", "Requests to the Chronos /timers API.", a.chronos_requests);
}

void render_http(PromWriter& w, const HttpServerStats& h) {
  w.family("caesium_http_connections_open", "gauge", "Open API connections.");
  w.sample("caesium_http_connections_open", d(h.open_connections));
  counter(w, "caesium_http_connections_refused_total", "API connections closed at once (over the limit).",
          h.connections_refused);
  counter(w, "caesium_http_connections_refused_per_client_total",
          "API connections closed at once: their client address had api.max_connections_per_client open.",
          h.connections_refused_per_client);
  counter(w, "caesium_http_idle_closed_for_new_total",
          "Idle keep-alive API connections closed to make room for a new one (every slot taken).",
          h.idle_closed_for_new);
  counter(w, "caesium_http_tls_failures_total", "API connections closed for a failed TLS handshake or record.",
          h.tls_failures);
  counter(w, "caesium_http_bad_requests_total", "Requests the HTTP parser refused (malformed or too large).",
          h.bad_requests);
  counter(w, "caesium_http_timeouts_total", "Connections closed for slow requests or unread responses.", h.timeouts);
}

}  // namespace

std::string render_metrics(const MetricsInputs& in) {
  PromWriter w;
  render_node(w, *in.node);
  if (in.fire != nullptr) render_fire(w, in.fire->counts());
  if (in.daemon != nullptr) render_daemon(w, *in.daemon);
  if (in.api != nullptr) render_api(w, *in.api);
  if (in.http != nullptr) render_http(w, *in.http);
  return w.text();
}

}  // namespace caesium::daemon
