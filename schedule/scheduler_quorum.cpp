// Scheduler: who is eligible, what a majority is, who is alive, and which worker runs an
// attempt.  The quorum denominator is always the configured eligible set (of both sets
// during a replica change), never the live view: otherwise both sides of a partition
// would each believe they hold a majority (docs/design.md §4).
#include <algorithm>
#include <cassert>

#include "base/hash.h"
#include "schedule/scheduler.h"

namespace caesium::schedule {
namespace {

size_t count_in(const std::set<std::string>& votes, const std::vector<std::string>& set) {
  size_t n = 0;
  for (const auto& node : set) n += votes.count(node);
  return n;
}

}  // namespace

bool Scheduler::node_matches_binding(const std::string& node, const Entry& e) const {
  if (e.bind.empty()) return true;
  for (const auto& b : e.bind) {
    if (b.rfind("tag:", 0) == 0) {
      auto it = topology_.node_tags.find(node);
      if (it == topology_.node_tags.end()) continue;
      const std::string tag = b.substr(4);
      if (std::binary_search(it->second.begin(), it->second.end(), tag)) return true;
    } else if (b == node) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> Scheduler::bound_to(const std::vector<std::string>& nodes, const Entry& e) const {
  std::vector<std::string> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) {
    if (node_matches_binding(n, e)) out.push_back(n);
  }
  return out;
}

Scheduler::Borrowed<std::vector<std::string>> Scheduler::eligible(const std::string& volume, const Entry& e) const {
  auto it = topology_.volumes.find(volume);
  if (it == topology_.volumes.end()) return Borrowed<std::vector<std::string>>(std::vector<std::string>{});
  if (e.bind.empty()) return Borrowed<std::vector<std::string>>(&it->second.replicas);
  return Borrowed<std::vector<std::string>>(bound_to(it->second.replicas, e));
}

// The sets a claim needs a majority of: the eligible set, and during a replica change
// also the eligible set of the previous configuration (joint consensus).
Scheduler::QuorumSets Scheduler::make_quorum_sets(const Topology::Volume* v, const Entry& e) const {
  QuorumSets sets;
  sets.push_back(v != nullptr ? bound_to(v->replicas, e) : std::vector<std::string>{});
  if (v != nullptr && !v->previous_replicas.empty()) {
    std::vector<std::string> prev = bound_to(v->previous_replicas, e);
    if (!prev.empty()) sets.push_back(std::move(prev));
  }
  return sets;
}

// An entry without a binding borrows its volume's sets, made once at set_topology.
Scheduler::Borrowed<Scheduler::QuorumSets> Scheduler::quorum_sets(const std::string& volume, const Entry& e) const {
  if (e.bind.empty()) {
    if (auto cached = volume_quorum_sets_.find(volume); cached != volume_quorum_sets_.end()) {
      return Borrowed<QuorumSets>(&cached->second);
    }
  }
  auto it = topology_.volumes.find(volume);
  return Borrowed<QuorumSets>(make_quorum_sets(it != topology_.volumes.end() ? &it->second : nullptr, e));
}

bool Scheduler::has_majority(const std::set<std::string>& votes, const std::string& volume, const Entry& e) const {
  return majority_of_each(votes, *quorum_sets(volume, e));
}

bool Scheduler::majority_of_each(const std::set<std::string>& votes, const QuorumSets& sets) {
  if (sets.empty()) return false;
  for (const auto& set : sets) {
    if (set.empty() || count_in(votes, set) * 2 <= set.size()) return false;
  }
  return true;
}

bool Scheduler::quorum_reachable(const std::string& volume, const Entry& e) const {
  std::set<std::string> reach;
  const auto quorum = quorum_sets(volume, e);
  for (const auto& set : *quorum) {
    for (const auto& n : set) {
      if (host_.peer(n).reachable) reach.insert(n);
    }
  }
  return has_majority(reach, volume, e);
}

bool Scheduler::no_majority_left(const std::set<std::string>& out, const QuorumSets& sets) {
  for (const auto& set : sets) {
    if ((set.size() - count_in(out, set)) * 2 <= set.size()) return true;
  }
  return false;
}

bool Scheduler::majority_impossible(const Occ& o, const firing::Ballot& b, const Entry& e, bool unreachable_lost,
                                    bool silent_lost) const {
  const auto quorum = quorum_sets(o.volume, e);
  for (const auto& set : *quorum) {
    size_t possible = set.size() - count_in(b.refused, set);
    if (unreachable_lost || silent_lost) {
      for (const auto& n : set) {
        if (b.refused.count(n) || b.answered.count(n) || n == self_.node) continue;
        if (silent_lost || !host_.peer(n).reachable) --possible;
      }
    }
    if (possible * 2 <= set.size()) return true;
  }
  return false;
}

bool Scheduler::holds_half(const Occ& o, const firing::Ballot& b, const Entry& e) const {
  const auto quorum = quorum_sets(o.volume, e);
  for (const auto& set : *quorum) {
    if (!set.empty() && 2 * count_in(b.granted, set) >= set.size()) return true;
  }
  return false;
}

// Whether the process is alive in our view.  boot == 0 means "whatever process runs on
// that node now" (a worker, which is named by node only).
bool Scheduler::alive_in(const PeerView& p, const ProcessId& owner) {
  return p.reachable && (p.boot == 0 || owner.boot == 0 || p.boot == owner.boot);
}

bool Scheduler::owner_alive(const ProcessId& owner) const {
  if (owner.node == self_.node) return owner.boot == 0 || owner.boot == self_.boot;
  return alive_in(host_.peer(owner.node), owner);
}

bool Scheduler::owner_gone(const ProcessId& owner) const {
  if (owner.node == self_.node) return !owner_alive(owner);
  const PeerView p = host_.peer(owner.node);
  return !alive_in(p, owner) || (p.suspect && p.silent_ms >= options_.owner_silence_ms);
}

int64_t Scheduler::owner_gone_at(const ProcessId& owner, Clock now) const {
  if (owner.node == self_.node) return kNever;
  const PeerView p = host_.peer(owner.node);
  if (!p.suspect || p.silent_ms == kNever) return kNever;
  return now.mono_ms + std::max<int64_t>(0, options_.owner_silence_ms - p.silent_ms) + 1;
}

constexpr int64_t kAssignHalfLifeMs = 1'000;

// Halves a.count once per half-life elapsed since a.since_mono_ms, and moves since_mono_ms
// on by those whole half-lives (so a steady trickle of assignments still decays).
void Scheduler::Assigned::decay(int64_t now_mono_ms) {
  const int64_t halvings = std::max<int64_t>(0, (now_mono_ms - since_mono_ms) / kAssignHalfLifeMs);
  if (halvings >= 63) {
    count = 0;
    since_mono_ms = now_mono_ms;
    return;
  }
  count >>= halvings;
  since_mono_ms += halvings * kAssignHalfLifeMs;
}

uint64_t Scheduler::recent_assignments(const std::string& worker, int64_t now_mono_ms) const {
  auto it = assigned_.find(worker);
  if (it == assigned_.end()) return 0;
  Assigned a = it->second;
  a.decay(now_mono_ms);
  return a.count;
}

// Least loaded reachable eligible replica; the origin when the entry prefers it and it
// can run there.  Load = what the worker reports (running + queued; live for this node,
// gossiped for the others) + attempts this owner has in flight there + attempts it
// assigned there lately.  Preference classes, best first: heard from directly and
// recently; alive in the view (perhaps only through relays: a non-transitive link may eat
// the dispatch); suspect (probably dead).  Ties are broken by a hash of (occurrence,
// node) so that work spreads instead of piling onto the lexically first node.
std::optional<std::string> Scheduler::choose_worker(const Occ& o, const Entry& e,
                                                    const std::set<std::string>& exclude, Clock now) {
  const auto eligible_set = eligible(o.volume, e);
  const std::vector<std::string>& candidates = *eligible_set;
  std::optional<std::string> best;
  // A worker that refused a dispatch "busy" (at a running cap) a moment ago.
  auto refused_busy = [&](const std::string& n) {
    auto b = busy_until_mono_.find(n);
    return b != busy_until_mono_.end() && b->second > now.mono_ms;
  };
  if (e.prefer_origin && !e.origin.empty() && !exclude.count(e.origin) && !refused_busy(e.origin) &&
      std::binary_search(candidates.begin(), candidates.end(), e.origin) && host_.peer(e.origin).reachable) {
    best = e.origin;
  } else {
    auto rank = [](const PeerView& p) { return p.suspect ? 2 : p.direct ? 0 : 1; };
    int best_rank = 3;
    uint64_t best_score = UINT64_MAX, best_tie = 0;
    for (const auto& n : candidates) {
      if (exclude.count(n) || refused_busy(n)) continue;
      const PeerView p = host_.peer(n);
      if (!p.reachable) continue;
      const int r = rank(p);
      if (r > best_rank) continue;
      auto out = outstanding_.find(n);
      const uint64_t busy = uint64_t{p.load} + (out == outstanding_.end() ? 0 : out->second) +
                            recent_assignments(n, now.mono_ms);
      const uint64_t score = busy * 1024 / std::max<uint64_t>(1, p.slots);
      const uint64_t tie =
          hash_combine(hash64(n), static_cast<uint64_t>(o.id.scheduled_utc_ms) ^ hash64(o.id.entry_key));
      if (r < best_rank || score < best_score || (score == best_score && tie < best_tie)) {
        best_rank = r;
        best = n;
        best_score = score;
        best_tie = tie;
      }
    }
  }
  if (best) {
    Assigned& a = assigned_.try_emplace(*best, Assigned{0, now.mono_ms}).first->second;
    a.decay(now.mono_ms);
    ++a.count;
  }
  return best;
}

}  // namespace caesium::schedule
