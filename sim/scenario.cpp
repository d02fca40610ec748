// Scenario loader: TOML -> Scenario, with every error collected, each naming the key and
// its file:line:column (base/toml/toml_reader.h).  A check that makes the rest of a table
// meaningless stop()s that table; toml_guard() around each table lets the next one be
// read.  The [[fault]] and [expect] tables are read in scenario_faults.cpp.
#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "base/toml/toml_reader.h"
#include "schedule/entry.h"

namespace caesium::sim {

// scenario_faults.cpp
void read_fault(TomlReader& r, FaultSpec& f);
void read_random_faults(TomlReader& r, RandomFaults& out);
void read_expect(TomlReader& r, Expect& out);

namespace {

nlohmann::json to_json(const toml::node& n) {
  if (const auto* t = n.as_table()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : *t) j[std::string(k.str())] = to_json(v);
    return j;
  }
  if (const auto* a = n.as_array()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : *a) j.push_back(to_json(v));
    return j;
  }
  if (n.is_string()) return std::string(**n.as_string());
  if (n.is_integer()) return **n.as_integer();
  if (n.is_floating_point()) return **n.as_floating_point();
  if (n.is_boolean()) return **n.as_boolean();
  // Dates and times: their TOML text, which RFC 3339 readers accept.
  std::ostringstream os;
  if (n.is_date()) os << **n.as_date();
  if (n.is_time()) os << **n.as_time();
  if (n.is_date_time()) os << **n.as_date_time();
  return os.str();
}

void read_distribution(TomlReader& r, const std::string& base_key, const std::string& jitter_key,
                       const std::string& shape_key, Distribution& d) {
  if (auto v = r.duration(base_key)) d.base_ms = *v;
  if (auto v = r.duration(jitter_key)) d.jitter_ms = static_cast<double>(*v);
  if (auto v = r.string(shape_key)) {
    auto shape = parse_shape(*v);
    if (!shape.ok()) r.stop(*r.node().get(shape_key), shape_key, shape.error().message);
    d.shape = shape.value();
  }
}

void read_nodes(TomlReader& top, Scenario& s) {
  if (const toml::array* nodes = top.array("node")) {
    size_t i = 0;
    for (const toml::node& item : *nodes) toml_guard([&] {
      if (!item.is_table()) top.stop(item, "node", "must be an array of tables ([[node]])");
      TomlReader r(*item.as_table(), "node[" + std::to_string(i++) + "]", top.path(), top.errors());
      r.allow_only({"id", "gossip_addr", "stream_addr", "priority", "tags"});
      NodeSpec n;
      auto id = r.string("id");
      if (!id || id->empty()) r.stop_here("a node needs a non-empty id");
      n.id = *id;
      n.gossip_addr = r.string("gossip_addr").value_or(n.id + ":7946");
      n.stream_addr = r.string("stream_addr").value_or(n.id + ":7947");
      n.priority = r.integer("priority", INT32_MIN, INT32_MAX).value_or(0);
      n.tags = r.strings("tags").value_or(std::vector<std::string>{});
      std::sort(n.tags.begin(), n.tags.end());
      n.tags.erase(std::unique(n.tags.begin(), n.tags.end()), n.tags.end());
      r.finish();
      s.cluster.nodes.push_back(std::move(n));
    });
  }
  if (const toml::table* gen = top.table("nodes")) toml_guard([&] {
    TomlReader r(*gen, "nodes", top.path(), top.errors());
    r.allow_only({"count", "prefix", "start"});
    if (!s.cluster.nodes.empty()) r.stop_here("use either [[node]] tables or [nodes] count, not both");
    const int64_t count = r.integer("count", 1, 100000).value_or(0);
    if (count == 0) r.stop_here("needs count = N");
    const std::string prefix = r.string("prefix").value_or("n");
    const std::string start = r.string("start").value_or("join");
    if (start == "joined") s.cluster.start_joined = true;
    else if (start != "join") r.stop_here("start must be \"join\" (through seeds, the default) or \"joined\" (converged view)");
    r.finish();
    for (int64_t i = 1; i <= count; ++i) {
      NodeSpec n;
      n.id = prefix + std::to_string(i);
      n.gossip_addr = n.id + ":7946";
      n.stream_addr = n.id + ":7947";
      s.cluster.nodes.push_back(std::move(n));
    }
  });
}

