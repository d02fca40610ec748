#include "gossip/master.h"

#include "gossip/membership.h"

namespace caesium::gossip {

bool outranks(const MasterCandidate& a, const MasterCandidate& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.id < b.id;
}

std::optional<std::string> choose_master(const std::vector<MasterCandidate>& candidates) {
  const MasterCandidate* best = nullptr;
  for (const auto& c : candidates) {
    if (!c.reachable) continue;
    if (best == nullptr || outranks(c, *best)) best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return best->id;
}

std::optional<std::string> master_of(const std::vector<std::string>& replica_ids, const Membership& view) {
  std::vector<MasterCandidate> candidates;
  candidates.reserve(replica_ids.size());
  for (const auto& id : replica_ids) {
    MasterCandidate c;
    c.id = id;
    if (id == view.self_id()) {
      c.reachable = true;
      c.priority = view.self_meta().priority;
    } else if (const MemberMeta* meta = view.meta_of(id); meta != nullptr && view.reachable(id)) {
      c.reachable = true;
      c.priority = meta->priority;
    }
    candidates.push_back(std::move(c));
  }
  return choose_master(candidates);
}

}  // namespace caesium::gossip
