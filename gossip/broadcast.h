// BroadcastQueue: the dissemination buffer of SWIM §4.1 ("a buffer of recent membership
// updates, along with a local count for each buffer element").
//
// Every outgoing datagram piggybacks as many queued updates as fit in its byte budget.
// Each update goes out at most `transmit_limit` times (retransmit_mult * ceil(log10(n+1)),
// computed by the caller from the current cluster size), then leaves the queue.
//
// Invariants:
//   - at most one queued update per member: queuing news about a member replaces whatever
//     was queued about it (the caller only queues updates it has just applied, so the
//     newer one always wins; the replaced one would only spread stale news);
//   - selection order is fewest transmits first, and among equals newest first, so fresh
//     news overtakes news that most members already have;
//   - every queued update fits alone in a datagram (max_update_bytes); bigger ones are
//     refused at push, since they could never be sent and would sit in the queue forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/messages.h"

namespace caesium::gossip {

// The member an update is about.
const std::string& subject_of(const Update& update);

class BroadcastQueue {
 public:
  // `max_update_bytes`: the estimated size (estimated_wire_size) an update may have and
  // still fit in a datagram with the smallest primary message.
  explicit BroadcastQueue(size_t max_update_bytes) : max_update_bytes_(max_update_bytes) {}

  // Queues `update` with zero transmits, replacing any update queued about the same
  // member.  Returns false (and queues nothing) if it is larger than max_update_bytes.
  bool push(Update update);

  // Appends queued updates to `out` in selection order while their estimated sizes fit in
  // `budget_bytes`, skipping those that do not fit.  Each appended update's transmit count
  // goes up by one; an update that reaches `transmit_limit` leaves the queue.  Returns the
  // estimated bytes appended.  REQUIRES: transmit_limit >= 1.
  //
  // Cost: O(taken · log q) plus at most kMaxSkips skipped candidates, so a queue full of
  // large updates cannot make every packet scan the whole queue.
  size_t fill(size_t budget_bytes, int transmit_limit, std::vector<Update>& out);

  // Removes whatever is queued about `node` (e.g. a member that was reaped).
  void erase(std::string_view node);

  bool contains(std::string_view node) const { return by_node_.find(node) != by_node_.end(); }
  // The number of transmits of the update queued about `node`; -1 if none.
  int transmits_of(std::string_view node) const;
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }

  void check_invariants() const;

  static constexpr int kMaxSkips = 64;

 private:
  struct Key {
    uint32_t transmits = 0;
    uint64_t order = 0;  // push order; larger is newer
  };
  struct KeyLess {
    bool operator()(const Key& a, const Key& b) const {
      if (a.transmits != b.transmits) return a.transmits < b.transmits;
      return a.order > b.order;
    }
  };
  using ByNode = std::map<std::string, Key, std::less<>>;
  struct Item {
    Update update;
    size_t bytes = 0;
    ByNode::iterator by_node;  // this item's entry in by_node_, so fill() needs no search
  };
  using Items = std::map<Key, Item, KeyLess>;

  size_t max_update_bytes_;
  uint64_t next_order_ = 0;
  Items items_;
  ByNode by_node_;
  // fill()'s scratch lists, kept to save two allocations per datagram.
  std::vector<Items::iterator> taken_;
  std::vector<Items::iterator> spent_;
};

}  // namespace caesium::gossip