// [[workload.burst]]: `count` one-shot entries written at `at`, the first due `due` after
// that and the rest spread evenly over `window` (entry i is due at
// at + due + i * window / count), each written through the next node of `via` in turn
// (default: the volume's replicas).  They are named <prefix><i>, i zero-padded.  Every
// other key is a field of each entry, as in [[workload.entry]].
void read_burst(const toml::table& t, const std::string& section, const std::string& path, TomlErrors& errors,
                Scenario& s) {
  constexpr int64_t kMaxBurst = 10'000'000;
  TomlReader e(t, section, path, errors);
  const int64_t at = e.duration("at").value_or(0);
  const int64_t count = e.integer("count", 1, kMaxBurst).value_or(0);
  const std::string volume = e.string("volume").value_or("");
  const std::string entity = e.string("entity").value_or("");
  const std::string prefix = e.string("name_prefix").value_or("burst");
  const int64_t due = e.duration("due").value_or(0);
  const int64_t window = e.duration("window").value_or(0);
  std::vector<std::string> via = e.one_or_many("via").value_or(std::vector<std::string>{});
  if (count == 0 || volume.empty() || entity.empty()) e.stop_here("a burst needs count, volume and entity");
  if (due <= 0) e.stop_here("due must be a positive duration (how long after `at` the first entry is due)");
  if (window > 365 * 24 * kMsPerHour) e.stop_here("window must be at most a year");
  if (via.empty()) {
    for (const auto& v : s.cluster.volumes) {
      if (v.name == volume) via = v.replicas;
    }
    // An unknown volume is reported by validation, against the entries.
    if (via.empty()) via.push_back(s.cluster.nodes.empty() ? std::string() : s.cluster.nodes.front().id);
  }
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "at" || key == "count" || key == "volume" || key == "entity" || key == "name_prefix" ||
        key == "due" || key == "window" || key == "via") {
      continue;
    }
    if (key == "name" || key == "cron" || key == "timer") {
      e.stop(v, key, "is set by the burst itself (entries are named <name_prefix><i> and due once)");
    }
    fields[key] = to_json(v);
    (void)e.raw(key);
  }
  e.finish();
  const size_t width = std::to_string(count - 1).size();
  for (int64_t i = 0; i < count; ++i) {
    WorkloadEntry we;
    we.at_ms = at;
    we.via = via[static_cast<size_t>(i) % via.size()];
    we.volume = volume;
    we.entity = entity;
    std::string n = std::to_string(i);
    we.name = prefix + std::string(width - n.size(), '0') + n;
    we.fields = fields;
    // The entry's own clock starts at the write; "after" is relative to it.
    const int64_t after = due + i * window / count;  // count <= 1e7, window <= 1 year: no overflow
    we.fields["timer"] = {{"after", std::to_string(after) + "ms"}};
    s.workload.push_back(std::move(we));
  }
}

// `op` ("put" | "delete" | "pause" | "resume" | "trigger", with an optional `key`) and `w` (an integer >= 1 or "majority") of a
// workload entry.
void read_write_options(TomlReader& e, WorkloadEntry& we) {
  if (auto op = e.string("op")) {
    if (*op == "delete") we.remove = true;
    else if (*op == "pause" || *op == "resume") we.pause = *op == "pause";
    else if (*op == "trigger") we.trigger = true;
    else if (*op != "put") {
      e.fail("op", "must be \"put\", \"delete\", \"pause\", \"resume\" or \"trigger\", not \"" + *op + "\"");
    }
  }
  if (we.trigger) {
    if (auto key = e.string("key")) {
      if (Status st = schedule::validate_idempotency_key(*key); !st.ok()) e.fail("key", st.error().message);
      we.idempotency_key = *key;
    }
  }
  if (const toml::node* w = e.raw("w")) {
    if (const auto* text = w->as_string()) {
      if (text->get() != "majority") e.fail_at(*w, "w", "must be a number of replicas (>= 1) or \"majority\"");
      we.want_majority = true;
    } else {
      we.want_acks = static_cast<uint32_t>(e.integer("w", 1, 1000).value_or(1));
    }
  }
}

