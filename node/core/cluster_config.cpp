#include "node/core/cluster_config.h"

#include <algorithm>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace caesium::node {
namespace {

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == ':';
    if (!ok) return false;
  }
  return true;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

bool valid_node_id(std::string_view id) { return valid_name(id); }
bool valid_volume_name(std::string_view name) { return valid_name(name); }

int64_t default_priority(uint32_t cores, uint32_t memory_mb) {
  return int64_t{cores} * 1000 + int64_t{memory_mb} / 1024;
}

const VolumeSpec* ClusterConfig::volume(std::string_view name) const {
  auto it = std::lower_bound(volumes.begin(), volumes.end(), name,
                             [](const VolumeSpec& v, std::string_view n) { return v.name < n; });
  return it != volumes.end() && it->name == name ? &*it : nullptr;
}

const NodeSpec* ClusterConfig::node(std::string_view id) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                             [](const NodeSpec& n, std::string_view i) { return n.id < i; });
  return it != nodes.end() && it->id == id ? &*it : nullptr;
}

std::vector<std::string> ClusterConfig::volumes_of(std::string_view node) const {
  std::vector<std::string> out;
  for (const auto& v : volumes) {
    if (std::binary_search(v.replicas.begin(), v.replicas.end(), node) ||
        std::binary_search(v.previous_replicas.begin(), v.previous_replicas.end(), node)) {
      out.push_back(v.name);
    }
  }
  return out;
}

schedule::Topology ClusterConfig::topology() const {
  schedule::Topology t;
  t.epoch = epoch;
  for (const auto& v : volumes) t.volumes[v.name] = {v.replicas, v.previous_replicas, 0};
  for (const auto& n : nodes) t.node_tags[n.id] = n.tags;
  return t;
}

std::string ClusterConfig::encode() const {
  nlohmann::json j;
  j["epoch"] = epoch;
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : nodes) {
    nlohmann::json x;
    x["id"] = n.id;
    if (n.priority) x["priority"] = *n.priority;
    x["tags"] = n.tags;
    j["nodes"].push_back(std::move(x));
  }
  j["volumes"] = nlohmann::json::array();
  for (const auto& v : volumes) {
    nlohmann::json x;
    x["name"] = v.name;
    x["replicas"] = v.replicas;
    if (!v.previous_replicas.empty()) x["previous_replicas"] = v.previous_replicas;
    j["volumes"].push_back(std::move(x));
  }
  return j.dump();  // nlohmann's object keys are sorted: canonical
}

uint64_t ClusterConfig::fingerprint() const { return hash64(encode(), 0xc0f16); }

bool majorities_intersect(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  const auto shared = static_cast<int64_t>(common.size());
  const auto only_a = static_cast<int64_t>(a.size()) - shared, only_b = static_cast<int64_t>(b.size()) - shared;
  const auto majority_a = static_cast<int64_t>(a.size()) / 2 + 1, majority_b = static_cast<int64_t>(b.size()) / 2 + 1;
  // A majority of each that avoids the other as far as it can still takes this many of
  // the shared nodes; if the two together need more than there are, they meet.
  return std::max<int64_t>(0, majority_a - only_a) + std::max<int64_t>(0, majority_b - only_b) > shared;
}

namespace {

std::string list(const std::vector<std::string>& ids) {
  std::string out = "[";
  for (const auto& id : ids) out += (out.size() > 1 ? "," : "") + id;
  return out + "]";
}

std::vector<const std::vector<std::string>*> replica_sets(const VolumeSpec& v) {
  std::vector<const std::vector<std::string>*> out{&v.replicas};
  if (!v.previous_replicas.empty()) out.push_back(&v.previous_replicas);
  return out;
}

}  // namespace

Status check_config_replicas(const ClusterConfig& config) {
  for (const auto& v : config.volumes) {
    for (const auto* set : replica_sets(v)) {
      for (const auto& r : *set) {
        if (config.node(r) == nullptr) {
          return Error("cluster config: volume '" + v.name + "' names replica '" + r +
                           "', which is not one of the config's nodes",
                       set == &v.replicas ? "volumes.replicas" : "volumes.previous_replicas");
        }
      }
    }
  }
  return Status::success();
}

