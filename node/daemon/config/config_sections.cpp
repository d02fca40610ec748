#include "node/daemon/config/config_sections.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gossip/membership.h"
#include "schedule/entry.h"
#include "schedule/entry_json.h"

namespace caesium::daemon {
namespace {

// TOML value -> the JSON the HTTP API would take.  Date-times become RFC 3339 text.
nlohmann::json to_json(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* i = n.as_integer()) return i->get();
  if (const auto* f = n.as_floating_point()) return f->get();
  if (const auto* b = n.as_boolean()) return b->get();
  if (const auto* a = n.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : *a) out.push_back(to_json(item));
    return out;
  }
  if (const auto* t = n.as_table()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : *t) out[std::string(k.str())] = to_json(v);
    return out;
  }
  std::ostringstream text;  // dates and times
  if (const auto* dt = n.as_date_time()) {
    text << *dt;
  } else if (const auto* d = n.as_date()) {
    text << *d;
  } else if (const auto* t = n.as_time()) {
    text << *t;
  }
  return text.str();
}

uint32_t detected_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

uint32_t detected_memory_mb() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 1024;
  const uint64_t mb = (static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)) >> 20;
  return static_cast<uint32_t>(std::min<uint64_t>(mb, UINT32_MAX));
}

template <class T>
void set_if(std::optional<T> v, T& out) {
  if (v) out = *v;
}

void set_int_if(std::optional<int64_t> v, int& out) {
  if (v) out = static_cast<int>(*v);
}

// `max_running`, when set, is also this node's hard running cap (running_cap); unset, the
// node advertises 16 slots for load and has no cap.
void read_capacity(TomlReader& top, gossip::Capacity& cap, uint32_t& running_cap) {
  cap = gossip::Capacity{detected_cores(), detected_memory_mb(), 16};
  running_cap = 0;
  auto r = top.section("capacity");
  if (!r) return;
  if (auto v = r->integer("cores", 1, 1 << 16)) cap.cores = static_cast<uint32_t>(*v);
  if (auto v = r->size_bytes("memory", uint64_t{1} << 20, uint64_t{1} << 50)) {
    cap.memory_mb = static_cast<uint32_t>(std::min<uint64_t>(*v >> 20, UINT32_MAX));
  }
  if (auto v = r->integer("max_running", 1, 1 << 20)) {
    cap.max_running = static_cast<uint32_t>(*v);
    running_cap = cap.max_running;
  }
  r->finish();
}

void read_api(TomlReader& top, const std::string& base_dir, ApiConfig& api) {
  auto r = top.section("api");
  if (!r) return;
  set_if(r->string("listen"), api.listen);
  for (auto [key, out] : {std::pair{"token_file", &api.token_file}, std::pair{"tokens_file", &api.tokens_file},
                          std::pair{"tls_cert", &api.tls_cert}, std::pair{"tls_key", &api.tls_key},
                          std::pair{"tls_ca", &api.tls_ca}}) {
    if (auto v = r->string(key)) *out = resolve_path(base_dir, *v);
  }
  if (auto v = r->size_bytes("max_body", 1024, uint64_t{1} << 30)) api.max_body_bytes = *v;
  set_if(r->string("chronos_volume"), api.chronos_volume);
  if (!api.chronos_volume.empty() && !node::valid_volume_name(api.chronos_volume)) {
    r->fail("chronos_volume", "\"" + api.chronos_volume + "\" is not a valid volume name");
  }
  set_if(r->boolean("chronos_requires_token"), api.chronos_requires_token);
  set_if(r->boolean("metrics_requires_token"), api.metrics_requires_token);
  set_if(r->boolean("tls_verify_client"), api.tls_verify_client);
  if (auto v = r->integer("max_connections", 1, 1 << 20)) api.max_connections = static_cast<size_t>(*v);
  if (auto v = r->integer("max_connections_per_client", 1, 1 << 20)) {
    api.max_connections_per_client = static_cast<size_t>(*v);
  }
  if (api.tls_cert.empty() != api.tls_key.empty()) {
    r->fail(api.tls_cert.empty() ? "tls_key" : "tls_cert", "TLS needs both tls_cert and tls_key");
  }
  if (api.tls_verify_client && (api.tls_ca.empty() || api.tls_cert.empty())) {
    r->fail("tls_verify_client", "verifying client certificates needs tls_cert, tls_key and tls_ca");
  }
  r->finish();
}

