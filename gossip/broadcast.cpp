#include "gossip/broadcast.h"

#include <cassert>
#include <utility>

#include "gossip/membership_wire_size.h"

namespace caesium::gossip {

const std::string& subject_of(const Update& update) {
  return std::visit([](const auto& u) -> const std::string& { return u.node; }, update);
}

bool BroadcastQueue::push(Update update) {
  const size_t bytes = estimated_wire_size(update);
  if (bytes > max_update_bytes_) return false;
  erase(subject_of(update));
  const Key key{0, next_order_++};
  const auto by = by_node_.emplace(subject_of(update), key).first;
  items_.emplace(key, Item{std::move(update), bytes, by});
  return true;
}

size_t BroadcastQueue::fill(size_t budget_bytes, int transmit_limit, std::vector<Update>& out) {
  assert(transmit_limit >= 1);
  // The smallest possible update: a Suspect or Dead with empty strings.
  static const size_t kMinUpdateBytes = estimated_wire_size(Update{Suspect{}});
  const auto limit = static_cast<uint32_t>(transmit_limit);

  taken_.clear();
  spent_.clear();
  size_t used = 0;
  int skips = 0;
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    const Key& key = it->first;
    const Item& item = it->second;
    if (budget_bytes - used < kMinUpdateBytes || skips > kMaxSkips) break;
    if (key.transmits >= limit) {
      spent_.push_back(it);
      continue;
    }
    if (item.bytes > budget_bytes - used) {
      ++skips;
      continue;
    }
    used += item.bytes;
    out.push_back(item.update);
    taken_.push_back(it);
  }

  for (const auto it : spent_) {
    by_node_.erase(it->second.by_node);
    items_.erase(it);
  }
  // Re-key each taken update with one more transmit, or drop it at the limit.  Items are
  // moved out of the map node by node; their push order stays, so ties still favour the
  // newest.
  for (const auto it : taken_) {
    auto node = items_.extract(it);
    const auto by = node.mapped().by_node;
    const uint32_t transmits = node.key().transmits + 1;
    if (transmits >= limit) {
      by_node_.erase(by);
      continue;
    }
    node.key().transmits = transmits;
    by->second = node.key();
    items_.insert(std::move(node));
  }
  return used;
}

void BroadcastQueue::erase(std::string_view node) {
  auto by = by_node_.find(node);
  if (by == by_node_.end()) return;
  items_.erase(by->second);
  by_node_.erase(by);
}

int BroadcastQueue::transmits_of(std::string_view node) const {
  auto by = by_node_.find(node);
  return by == by_node_.end() ? -1 : static_cast<int>(by->second.transmits);
}

void BroadcastQueue::check_invariants() const {
  assert(items_.size() == by_node_.size());
  for (const auto& [node, key] : by_node_) {
    auto it = items_.find(key);
    assert(it != items_.end());
    assert(subject_of(it->second.update) == node);
    assert(it->second.by_node->first == node);
    assert(it->second.bytes <= max_update_bytes_);
    (void)it;
  }
}

}  // namespace caesium::gossip