void read_workload(TomlReader& top, Scenario& s) {
  const toml::table* w = top.table("workload");
  if (!w) return;
  TomlReader r(*w, "workload", top.path(), top.errors());
  if (const toml::array* entries = r.array("entry")) {
    size_t i = 0;
    for (const toml::node& item : *entries) toml_guard([&] {
      if (!item.is_table()) r.stop(item, "entry", "must be an array of tables ([[workload.entry]])");
      const toml::table& t = *item.as_table();
      TomlReader e(t, "workload.entry[" + std::to_string(i++) + "]", top.path(), top.errors());
      WorkloadEntry we;
      we.at_ms = e.duration("at").value_or(0);
      we.via = e.string("via").value_or("");
      we.volume = e.string("volume").value_or("");
      we.entity = e.string("entity").value_or("");
      we.name = e.string("name").value_or("");
      if (we.via.empty() || we.volume.empty() || we.entity.empty() || we.name.empty()) {
        e.stop_here("an entry needs via, volume, entity and name");
      }
      we.where = toml_position(t.source(), top.path());
      read_write_options(e, we);
      // Every other key is a field of the entry itself, passed on as JSON.
      for (const auto& [k, v] : t) {
        const std::string key(k.str());
        if (key == "at" || key == "via" || key == "volume" || key == "entity" || key == "name" || key == "op" ||
            key == "w" || (we.trigger && key == "key")) {
          continue;
        }
        if (we.remove) e.fail_at(v, key, "a delete (op = \"delete\") takes no entry fields");
        if (we.pause) e.fail_at(v, key, "a pause or resume takes no entry fields");
        if (we.trigger) e.fail_at(v, key, "a trigger takes no entry fields (only key, its Idempotency-Key)");
        we.fields[key] = to_json(v);
        (void)e.raw(key);
      }
      e.finish();
      s.workload.push_back(std::move(we));
    });
  }
  if (const toml::array* bursts = r.array("burst")) {
    size_t i = 0;
    for (const toml::node& item : *bursts) toml_guard([&] {
      if (!item.is_table()) r.stop(item, "burst", "must be an array of tables ([[workload.burst]])");
      read_burst(*item.as_table(), "workload.burst[" + std::to_string(i++) + "]", top.path(), top.errors(), s);
    });
  }
  if (const toml::table* h = r.table("handler")) toml_guard([&] {
    TomlReader hr(*h, "workload.handler", top.path(), top.errors());
    read_distribution(hr, "duration", "jitter", "distribution", s.world.handler.duration);
    if (auto v = hr.probability("fail")) s.world.handler.fail_probability = *v;
    if (auto v = hr.probability("never_complete")) s.world.handler.never_complete_probability = *v;
    if (const toml::table* fixed = hr.table("fixed")) {
      // [workload.handler.fixed] <handler> = "<duration>": that handler always runs so long.
      TomlReader fr(*fixed, "workload.handler.fixed", top.path(), top.errors());
      for (const auto& [k, v] : *fixed) {
        const std::string key(k.str());
        if (auto d = fr.duration(key)) s.world.handler.fixed_duration_ms[key] = *d;
      }
      fr.finish();
    }
    if (const toml::table* flaky = hr.table("fail_by")) {
      // [workload.handler.fail_by] <handler> = <probability>: that handler fails so often.
      TomlReader fr(*flaky, "workload.handler.fail_by", top.path(), top.errors());
      for (const auto& [k, v] : *flaky) {
        const std::string key(k.str());
        if (auto p = fr.probability(key)) s.world.handler.fail_by_handler[key] = *p;
      }
      fr.finish();
    }
    if (const toml::table* slow = hr.table("slowness")) {
      TomlReader sr(*slow, "workload.handler.slowness", top.path(), top.errors());
      for (const auto& [k, v] : *slow) {
        const std::string key(k.str());
        if (auto factor = sr.number(key, 0.0, 1e6)) s.handler_slowness[key] = *factor;
      }
      sr.finish();
    }
    hr.finish();
  });
  r.finish();
}