void read_gossip(TomlReader& top, node::NodeOptions& n) {
  auto r = top.section("gossip");
  if (!r) return;
  auto& m = n.membership;
  set_if(r->duration("probe_interval", 10), m.probe_interval_ms);
  set_if(r->duration("probe_timeout", 1), m.probe_timeout_ms);
  set_int_if(r->integer("indirect_checks", 0, 16), m.indirect_checks);
  set_int_if(r->integer("suspicion_mult", 1, 100), m.suspicion_mult);
  set_int_if(r->integer("suspicion_max_timeout_mult", 1, 100), m.suspicion_max_timeout_mult);
  set_int_if(r->integer("retransmit_mult", 1, 100), m.retransmit_mult);
  set_if(r->duration("gossip_interval", 1), m.gossip_interval_ms);
  set_int_if(r->integer("gossip_nodes", 1, 64), m.gossip_nodes);
  set_if(r->duration("gossip_to_dead"), m.gossip_to_dead_ms);
  set_if(r->duration("push_pull_interval", 100), m.push_pull_interval_ms);
  set_int_if(r->integer("awareness_max_multiplier", 1, 64), m.awareness_max_multiplier);
  set_if(r->duration("load_update_min_interval"), m.load_update_min_interval_ms);
  set_if(r->duration("join_retry_interval", 10), m.join_retry_interval_ms);
  set_if(r->duration("dead_reclaim", 1000), m.dead_reclaim_ms);
  set_if(r->boolean("lifeguard"), m.lifeguard);
  set_if(r->duration("sync_interval", 100), n.sync_interval_ms);
  set_if(r->duration("sync_session_timeout", 100), n.sync_session_timeout_ms);
  set_if(r->duration("startup_grace"), n.startup_grace_ms);
  set_if(r->duration("reconcile_timeout", 100), n.reconcile_timeout_ms);
  set_if(r->duration("heard_recently", 1), n.heard_recently_ms);
  set_if(r->duration("direct_contact", 1), n.direct_contact_ms);
  set_if(r->duration("replay_window", 1000), n.replay_window_ms);
  set_if(r->duration("maintenance_interval", 1000), n.maintenance_interval_ms);
  r->finish();
  if (Status s = gossip::check_config(m); !s.ok()) {
    r->fail("probe_interval", "the gossip timings do not fit together: " + s.error().message);
  }
}

void read_scheduler(TomlReader& top, schedule::SchedulerOptions& s) {
  auto r = top.section("scheduler");
  if (!r) return;
  set_if(r->duration("claim_retry", 10), s.claim_retry_ms);
  set_if(r->duration("claim_give_up", 10), s.claim_give_up_ms);
  set_if(r->duration("owner_silence", 100), s.owner_silence_ms);
  set_if(r->duration("misfire_threshold", 1), s.misfire_threshold_ms);
  set_if(r->duration("occurrence_retention", kMsPerMinute), s.occurrence_retention_ms);
  set_if(r->duration("revoke_retry", 10), s.revoke_retry_ms);
  set_if(r->duration("max_clock_skew"), s.max_clock_skew_ms);
  set_if(r->integer("max_backlog_per_entry", 1, 10'000'000), s.max_backlog_per_entry);
  set_if(r->duration("terminal_linger"), s.terminal_linger_ms);
  set_if(r->duration("prepare_ahead"), s.prepare_ahead_ms);
  set_if(r->duration("backup_step", 100), s.backup_step_ms);
  set_if(r->duration("claim_lease", 100), s.claim_lease_ms);
  set_if(r->integer("max_claims_in_flight", 0, 10'000'000), s.max_claims_in_flight);
  r->finish();
  if (s.prepare_ahead_ms > 10 * kMsPerMinute) {
    r->fail("prepare_ahead", "at most 10m: a burst is prepared in seconds, and every prepared run is held in memory");
  }
}

