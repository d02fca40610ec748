// What a simulated cluster is made of, and how processes are created for it.
//
// A process factory gets a ProcessContext: the whole cluster config (so a process knows
// its seeds, peers' addresses, priorities and volumes), which node it is, a seed for its
// own Rng (derived from the run's seed, so runs replay), and the scenario's
// [node_options] table untouched (the factory interprets it; the simulator does not).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "base/flat_hash_map.h"
#include "sim/process.h"

namespace caesium::sim {

struct NodeSpec {
  std::string id;
  std::string gossip_addr;  // datagrams are routed by this (opaque to the simulator)
  std::string stream_addr;  // stream frames are routed by this
  int64_t priority = 0;     // 0 = not set in the scenario (the node computes its default)
  std::vector<std::string> tags;  // sorted
};

struct VolumeSpec {
  std::string name;
  std::vector<std::string> replicas;  // node ids, in scenario order
};

struct ClusterSpec {
  std::vector<NodeSpec> nodes;  // index = node number in the simulator
  std::vector<VolumeSpec> volumes;
  // Every node starts holding all the others alive (as after a converged join) instead
  // of joining through seeds: steady-state figures without the join storm.  A node that
  // restarts later joins through seeds as usual.
  bool start_joined = false;
};

// Address -> node index, built once per World and shared by every process it creates
// (so a thousand processes do not each build their own maps).  Lookups only.
struct AddressBook {
  using Map = FlatStringMap<uint32_t>;  // one probe per lookup: looked up on every frame sent
  Map by_gossip, by_stream, by_id;

  explicit AddressBook(const ClusterSpec& cluster) {
    for (uint32_t i = 0; i < cluster.nodes.size(); ++i) {
      // The first node of a duplicated address or id keeps it (as emplace did).
      if (by_gossip.find(cluster.nodes[i].gossip_addr) == nullptr) by_gossip.get_or_insert(cluster.nodes[i].gossip_addr) = i;
      if (by_stream.find(cluster.nodes[i].stream_addr) == nullptr) by_stream.get_or_insert(cluster.nodes[i].stream_addr) = i;
      if (by_id.find(cluster.nodes[i].id) == nullptr) by_id.get_or_insert(cluster.nodes[i].id) = i;
    }
  }
  // Node index, or -1 when unknown.
  static int64_t find(const Map& map, std::string_view key) {
    const uint32_t* i = map.find(key);
    return i == nullptr ? -1 : static_cast<int64_t>(*i);
  }
};

struct ProcessContext {
  const ClusterSpec* cluster = nullptr;
  uint32_t self = 0;  // index into cluster->nodes
  uint64_t seed = 0;  // for the process's own Rng; differs per node and per restart
  uint32_t incarnation = 0;  // 0 on first start, +1 on every restart
  const toml::table* node_options = nullptr;  // never null; may be empty
  const AddressBook* addresses = nullptr;     // never null

  const NodeSpec& spec() const { return cluster->nodes[self]; }
};

// Creates the process for one node (first start and every restart).  Never returns null.
using ProcessFactory = std::function<std::unique_ptr<Process>(const ProcessContext&)>;

}  // namespace caesium::sim
