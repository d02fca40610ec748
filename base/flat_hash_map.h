// FlatHashMap: a hash map whose keys and values live inline in one open-addressing
// table, for the per-peer state looked up on every frame (send sequence numbers, last
// heard, replay windows).
//
// Why not std::unordered_map: a simulator runs a thousand nodes, each with a table per
// peer, and none of it is in cache when a node's next frame arrives.  A node-based table
// costs a miss for the bucket, one for the node and often one for the key; here a lookup
// reads the home slot, which holds the full 64-bit hash, the key and the value.
//
// Hash and Eq are transparent: they take the stored Key and any lookup type K for which
// `Key(k)` builds the stored key (std::string from std::string_view, say).  Hash returns
// a uint64_t.
//
// Invariants:
//   - slots_.size() is zero or a power of two, and size_ <= slots_.size() / 2;
//   - linear probing without tombstones: every entry sits in the run of occupied slots
//     that starts at its home slot (hash & mask).  erase_if removes entries in place
//     with backward-shift deletion (Knuth's algorithm R), which keeps that true.
// Iteration order depends on hashes: callers must not let it reach any output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/linear_probe.h"
#include "base/hash.h"

namespace caesium {

template <class Key, class Value, class Hash, class Eq>
class FlatHashMap {
 public:
  // nullptr if absent.  The pointer is valid until the next insertion or erasure.
  template <class K>
  Value* find(const K& key) {
    return find_hashed(key, Hash{}(key));
  }
  template <class K>
  const Value* find(const K& key) const {
    return const_cast<FlatHashMap*>(this)->find(key);
  }

  // The value for `key`, value-initialized when it was absent.
  template <class K>
  Value& get_or_insert(const K& key) {
    const uint64_t h = Hash{}(key);
    if (Value* v = find_hashed(key, h)) return *v;
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot& s = slots_[free_slot(h)];
    s.hash = h;
    s.used = true;
    s.key = Key(key);
    s.value = Value{};
    ++size_;
    return s.value;
  }

  // Removes every entry for which pred(key, value) is true.  O(capacity), in place: no
  // allocation, and the slots are read once (rebuilding the table instead wrote a fresh
  // copy of it, hundreds of KB per node at N = 1000, on every replay-guard sweep).
  // pred may be called more than once for an entry it keeps, so it must be pure.
  template <class Pred>
  void erase_if(Pred pred) {
    for (size_t i = 0; i < slots_.size();) {
      if (slots_[i].used && pred(slots_[i].key, slots_[i].value)) {
        erase_slot(i);  // a later entry of the run may have moved into i: look again
      } else {
        ++i;
      }
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    bool used = false;
    Key key{};
    Value value{};
  };

  size_t mask() const { return slots_.size() - 1; }

  template <class K>
  Value* find_hashed(const K& key, uint64_t h) {
    if (slots_.empty()) return nullptr;
    for (size_t i = h & mask(); slots_[i].used; i = (i + 1) & mask()) {
      if (slots_[i].hash == h && Eq{}(slots_[i].key, key)) return &slots_[i].value;
    }
    return nullptr;
  }

  // Empties slot i and shifts back each later entry of its run that may live in the
  // hole: one whose home slot is not cyclically in (hole, j].  Entries only move to
  // slots cyclically before them, so erase_if's forward scan sees every entry it has
  // not yet seen (one that wraps from the table's start to its end is seen twice).
  void erase_slot(size_t i) {
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); slots_[j].used; j = (j + 1) & mask()) {
      const size_t home = slots_[j].hash & mask();
      const bool stays = backshift_stays(hole, j, home);
      if (stays) continue;
      slots_[hole] = std::move(slots_[j]);
      hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
  }

  size_t free_slot(uint64_t h) const {
    size_t i = h & mask();
    while (slots_[i].used) i = (i + 1) & mask();
    return i;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    for (Slot& s : old) {
      if (s.used) slots_[free_slot(s.hash)] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

struct StringViewHash {
  uint64_t operator()(std::string_view s) const { return hash64(s); }
};
struct StringViewEq {
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};
// Keyed by std::string, looked up by std::string_view without building a string.
template <class Value>
using FlatStringMap = FlatHashMap<std::string, Value, StringViewHash, StringViewEq>;

}  // namespace caesium