// [notify]: the cluster's notify handler (node/core/notify.h; docs/entries.md,
// "Notifications").  The handler must be one of this node's [[handler]]s.
void read_notify(TomlReader& top, const std::vector<HandlerConfig>& handlers, node::NotifyOptions& n) {
  auto r = top.section("notify");
  if (!r) return;
  set_if(r->string("handler"), n.handler);
  if (auto events = r->strings("events")) {
    n.failed = n.missed = n.lost = n.withheld = false;
    for (const std::string& ev : *events) {
      if (ev == "failed") n.failed = true;
      else if (ev == "missed") n.missed = true;
      else if (ev == "lost") n.lost = true;
      else if (ev == "withheld") n.withheld = true;
      else r->fail("events", "unknown event \"" + ev + "\"; expected failed, missed, lost or withheld");
    }
  }
  set_if(r->duration("withheld_after", 1000), n.withheld_after_ms);
  const bool has_handler = r->has("handler");
  r->finish();
  if (!has_handler) {
    r->fail("handler", "is required: the handler that is run for each notification");
  } else if (std::none_of(handlers.begin(), handlers.end(), [&](const HandlerConfig& h) { return h.name == n.handler; })) {
    r->fail("handler", "\"" + n.handler + "\" is not a [[handler]] of this node");
  }
}

void read_store(TomlReader& top, schedule::VolumeStoreOptions& s) {
  auto r = top.section("store");
  if (!r) return;
  set_if(r->duration("tombstone_grace", kMsPerMinute), s.tombstone_grace_ms);
  set_if(r->duration("max_clock_future", 1), s.max_clock_future_ms);
  r->finish();
}

void read_limits(TomlReader& top, DaemonConfig& c) {
  auto r = top.section("limits");
  if (!r) return;
  auto& t = c.transport;
  if (auto v = r->size_bytes("max_frame", 64 << 10, uint64_t{1} << 30)) t.max_frame_bytes = *v;
  if (auto v = r->size_bytes("frame_budget", 16 << 10, uint64_t{1} << 30)) c.tuning.max_stream_frame_bytes = *v;
  if (auto v = r->size_bytes("send_queue", 64 << 10, uint64_t{1} << 34)) t.send_queue_bytes = *v;
  if (auto v = r->integer("max_connections", 4, 1 << 20)) t.max_connections = static_cast<size_t>(*v);
  set_if(r->duration("connect_timeout", 10), t.connect_timeout_ms);
  set_if(r->duration("idle_timeout", 1000), t.idle_timeout_ms);
  r->finish();
  // The core sizes outgoing frames by an estimate; leave room above its budget.
  if (c.tuning.max_stream_frame_bytes * 2 > t.max_frame_bytes) {
    r->fail("frame_budget", "must be at most half of limits.max_frame (" + std::to_string(t.max_frame_bytes) +
                                " bytes): the budget is an estimate and frames may exceed it");
  }
}

void read_storage(TomlReader& top, DaemonConfig& c) {
  auto r = top.section("storage");
  if (!r) return;
  if (auto v = r->size_bytes("map_size", uint64_t{1} << 20, uint64_t{1} << 44)) c.storage.map_bytes = *v;
  if (auto v = r->size_bytes("max_map_size", uint64_t{1} << 20, uint64_t{1} << 44)) c.storage.max_map_bytes = *v;
  set_if(r->duration("group_commit_delay"), c.group_commit_max_delay_ms);
  r->finish();
  if (c.storage.map_bytes > c.storage.max_map_bytes) r->fail("map_size", "is larger than storage.max_map_size");
  if (c.group_commit_max_delay_ms > 1000) r->fail("group_commit_delay", "must be at most 1s");
}

}  // namespace

std::string dir_of(const std::string& path) {
  // Absolute, so that paths stay right whatever directory a handler runs in.
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  auto abs = std::filesystem::absolute(dir, ec);
  return (ec ? dir : abs).lexically_normal().string();
}

