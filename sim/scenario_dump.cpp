#include "sim/scenario_dump.h"

#include <cstdio>

#include "base/time.h"

namespace caesium::sim {
namespace {

// A TOML basic string.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Doubles round-trip exactly: the replay must draw the same losses.
std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string duration(int64_t ms) { return quote(ms == 0 ? "0s" : format_duration_ms(ms)); }

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quote(items[i]);
  return out + "]";
}

// A workload entry's field (JSON) as a TOML value.
std::string toml_value(const nlohmann::json& j) {
  if (j.is_string()) return quote(j.get<std::string>());
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number()) return number(j.get<double>());
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + toml_value(j[i]);
    return out + "]";
  }
  if (j.is_object()) {
    std::string out = "{ ";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      out += (first ? "" : ", ") + quote(k) + " = " + toml_value(v);
      first = false;
    }
    return out + " }";
  }
  return "\"\"";
}

std::string distribution(const std::string& base, const std::string& jitter, const Distribution& d) {
  return base + " = " + duration(d.base_ms) + "\n" + jitter + " = " + duration(static_cast<int64_t>(d.jitter_ms)) +
         "\ndistribution = " + quote(shape_name(d.shape)) + "\n";
}

std::string fault(const FaultSpec& f) {
  std::string out = "[[fault]]\nat = " + duration(f.at_ms) + "\n";
  auto pairs = [&] {
    std::string p = "[";
    for (size_t i = 0; i < f.pairs.size(); ++i) p += (i ? ", " : "") + list({f.pairs[i].first, f.pairs[i].second});
    return p + "]";
  };
  switch (f.kind) {
    case FaultSpec::Kind::kPartition: {
      std::string g = "[";
      for (size_t i = 0; i < f.groups.size(); ++i) g += (i ? ", " : "") + list(f.groups[i]);
      out += "partition = " + g + "]\n";
      break;
    }
    case FaultSpec::Kind::kHeal: out += f.pairs.empty() ? "heal = true\n" : "heal = " + pairs() + "\n"; break;
    case FaultSpec::Kind::kCut: out += "cut = " + pairs() + "\n"; break;
    case FaultSpec::Kind::kOneway: {
      std::string o = "[";
      for (size_t i = 0; i < f.pairs.size(); ++i) {
        o += (i ? ", " : "") + std::string("{ from = ") + quote(f.pairs[i].first) + ", to = " + quote(f.pairs[i].second) + " }";
      }
      out += "oneway = " + o + "]\n";
      break;
    }
    case FaultSpec::Kind::kCrash: out += "crash = " + list(f.nodes) + "\n"; break;
    case FaultSpec::Kind::kRestart:
      out += "restart = " + list(f.nodes) + "\n" + (f.wipe_disk ? "wipe_disk = true\n" : "");
      break;
    case FaultSpec::Kind::kLeave: out += "leave = " + list(f.nodes) + "\n"; break;
    case FaultSpec::Kind::kSkew:
      out += "skew = { node = " + quote(f.nodes.at(0)) + ", offset = " +
             quote(f.offset_ms == 0 ? "0s" : format_duration_ms(f.offset_ms)) + ", drift = " + number(f.drift) + " }\n";
      break;
    case FaultSpec::Kind::kSlow:
      out += "slow = { node = " + quote(f.nodes.at(0)) + ", delay = " + duration(f.delay_ms) +
             (f.for_ms == kNever ? std::string() : ", for = " + duration(f.for_ms)) +
             (f.inbound_only ? ", inbound_only = true" : "") + " }\n";
      break;
    case FaultSpec::Kind::kConfig:
      out += "config = { via = " + quote(f.nodes.at(0)) + ", volume = " + quote(f.volume) +
             ", replicas = " + list(f.replicas) +
             (f.previous_replicas.empty() ? std::string() : ", previous_replicas = " + list(f.previous_replicas)) + " }\n";
      break;
  }
  return out;
}

}  // namespace

