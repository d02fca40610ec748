// The cluster configuration (docs/design.md §4): a versioned document naming the nodes
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

// Whether `next` may follow `current` in one step (docs/design.md §4, docs/api.md#cluster-config).
// At-most-once claims need a majority of each replica set a node's config names (the
// replicas, and the previous replicas during a change).  While `next` spreads, some
// nodes claim under `current` and others under `next`, so for every volume in both some
// set of `current` and some set of `next` must be such that any majority of one meets
// any majority of the other.  Adding or removing one replica passes; replacing one, or
// adding two, does not: it must go through an epoch that lists the old set as
// previous_replicas.  (Entries bound to some of the replicas are not considered: their
// majorities are among fewer nodes.)
Status check_config_change(const ClusterConfig& current, const ClusterConfig& next);
// Every replica (and previous replica) of every volume is one of the config's nodes.
Status check_config_replicas(const ClusterConfig& config);
// Whether some volume's replica sets differ between the two (added and removed volumes
// do not count).
bool replica_sets_change(const ClusterConfig& current, const ClusterConfig& next);
// Any majority of `a` and any majority of `b` (both sorted, unique) share a node.
bool majorities_intersect(const std::vector<std::string>& a, const std::vector<std::string>& b);

bool valid_node_id(std::string_view id);
bool valid_volume_name(std::string_view name);

// The default election priority from capacity: more cores and memory win.
int64_t default_priority(uint32_t cores, uint32_t memory_mb);

}  // namespace caesium::node