std::string resolve_path(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p.front() == '/' || base_dir.empty()) return p;
  std::string out = (std::filesystem::path(base_dir) / p).lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void read_cluster(const SourcedTable& src, TomlErrors& errors, node::ClusterConfig& out) {
  TomlReader r(*src.table, "cluster", src.path, errors);
  const auto epoch = r.integer("epoch", 1, INT64_MAX);
  const auto nodes = r.tables("node");
  const auto volumes = r.tables("volume");
  if (!epoch) {
    if (!r.has("epoch")) r.fail("epoch", "is required (a whole number >= 1; the highest epoch wins)");
    r.finish();
    return;
  }
  out.epoch = static_cast<uint64_t>(*epoch);
  std::set<std::string> node_ids;
  for (size_t i = 0; i < nodes.size(); ++i) {
    TomlReader n(*nodes[i], "cluster.node[" + std::to_string(i) + "]", src.path, errors);
    node::NodeSpec spec;
    if (auto id = n.string("id")) {
      spec.id = *id;
      if (!node::valid_node_id(spec.id)) n.fail("id", "\"" + spec.id + "\" is not a valid node id");
      if (!node_ids.insert(spec.id).second) n.fail("id", "node \"" + spec.id + "\" is listed twice");
    } else {
      n.fail("id", "is required");
    }
    spec.priority = n.integer("priority", INT64_MIN, INT64_MAX);
    set_if(n.strings("tags"), spec.tags);
    n.finish();
    out.nodes.push_back(std::move(spec));
  }
  for (size_t i = 0; i < volumes.size(); ++i) {
    TomlReader v(*volumes[i], "cluster.volume[" + std::to_string(i) + "]", src.path, errors);
    node::VolumeSpec spec;
    if (auto name = v.string("name")) {
      spec.name = *name;
    } else {
      v.fail("name", "is required");
    }
    if (auto replicas = v.strings("replicas")) {
      spec.replicas = *replicas;
      if (spec.replicas.empty()) v.fail("replicas", "must name at least one node");
    } else {
      v.fail("replicas", "is required");
    }
    v.finish();
    out.volumes.push_back(std::move(spec));
  }
  r.finish();
  if (errors.any()) return;
  auto normalized = node::normalize(out);
  if (!normalized) {
    errors.add(Error(r.where("epoch") + ": cluster: " + normalized.error().message, "cluster"));
    return;
  }
  out = std::move(*normalized);
}

void read_handlers(const std::vector<SourcedTable>& tables, const std::string& data_dir, TomlErrors& errors,
                   std::vector<HandlerConfig>& out) {
  std::set<std::string> names;
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string base_dir = dir_of(tables[i].path);
    TomlReader r(*tables[i].table, "handler[" + std::to_string(i) + "]", tables[i].path, errors);
    HandlerConfig h;
    if (auto name = r.string("name")) {
      h.name = *name;
      if (Status s = schedule::validate_identifier(h.name, "name"); !s.ok()) r.fail("name", s.error().message);
      if (!names.insert(h.name).second) r.fail("name", "handler \"" + h.name + "\" is defined twice");
    } else {
      r.fail("name", "is required");
    }
    const std::string kind = r.string("kind").value_or("");
    // With no valid kind, the checks of each kind's keys would only repeat that error.
    bool known_kind = true;
    if (kind == "exec") {
      h.kind = HandlerConfig::Kind::kExec;
    } else if (kind == "http") {
      h.kind = HandlerConfig::Kind::kHttp;
    } else if (kind == "builtin") {
      h.kind = HandlerConfig::Kind::kBuiltin;
    } else {
      known_kind = false;
      r.fail("kind", kind.empty() ? "is required (\"exec\", \"http\" or \"builtin\")"
                                  : "\"" + kind + "\" is not a handler kind (expected \"exec\", \"http\" or \"builtin\")");
    }
    // Keys of other kinds are refused, so `urls` on an exec handler is not silently ignored.
    auto only_for = [&](const char* key, HandlerConfig::Kind k, const char* kind_name) {
      if (known_kind && r.has(key) && h.kind != k) r.fail(key, std::string("is only for kind = \"") + kind_name + "\"");
    };
    only_for("argv", HandlerConfig::Kind::kExec, "exec");
    only_for("cwd", HandlerConfig::Kind::kExec, "exec");
    only_for("env", HandlerConfig::Kind::kExec, "exec");
    only_for("urls", HandlerConfig::Kind::kHttp, "http");
    only_for("headers", HandlerConfig::Kind::kHttp, "http");
    only_for("builtin", HandlerConfig::Kind::kBuiltin, "builtin");
    if (known_kind && h.kind == HandlerConfig::Kind::kBuiltin && r.has("timeout")) {
      r.fail("timeout", "is only for exec and http");
    }
    set_if(r.strings("argv"), h.argv);
    h.cwd = resolve_path(base_dir, r.string("cwd").value_or(""));
    if (h.cwd.empty()) h.cwd = data_dir;
    set_if(r.string_map("env"), h.env);
    set_if(r.strings("urls"), h.urls);
    set_if(r.string_map("headers"), h.headers);
    set_if(r.duration("timeout", 1), h.timeout_ms);
    if (auto v = r.integer("max_running", 1, 1 << 20)) h.max_running = static_cast<uint32_t>(*v);
    set_if(r.string("builtin"), h.builtin);
    if (!known_kind) {
      // reported above
    } else if (h.kind == HandlerConfig::Kind::kExec) {
      if (h.argv.empty() || h.argv[0].empty()) r.fail("argv", "an exec handler needs argv = [\"program\", ...]");
      // "./script.sh" is relative to the config file, like every other path in it.
      if (!h.argv.empty() && h.argv[0].find('/') != std::string::npos) h.argv[0] = resolve_path(base_dir, h.argv[0]);
    } else if (h.kind == HandlerConfig::Kind::kHttp) {
      if (h.urls.empty()) r.fail("urls", "an http handler needs urls = [\"http://...\", ...]");
      for (const auto& u : h.urls) {
        if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
          r.fail("urls", "\"" + u + "\" is not an http:// or https:// URL");
        }
      }
    } else if (h.kind == HandlerConfig::Kind::kBuiltin && h.builtin != "noop" && h.builtin != "log") {
      r.fail("builtin", h.builtin.empty() ? "is required (\"noop\" or \"log\")"
                                          : "\"" + h.builtin + "\" is not a builtin handler (expected \"noop\" or \"log\")");
    }
    r.finish();
    out.push_back(std::move(h));
  }
}

