// Scenario loader, part two: [[fault]], [random_faults] and [expect].
#include <string>
#include <vector>

#include "sim/scenario.h"
#include "base/toml/toml_reader.h"

namespace caesium::sim {

namespace {

std::vector<std::pair<std::string, std::string>> read_pairs(TomlReader& r, const std::string& key) {
  std::vector<std::pair<std::string, std::string>> out;
  const toml::array* arr = r.array(key);
  if (arr == nullptr) return out;  // absent, or not an array (recorded)
  for (const toml::node& item : *arr) {
    const toml::array* pair = item.as_array();
    if (!pair || pair->size() != 2 || !(*pair)[0].is_string() || !(*pair)[1].is_string()) {
      r.stop(item, key, "must be a list of node pairs, e.g. [[\"n1\", \"n3\"]]");
    }
    out.emplace_back(std::string(**(*pair)[0].as_string()), std::string(**(*pair)[1].as_string()));
  }
  return out;
}

void read_oneway(TomlReader& r, const toml::table& t, FaultSpec& f) {
  TomlReader o(t, r.name("oneway"), r.path(), r.errors());
  o.allow_only({"from", "to"});
  auto from = o.string("from"), to = o.string("to");
  if (!from || !to) o.stop_here("needs from = \"node\" and to = \"node\"");
  o.finish();
  f.pairs.emplace_back(*from, *to);
}

}  // namespace

void read_fault(TomlReader& r, FaultSpec& f) {
  r.allow_only({"at", "partition", "heal", "cut", "oneway", "crash", "restart", "wipe_disk",
                "leave", "skew", "slow", "config"});
  auto at = r.duration("at");
  if (!at) r.stop_here("a fault needs at = \"<duration>\"");
  f.at_ms = *at;
  static const char* const kActions[] = {"partition", "heal", "cut", "oneway", "crash",
                                         "restart", "leave", "skew", "slow", "config"};
  int actions = 0;
  for (const char* a : kActions) actions += r.has(a) ? 1 : 0;
  if (actions != 1) {
    r.stop_here("a fault needs exactly one of partition, heal, cut, oneway, crash, restart, "
                "leave, skew, slow, config (found " + std::to_string(actions) + ")");
  }
  if (r.has("wipe_disk") && !r.has("restart")) {
    r.stop(*r.node().get("wipe_disk"), "wipe_disk", "only goes with restart");
  }
  if (const toml::node* p = r.raw("partition")) {
    f.kind = FaultSpec::Kind::kPartition;
    const toml::array* groups = p->as_array();
    if (!groups) r.stop(*p, "partition", "must be a list of groups, e.g. [[\"n1\",\"n2\"],[\"n3\"]]");
    for (const toml::node& g : *groups) {
      const toml::array* members = g.as_array();
      if (!members) r.stop(g, "partition", "each group must be a list of node ids");
      std::vector<std::string> group;
      for (const toml::node& m : *members) {
        if (!m.is_string()) r.stop(m, "partition", "each group must be a list of node ids");
        group.emplace_back(**m.as_string());
      }
      f.groups.push_back(std::move(group));
    }
  } else if (const toml::node* h = r.raw("heal")) {
    f.kind = FaultSpec::Kind::kHeal;
    if (h->is_boolean()) {
      if (!**h->as_boolean()) r.stop(*h, "heal", "heal = false means nothing: remove the fault");
    } else {
      f.pairs = read_pairs(r, "heal");
    }
  } else if (r.has("cut")) {
    f.kind = FaultSpec::Kind::kCut;
    f.pairs = read_pairs(r, "cut");
  } else if (const toml::node* o = r.raw("oneway")) {
    f.kind = FaultSpec::Kind::kOneway;
    if (const toml::table* t = o->as_table()) {
      read_oneway(r, *t, f);
    } else if (const toml::array* arr = o->as_array()) {
      for (const toml::node& item : *arr) {
        if (!item.is_table()) r.stop(item, "oneway", "must be {from=..., to=...} or a list of them");
        read_oneway(r, *item.as_table(), f);
      }
    } else {
      r.stop(*o, "oneway", "must be {from=\"n1\", to=\"n2\"} or a list of them");
    }
  } else if (r.has("crash")) {  // a value of the wrong type is recorded by one_or_many
    f.kind = FaultSpec::Kind::kCrash;
    f.nodes = r.one_or_many("crash").value_or(std::vector<std::string>{});
  } else if (r.has("restart")) {
    f.kind = FaultSpec::Kind::kRestart;
    f.nodes = r.one_or_many("restart").value_or(std::vector<std::string>{});
    f.wipe_disk = r.boolean("wipe_disk").value_or(false);
  } else if (r.has("leave")) {
    f.kind = FaultSpec::Kind::kLeave;
    f.nodes = r.one_or_many("leave").value_or(std::vector<std::string>{});
  } else if (const toml::table* skew = r.table("skew")) {
    f.kind = FaultSpec::Kind::kSkew;
    TomlReader s(*skew, r.name("skew"), r.path(), r.errors());
    s.allow_only({"node", "offset", "drift"});
    auto node = s.string("node");
    if (!node) s.stop_here("needs node = \"id\"");
    f.nodes = {*node};
    f.offset_ms = s.signed_duration("offset").value_or(0);
    f.drift = s.number("drift", -0.01, 0.01).value_or(0);
    s.finish();
  } else if (const toml::table* slow = r.table("slow")) {
    f.kind = FaultSpec::Kind::kSlow;
    TomlReader s(*slow, r.name("slow"), r.path(), r.errors());
    s.allow_only({"node", "delay", "for", "inbound_only"});
    auto node = s.string("node");
    auto delay = s.duration("delay");
    if (!node || !delay || *delay <= 0) s.stop_here("needs node = \"id\" and delay = \"<duration>\" > 0");
    f.nodes = {*node};
    f.delay_ms = *delay;
    f.for_ms = s.duration("for").value_or(kNever);
    f.inbound_only = s.boolean("inbound_only").value_or(false);
    s.finish();
  } else if (const toml::table* config = r.table("config")) {
    f.kind = FaultSpec::Kind::kConfig;
    TomlReader c(*config, r.name("config"), r.path(), r.errors());
    c.allow_only({"via", "volume", "replicas", "previous_replicas"});
    auto via = c.string("via");
    auto volume = c.string("volume");
    auto replicas = c.strings("replicas");
    if (!via || !volume || !replicas || replicas->empty()) {
      c.stop_here("needs via = \"node\", volume = \"name\" and replicas = [\"n1\", ...]");
    }
    f.nodes = {*via};
    f.volume = *volume;
    f.replicas = *replicas;
    f.previous_replicas = c.strings("previous_replicas").value_or(std::vector<std::string>{});
    c.finish();
  }
  // Otherwise skew, slow or config is there but not a table: table() recorded it.
  r.finish();
}

void read_random_faults(TomlReader& r, RandomFaults& out) {
  const double kMaxRate = 100000;
  if (auto v = r.number("crash_rate", 0, kMaxRate)) out.crash_rate = *v;
  if (auto v = r.number("partition_rate", 0, kMaxRate)) out.partition_rate = *v;
  if (auto v = r.number("oneway_rate", 0, kMaxRate)) out.oneway_rate = *v;
  if (auto v = r.number("cut_rate", 0, kMaxRate)) out.cut_rate = *v;
  if (auto v = r.number("slow_rate", 0, kMaxRate)) out.slow_rate = *v;
  if (auto v = r.number("skew_rate", 0, kMaxRate)) out.skew_rate = *v;
  if (auto v = r.duration("mean_duration")) out.mean_duration_ms = std::max<int64_t>(1, *v);
  if (auto v = r.probability("wipe_probability")) out.wipe_probability = *v;
  if (auto v = r.duration("start")) out.start_ms = *v;
  if (auto v = r.duration("stop")) out.stop_ms = *v;
  if (auto v = r.integer("max_down", 0, 100000)) out.max_down = *v;
  if (auto v = r.duration("slow_delay")) out.slow_delay_ms = *v;
  r.finish();
}

void read_expect(TomlReader& r, Expect& out) {
  if (auto v = r.integer("violations", 0, INT64_MAX)) out.violations = static_cast<uint64_t>(*v);
  if (auto v = r.strings("violation_kinds")) out.violation_kinds = *v;
  auto read_map = [&](const char* key, Expectation::Op op) {
    const toml::table* t = r.table(key);
    if (!t) return;
    TomlReader m(*t, r.name(key), r.path(), r.errors());
    for (const auto& [k, v] : *t) {
      const std::string figure(k.str());
      Expectation e;
      e.figure = figure;
      e.op = op;
      auto value = m.number(figure, -1e300, 1e300);
      if (!value) continue;  // recorded
      e.value = *value;
      e.where = toml_position(v.source(), r.path());
      out.checks.push_back(std::move(e));
    }
    m.finish();
  };
  read_map("counters", Expectation::Op::kEqual);
  read_map("min", Expectation::Op::kMin);
  read_map("max", Expectation::Op::kMax);
  r.finish();
}

}  // namespace caesium::sim
