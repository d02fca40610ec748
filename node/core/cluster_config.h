// The cluster configuration (DESIGN.md §4): a versioned document naming the nodes
// (priority override, tags) and the volumes (replica sets).  Its epoch only grows; the
// highest epoch wins; two different documents with the same epoch are a conflict that
// is reported and never merged.  Encoded as canonical JSON (sorted, no whitespace), so
// its fingerprint is the same on every node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "schedule/scheduler.h"

namespace caesium::node {

struct NodeSpec {
  std::string id;
  std::optional<int64_t> priority;  // overrides the capacity-derived default
  std::vector<std::string> tags;    // sorted, unique
  bool operator==(const NodeSpec&) const = default;
};

struct VolumeSpec {
  std::string name;
  std::vector<std::string> replicas;           // sorted, unique
  std::vector<std::string> previous_replicas;  // non-empty while a replica change is in flight
  bool operator==(const VolumeSpec&) const = default;
};

struct ClusterConfig {
  uint64_t epoch = 0;
  std::vector<NodeSpec> nodes;      // sorted by id
  std::vector<VolumeSpec> volumes;  // sorted by name

  bool operator==(const ClusterConfig&) const = default;

  const VolumeSpec* volume(std::string_view name) const;
  const NodeSpec* node(std::string_view id) const;
  // Volumes `node` replicates (current or previous replica set).
  std::vector<std::string> volumes_of(std::string_view node) const;
  schedule::Topology topology() const;

  std::string encode() const;  // canonical JSON
  uint64_t fingerprint() const;
};

// Sorts and checks a config: names well-formed (volume and node ids: [A-Za-z0-9._:-],
// 1..128 bytes), no duplicates, every replica a listed node or at least a valid id,
// every volume with at least one replica.  Errors name the offending field.
Result<ClusterConfig> normalize(ClusterConfig config);
Result<ClusterConfig> decode_cluster_config(std::string_view json);

bool valid_node_id(std::string_view id);
bool valid_volume_name(std::string_view name);

// The default election priority from capacity: more cores and memory win.
int64_t default_priority(uint32_t cores, uint32_t memory_mb);

}  // namespace caesium::node