void read_scenario(const toml::table& root, TomlErrors& errors, Scenario& s) {
  TomlReader top(root, "", s.path, errors);
  s.name = top.string("name").value_or("");
  s.process = top.string("process").value_or("node");
  s.seed = static_cast<uint64_t>(top.integer("seed", 0, INT64_MAX).value_or(1));
  s.duration_ms = top.duration("duration").value_or(s.duration_ms);
  s.settle_ms = top.duration("settle").value_or(0);
  s.heal_at_end = top.boolean("heal_at_end").value_or(false);
  if (auto epoch = top.string("epoch")) {
    auto t = parse_rfc3339_ms(*epoch);
    if (t.ok()) s.world.epoch_utc_ms = *t;
    else top.fail("epoch", t.error().message);
  }
  read_nodes(top, s);
  if (const toml::array* vols = top.array("volume")) {
    size_t i = 0;
    for (const toml::node& item : *vols) toml_guard([&] {
      if (!item.is_table()) top.stop(item, "volume", "must be an array of tables ([[volume]])");
      TomlReader r(*item.as_table(), "volume[" + std::to_string(i++) + "]", s.path, errors);
      r.allow_only({"name", "replicas"});
      VolumeSpec v;
      v.name = r.string("name").value_or("");
      v.replicas = r.strings("replicas").value_or(std::vector<std::string>{});
      if (v.name.empty() || v.replicas.empty()) r.stop_here("a volume needs a name and replicas");
      r.finish();
      s.cluster.volumes.push_back(std::move(v));
    });
  }
  if (const toml::table* opts = top.table("node_options")) {
    s.node_options = std::make_shared<toml::table>(*opts);
  }
  if (const toml::table* net = top.table("network")) toml_guard([&] {
    TomlReader r(*net, "network", s.path, errors);
    NetworkParams& p = s.world.network;
    read_distribution(r, "latency", "jitter", "distribution", p.latency);
    if (auto v = r.number("sigma", 0.01, 10.0)) p.latency.sigma = *v;
    if (auto v = r.probability("loss")) p.loss = *v;
    if (auto v = r.probability("duplicate")) p.duplicate = *v;
    if (auto v = r.probability("corrupt")) p.corrupt = *v;
    if (auto v = r.probability("stream_corrupt")) p.stream_corrupt = *v;
    if (auto v = r.integer("max_datagram", 64, 65507)) p.max_datagram_bytes = static_cast<size_t>(*v);
    r.finish();
  });
  if (const toml::table* disk = top.table("disk")) toml_guard([&] {
    TomlReader r(*disk, "disk", s.path, errors);
    read_distribution(r, "sync_latency", "sync_jitter", "distribution", s.world.disk_sync);
    r.finish();
  });
  if (const toml::table* clock = top.table("clock")) {
    TomlReader r(*clock, "clock", s.path, errors);
    if (auto v = r.duration("max_skew")) s.world.max_skew_ms = *v;
    r.finish();
  }
  if (const toml::table* m = top.table("membership")) {
    TomlReader r(*m, "membership", s.path, errors);
    if (auto v = r.duration("suspect_window")) s.membership.suspect_window_ms = *v;
    if (auto v = r.duration("dead_window")) s.membership.dead_window_ms = *v;
    r.finish();
  }
  read_workload(top, s);
  if (const toml::array* faults = top.array("fault")) {
    size_t i = 0;
    for (const toml::node& item : *faults) toml_guard([&] {
      if (!item.is_table()) top.stop(item, "fault", "must be an array of tables ([[fault]])");
      TomlReader r(*item.as_table(), "fault[" + std::to_string(i++) + "]", s.path, errors);
      FaultSpec f;
      f.where = toml_position(item.source(), s.path);
      read_fault(r, f);
      s.faults.push_back(std::move(f));
    });
  }
  if (const toml::table* rf = top.table("random_faults")) {
    TomlReader r(*rf, "random_faults", s.path, errors);
    read_random_faults(r, s.random);
  }
  if (const toml::table* ex = top.table("expect")) toml_guard([&] {
    TomlReader r(*ex, "expect", s.path, errors);
    read_expect(r, s.expect);
  });
  top.finish();
  std::stable_sort(s.faults.begin(), s.faults.end(),
                   [](const FaultSpec& a, const FaultSpec& b) { return a.at_ms < b.at_ms; });
}

}  // namespace

Result<Scenario> parse_scenario(std::string_view text, const std::string& path) {
  Scenario s;
  s.path = path;
  auto root = parse_toml(text, path);
  if (!root.ok()) return root.error();
  TomlErrors errors;
  toml_guard([&] { read_scenario(*root, errors, s); });
  if (errors.any()) return errors.combined();
  Status st = validate_scenario(s);
  if (!st.ok()) return st.error();
  return s;
}

Result<Scenario> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open scenario file '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), path);
}

