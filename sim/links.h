// Who can send to whom: the partition state of the simulated network.
//
// Invariants:
//   - Every node has a group id; two nodes can exchange packets only if their groups are
//     equal.  A symmetric partition assigns the listed groups ids 1..k; every node not
//     listed stays in group 0, so the unlisted nodes form ONE group together
//     (`partition = [["n1"]]` isolates n1 from everyone else, who stay connected).
//   - `cut_` holds directed edges (a, b) on which a -> b is dropped.  A symmetric `cut`
//     adds both directions, a `oneway` only one.  Cuts are on top of groups, which is
//     how non-transitive partitions are made: A-C cut, A-B and B-C connected.
//   - A stream (TCP) needs both directions: it is usable iff can_send(a,b) and
//     can_send(b,a).  A one-way cut therefore breaks streams both ways.
//
// Cost: can_send is O(1) (a vector lookup, and a hash lookup only when cuts exist).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace caesium::sim {

class LinkState {
 public:
  explicit LinkState(size_t node_count = 0) : group_(node_count, 0) {}

  bool can_send(uint32_t from, uint32_t to) const {
    if (group_[from] != group_[to]) return false;
    return cut_.empty() || cut_.count(edge(from, to)) == 0;
  }
  bool stream_ok(uint32_t a, uint32_t b) const { return can_send(a, b) && can_send(b, a); }

  // Replaces the group partition (cuts stay).  Nodes not listed go to group 0.
  // REQUIRES: every index < node count; a node in at most one group.
  void partition(const std::vector<std::vector<uint32_t>>& groups);
  void cut(uint32_t a, uint32_t b) { cut_.insert(edge(a, b)); cut_.insert(edge(b, a)); }
  void oneway(uint32_t from, uint32_t to) { cut_.insert(edge(from, to)); }
  // Removes cuts between a and b in both directions (groups stay).
  void heal_pair(uint32_t a, uint32_t b) { cut_.erase(edge(a, b)); cut_.erase(edge(b, a)); }
  // Everyone can reach everyone.
  void heal_all();

  bool fully_connected() const;
  size_t node_count() const { return group_.size(); }

 private:
  static uint64_t edge(uint32_t from, uint32_t to) {
    return (static_cast<uint64_t>(from) << 32) | to;
  }
  std::vector<uint32_t> group_;
  std::unordered_set<uint64_t> cut_;  // lookups only; never iterated into output
};

// Every LinkState the run went through, with the time it took effect, so a checker
// can ask "were a and b connected during all of [from, to]?" after the fact.
// Partition changes are rare (tens per run), so a copy per change is cheap.
class LinkHistory {
 public:
  explicit LinkHistory(size_t node_count) { states_.push_back({0, LinkState(node_count)}); }

  const LinkState& current() const { return states_.back().second; }
  // Records a new state effective at time_ms (>= the last one's).
  void push(int64_t time_ms, LinkState state);
  // True iff a -> b and b -> a were both possible at every instant of [from_ms, to_ms].
  bool connected_throughout(uint32_t a, uint32_t b, int64_t from_ms, int64_t to_ms) const;
  // When the most recent change took effect (0 if none).
  int64_t last_change_ms() const { return states_.back().first; }

 private:
  std::vector<std::pair<int64_t, LinkState>> states_;  // time order
};

}  // namespace caesium::sim