std::string dump_scenario(const Scenario& s, const std::vector<FaultSpec>& faults, const std::string& comment) {
  std::string out;
  size_t from = 0;
  while (from < comment.size()) {
    size_t to = comment.find('\n', from);
    if (to == std::string::npos) to = comment.size();
    out += "# " + comment.substr(from, to - from) + "\n";
    from = to + 1;
  }
  out += "name = " + quote(s.name) + "\nprocess = " + quote(s.process) + "\nseed = " + std::to_string(s.seed) +
         "\nduration = " + duration(s.duration_ms) + "\nsettle = " + duration(s.settle_ms) +
         "\nheal_at_end = " + (s.heal_at_end ? "true" : "false") + "\nepoch = " +
         quote(format_rfc3339_utc(s.world.epoch_utc_ms)) + "\n";
  for (const NodeSpec& n : s.cluster.nodes) {
    out += "\n[[node]]\nid = " + quote(n.id) + "\n";
    if (n.priority != 0) out += "priority = " + std::to_string(n.priority) + "\n";
    if (!n.tags.empty()) out += "tags = " + list(n.tags) + "\n";
    if (n.gossip_addr != n.id + ":7946") out += "gossip_addr = " + quote(n.gossip_addr) + "\n";
    if (n.stream_addr != n.id + ":7947") out += "stream_addr = " + quote(n.stream_addr) + "\n";
  }
  for (const VolumeSpec& v : s.cluster.volumes) out += "\n[[volume]]\nname = " + quote(v.name) + "\nreplicas = " + list(v.replicas) + "\n";
  if (s.node_options && !s.node_options->empty()) {
    out += "\n[node_options]\n";
    for (const auto& [k, v] : *s.node_options) {
      out += std::string(k.str()) + " = ";
      if (auto str = v.value<std::string>()) out += quote(*str);
      else if (auto i = v.value<int64_t>()) out += std::to_string(*i);
      else if (auto b = v.value<bool>()) out += *b ? "true" : "false";
      else if (auto d = v.value<double>()) out += number(*d);
      out += "\n";
    }
  }
  const NetworkParams& net = s.world.network;
  out += "\n[network]\n" + distribution("latency", "jitter", net.latency) + "sigma = " + number(net.latency.sigma) +
         "\nloss = " + number(net.loss) + "\nduplicate = " + number(net.duplicate) + "\ncorrupt = " + number(net.corrupt) +
         "\nstream_corrupt = " + number(net.stream_corrupt) + "\nmax_datagram = " + std::to_string(net.max_datagram_bytes) +
         "\n\n[disk]\n" + distribution("sync_latency", "sync_jitter", s.world.disk_sync) +
         "\n[clock]\nmax_skew = " + duration(s.world.max_skew_ms) +
         "\n\n[membership]\nsuspect_window = " + duration(s.membership.suspect_window_ms) +
         "\ndead_window = " + duration(s.membership.dead_window_ms) + "\n";
  const HandlerModel& h = s.world.handler;
  out += "\n[workload.handler]\n" + distribution("duration", "jitter", h.duration) + "fail = " + number(h.fail_probability) +
         "\nnever_complete = " + number(h.never_complete_probability) + "\n";
  // `key = { "a" = v, ... }` for a map by name, nothing for an empty one.
  auto inline_table = [&](const char* key, const auto& map, const auto& value) {
    if (map.empty()) return;
    out += std::string(key) + " = { ";
    bool first = true;
    for (const auto& [name, v] : map) {
      out += (first ? "" : ", ") + quote(name) + " = " + value(v);
      first = false;
    }
    out += " }\n";
  };
  inline_table("slowness", s.handler_slowness, [&](double m) { return number(m); });
  inline_table("fixed", h.fixed_duration_ms, [&](int64_t ms) { return duration(ms); });
  inline_table("fail_by", h.fail_by_handler, [&](double p) { return number(p); });
  for (const WorkloadEntry& w : s.workload) {
    out += "\n[[workload.entry]]\nat = " + duration(w.at_ms) + "\nvia = " + quote(w.via) + "\nvolume = " + quote(w.volume) +
           "\nentity = " + quote(w.entity) + "\nname = " + quote(w.name) + "\n";
    if (w.remove) out += "op = \"delete\"\n";
    if (w.pause) out += *w.pause ? "op = \"pause\"\n" : "op = \"resume\"\n";
    if (w.trigger) out += "op = \"trigger\"\n";
    if (!w.idempotency_key.empty()) out += "key = " + quote(w.idempotency_key) + "\n";
    if (w.want_majority) out += "w = \"majority\"\n";
    else if (w.want_acks > 1) out += "w = " + std::to_string(w.want_acks) + "\n";
    for (const auto& [k, v] : w.fields.items()) out += k + " = " + toml_value(v) + "\n";
  }
  for (const FaultSpec& f : faults) out += "\n" + fault(f);
  return out;
}

}  // namespace caesium::sim