bool replica_sets_change(const ClusterConfig& current, const ClusterConfig& next) {
  for (const auto& v : next.volumes) {
    const VolumeSpec* old = current.volume(v.name);
    if (old != nullptr && (old->replicas != v.replicas || old->previous_replicas != v.previous_replicas)) return true;
  }
  return false;
}

Status check_config_change(const ClusterConfig& current, const ClusterConfig& next) {
  for (const auto& v : next.volumes) {
    const VolumeSpec* old = current.volume(v.name);
    if (old == nullptr) continue;  // a new volume: nothing fired under another set
    bool meets = false;
    for (const auto* a : replica_sets(*old)) {
      for (const auto* b : replica_sets(v)) meets = meets || majorities_intersect(*a, *b);
    }
    if (!meets) {
      return Error("cluster config: volume '" + v.name + "' would go from replicas " + list(old->replicas) +
                       (old->previous_replicas.empty() ? "" : " (previous " + list(old->previous_replicas) + ")") +
                       " to " + list(v.replicas) +
                       " in one step, so a majority of the old set and one of the new could miss each other and "
                       "an at-most-once occurrence could run twice while the change spreads; apply the new "
                       "replicas with previous_replicas = " + list(old->replicas) +
                       " first, and drop previous_replicas in a later epoch once every node holds that one",
                   "volumes.previous_replicas");
    }
  }
  return Status::success();
}

Result<ClusterConfig> normalize(ClusterConfig c) {
  std::set<std::string> ids;
  for (auto& n : c.nodes) {
    if (!valid_node_id(n.id)) {
      return Error("cluster config: node id '" + n.id + "' is not valid (1-128 of A-Z a-z 0-9 . _ - :)", "nodes.id");
    }
    if (!ids.insert(n.id).second) return Error("cluster config: node '" + n.id + "' is listed twice", "nodes.id");
    sort_unique(n.tags);
    for (const auto& t : n.tags) {
      if (t.empty() || t.size() > 128) return Error("cluster config: node '" + n.id + "' has an empty or too long tag", "nodes.tags");
    }
  }
  std::sort(c.nodes.begin(), c.nodes.end(), [](const NodeSpec& a, const NodeSpec& b) { return a.id < b.id; });
  std::set<std::string> names;
  for (auto& v : c.volumes) {
    if (!valid_volume_name(v.name)) {
      return Error("cluster config: volume name '" + v.name + "' is not valid (1-128 of A-Z a-z 0-9 . _ - :)", "volumes.name");
    }
    if (!names.insert(v.name).second) return Error("cluster config: volume '" + v.name + "' is listed twice", "volumes.name");
    sort_unique(v.replicas);
    sort_unique(v.previous_replicas);
    if (v.replicas.empty()) return Error("cluster config: volume '" + v.name + "' has no replicas", "volumes.replicas");
    for (const auto* list : {&v.replicas, &v.previous_replicas}) {
      for (const auto& r : *list) {
        if (!valid_node_id(r)) return Error("cluster config: volume '" + v.name + "' names invalid node id '" + r + "'", "volumes.replicas");
      }
    }
    if (v.previous_replicas == v.replicas) v.previous_replicas.clear();
  }
  std::sort(c.volumes.begin(), c.volumes.end(), [](const VolumeSpec& a, const VolumeSpec& b) { return a.name < b.name; });
  return c;
}

Result<ClusterConfig> decode_cluster_config(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error("cluster config: not a JSON object");
  ClusterConfig c;
  try {
    c.epoch = j.at("epoch").get<uint64_t>();
    for (const auto& x : j.at("nodes")) {
      NodeSpec n;
      n.id = x.at("id").get<std::string>();
      if (x.contains("priority")) n.priority = x.at("priority").get<int64_t>();
      if (x.contains("tags")) n.tags = x.at("tags").get<std::vector<std::string>>();
      c.nodes.push_back(std::move(n));
    }
    for (const auto& x : j.at("volumes")) {
      VolumeSpec v;
      v.name = x.at("name").get<std::string>();
      v.replicas = x.at("replicas").get<std::vector<std::string>>();
      if (x.contains("previous_replicas")) v.previous_replicas = x.at("previous_replicas").get<std::vector<std::string>>();
      c.volumes.push_back(std::move(v));
    }
  } catch (const nlohmann::json::exception& e) {
    return Error(std::string("cluster config: ") + e.what());
  }
  return normalize(std::move(c));
}

}  // namespace caesium::node