void read_entries(const std::vector<SourcedTable>& tables, const std::string& node_id, TomlErrors& errors,
                  std::vector<StaticEntry>& out) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string section = "entry[" + std::to_string(i) + "]";
    TomlReader r(*tables[i].table, section, tables[i].path, errors);
    StaticEntry e;
    for (auto [key, field] : {std::pair{"volume", &e.volume}, {"entity", &e.entity}, {"name", &e.name}}) {
      if (auto v = r.string(key)) {
        *field = *v;
      } else if (!r.has(key)) {
        r.fail(key, "is required");
      }
    }
    if (!e.volume.empty() && !node::valid_volume_name(e.volume)) {
      r.fail("volume", "\"" + e.volume + "\" is not a valid volume name");
    }
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [k, v] : *tables[i].table) {
      const std::string key(k.str());
      if (key == "volume" || key == "entity" || key == "name") continue;
      (void)r.raw(key);  // the entry's own validation below names unknown fields
      fields[key] = to_json(v);
    }
    r.finish();
    if (errors.any()) return;
    auto entry = schedule::entry_from_json(fields, e.entity, e.name, 0, node_id);
    if (!entry) {
      // Point at the offending key ("timer.repeat_for" -> the line of "timer").
      const std::string& field = entry.error().field;
      const std::string top = field.substr(0, field.find_first_of(".["));
      const std::string where = tables[i].table->contains(top) ? r.where(top) : r.where("name");
      errors.add(Error(where + ": " + section + "." + entry.error().message, section + "." + field));
      return;
    }
    if (!seen.insert({e.volume, e.entity, e.name}).second) {
      r.fail("name", "entry " + e.volume + "/" + e.entity + "/" + e.name + " is defined twice");
      return;
    }
    e.json = fields.dump();
    out.push_back(std::move(e));
  }
}

std::map<std::string, uint32_t> handler_caps(const std::vector<HandlerConfig>& handlers) {
  std::map<std::string, uint32_t> caps;
  for (const auto& h : handlers) {
    if (h.max_running > 0) caps[h.name] = h.max_running;
  }
  return caps;
}

void read_tuning(TomlReader& top, const std::string& base_dir, DaemonConfig& c) {
  uint32_t running_cap = 0;
  read_capacity(top, c.capacity, running_cap);
  c.tuning.capacity = c.capacity;
  read_api(top, base_dir, c.api);
  read_gossip(top, c.tuning);
  read_scheduler(top, c.tuning.scheduler);
  c.tuning.scheduler.running_cap = running_cap;
  c.tuning.scheduler.handler_caps = handler_caps(c.handlers);
  read_store(top, c.tuning.store);
  read_notify(top, c.handlers, c.tuning.notify);
  read_limits(top, c);
  read_storage(top, c);
}

}  // namespace caesium::daemon
