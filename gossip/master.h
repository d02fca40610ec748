// The master rule (docs/design.md §1, §4): per volume and per connected component, the master
// is the reachable replica with the highest (priority, node id).
//
// Order: higher priority wins; among equal priorities the lexicographically *smaller*
// node id (byte-wise std::string comparison) wins.  Every node that sees the same
// reachable set with the same priorities therefore names the same master, with no
// election messages.  The node computing the rule always counts itself reachable, with
// its own current priority (its view of itself is authoritative, even before its latest
// meta has spread).
//
// This is a pure function of its inputs; it decides nothing about safety (claims with
// majorities do that, docs/design.md §6), only who should try to fire.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace caesium::gossip {

class Membership;

struct MasterCandidate {
  std::string id;
  bool reachable = false;
  int64_t priority = 0;
};

// True if `a` outranks `b` under the rule above (ignores reachability).
bool outranks(const MasterCandidate& a, const MasterCandidate& b);

// The best reachable candidate's id, or nullopt if none is reachable.  Duplicate ids are
// harmless (the same id is the same node).
std::optional<std::string> choose_master(const std::vector<MasterCandidate>& candidates);

// The rule applied to a membership view: replicas unknown to the view are unreachable,
// reachable = alive or suspect (Membership::reachable), priority from each member's meta;
// the view's own node is reachable with its own meta's priority.
std::optional<std::string> master_of(const std::vector<std::string>& replica_ids, const Membership& view);

}  // namespace caesium::gossip