Status validate_scenario(const Scenario& s) {
  const std::string& p = s.path;
  if (s.cluster.nodes.empty()) return Error(p + ": no nodes: add [[node]] tables or [nodes] count = N", "node");
  std::set<std::string> ids, addrs;
  for (const NodeSpec& n : s.cluster.nodes) {
    if (!ids.insert(n.id).second) return Error(p + ": node id '" + n.id + "' appears twice", "node.id");
    if (!addrs.insert("g " + n.gossip_addr).second || !addrs.insert("s " + n.stream_addr).second) {
      return Error(p + ": node '" + n.id + "' reuses another node's address", "node");
    }
  }
  auto known = [&](const std::string& id, const std::string& where, const std::string& key) -> Status {
    if (ids.count(id) == 0) return Error(where + ": " + key + ": unknown node '" + id + "'", key);
    return Status::success();
  };
  std::set<std::string> volumes;
  for (const VolumeSpec& v : s.cluster.volumes) {
    if (!volumes.insert(v.name).second) return Error(p + ": volume '" + v.name + "' appears twice", "volume.name");
    std::set<std::string> seen;
    for (const auto& r : v.replicas) {
      if (Status st = known(r, p, "volume.replicas"); !st.ok()) return st;
      if (!seen.insert(r).second) return Error(p + ": volume '" + v.name + "' lists replica '" + r + "' twice", "volume.replicas");
    }
  }
  for (const auto& [id, mult] : s.handler_slowness) {
    if (Status st = known(id, p, "workload.handler.slowness"); !st.ok()) return st;
  }
  for (const WorkloadEntry& w : s.workload) {
    if (Status st = known(w.via, p, "workload.entry.via"); !st.ok()) return st;
    if (volumes.count(w.volume) == 0) {
      return Error(p + ": workload.entry.volume: unknown volume '" + w.volume + "'", "workload.entry.volume");
    }
    if (w.at_ms > s.end_ms()) return Error(p + ": workload.entry.at: after the end of the run", "workload.entry.at");
    for (const VolumeSpec& v : s.cluster.volumes) {
      if (v.name == w.volume && w.want_acks > v.replicas.size()) {
        return Error((w.where.empty() ? p : w.where) + ": workload.entry.w: " + std::to_string(w.want_acks) +
                         " acknowledgements asked of a volume with " + std::to_string(v.replicas.size()) + " replicas",
                     "workload.entry.w");
      }
    }
  }
  for (const FaultSpec& f : s.faults) {
    if (f.at_ms > s.end_ms()) {
      return Error(f.where + ": fault.at: " + format_duration_ms(f.at_ms) +
                   " is after the end of the run (duration + settle = " + format_duration_ms(s.end_ms()) + ")",
                   "fault.at");
    }
    for (const auto& g : f.groups) {
      for (const auto& id : g) {
        if (Status st = known(id, f.where, "fault.partition"); !st.ok()) return st;
      }
    }
    std::set<std::string> in_groups;
    for (const auto& g : f.groups) {
      for (const auto& id : g) {
        if (!in_groups.insert(id).second) return Error(f.where + ": fault.partition: node '" + id + "' is in two groups", "fault.partition");
      }
    }
    for (const auto& [a, b] : f.pairs) {
      if (Status st = known(a, f.where, "fault"); !st.ok()) return st;
      if (Status st = known(b, f.where, "fault"); !st.ok()) return st;
      if (a == b) return Error(f.where + ": fault: a node cannot be cut from itself ('" + a + "')", "fault");
    }
    for (const auto& id : f.nodes) {
      if (Status st = known(id, f.where, "fault"); !st.ok()) return st;
    }
    if (f.kind == FaultSpec::Kind::kConfig) {
      if (volumes.count(f.volume) == 0) {
        return Error(f.where + ": fault.config.volume: unknown volume '" + f.volume + "'", "fault.config.volume");
      }
      for (const auto* list : {&f.replicas, &f.previous_replicas}) {
        std::set<std::string> seen;
        for (const auto& id : *list) {
          if (Status st = known(id, f.where, "fault.config.replicas"); !st.ok()) return st;
          if (!seen.insert(id).second) {
            return Error(f.where + ": fault.config: replica '" + id + "' is listed twice", "fault.config.replicas");
          }
        }
      }
    }
    if (f.kind == FaultSpec::Kind::kSkew && (f.offset_ms > s.world.max_skew_ms || f.offset_ms < -s.world.max_skew_ms)) {
      return Error(f.where + ": fault.skew.offset: " + std::to_string(f.offset_ms) +
                   "ms is beyond clock.max_skew (" + format_duration_ms(s.world.max_skew_ms) +
                   "); raise [clock] max_skew to simulate it", "fault.skew.offset");
    }
  }
  if (s.random.stop_ms > s.end_ms()) return Error(p + ": random_faults.stop: after the end of the run", "random_faults.stop");
  return Status::success();
}

}  // namespace caesium::sim
