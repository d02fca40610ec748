// HashKeyedMap: a map from a 64-bit hash to a small trivially copyable value, for
// per-peer state looked up on every frame where sharing an entry on a hash collision is
// harmless or negligible (a send sequence number shared by two destinations only leaves
// gaps; a replay window shared by two senders needs a 2^-64 collision).  A slot is the
// key and the value, aligned to its size rounded up to a power of two, so a slot never
// straddles a cache line: 16 bytes for an 8-byte value, one 64-byte line for a replay
// window.
//
// Why not FlatStringMap<uint64_t>: its slot holds the hash, a flag, a std::string key and
// the value, 56 bytes.  At N = 1000 in the simulator a node's tables are never in cache
// when its next frame arrives, so the footprint is the cost: a 16-byte slot puts four
// peers in a cache line, and a node's table in 32 KB instead of 115 KB.
//
// The key is the hash itself (hash64 of the peer's id or address): two names with the
// same 64-bit hash share an entry.  Key 0 marks an empty slot, so a hash of 0 is stored
// as 1.  Linear probing, load at most 1/2, erase_if by backward shift (no tombstones).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/linear_probe.h"

namespace caesium {

template <class Value>
class HashKeyedMap {
  static_assert(std::is_trivially_copyable_v<Value> && sizeof(Value) <= 56);

 public:
  // nullptr if absent.  Valid until the next insertion.
  Value* find(uint64_t hash) {
    if (slots_.empty()) return nullptr;
    const uint64_t k = stored(hash);
    for (size_t i = k & mask(); slots_[i].key != 0; i = (i + 1) & mask()) {
      if (slots_[i].key == k) return &slots_[i].value;
    }
    return nullptr;
  }
  const Value* find(uint64_t hash) const { return const_cast<HashKeyedMap*>(this)->find(hash); }

  // The value for `hash`, value-initialized when it was absent.
  Value& get_or_insert(uint64_t hash) {
    const uint64_t k = stored(hash);
    if (!slots_.empty()) {
      size_t i = k & mask();
      for (; slots_[i].key != 0; i = (i + 1) & mask()) {
        if (slots_[i].key == k) return slots_[i].value;
      }
      if (2 * (size_ + 1) <= slots_.size()) return place(i, k);
    }
    grow();
    size_t i = k & mask();
    while (slots_[i].key != 0) i = (i + 1) & mask();
    return place(i, k);
  }

  // Removes every entry for which pred(value) is true, in place.  pred may be called
  // more than once for an entry it keeps (one that wraps from the table's start to its
  // end is seen twice), so it must be pure.
  template <class Pred>
  void erase_if(Pred pred) {
    for (size_t i = 0; i < slots_.size();) {
      if (slots_[i].key == 0 || !pred(slots_[i].value)) {
        ++i;
        continue;
      }
      // A later entry of the run may move into i: look at i again.
      size_t hole = i;
      for (size_t j = (i + 1) & mask(); slots_[j].key != 0; j = (j + 1) & mask()) {
        if (backshift_stays(hole, j, slots_[j].key & mask())) continue;
        slots_[hole] = slots_[j];
        hole = j;
      }
      slots_[hole] = Slot{};
      --size_;
    }
  }

  size_t size() const { return size_; }

 private:
  struct alignas(std::bit_ceil(sizeof(uint64_t) + sizeof(Value))) Slot {
    uint64_t key = 0;
    Value value{};
  };

  static uint64_t stored(uint64_t hash) { return hash == 0 ? 1 : hash; }
  size_t mask() const { return slots_.size() - 1; }

  Value& place(size_t i, uint64_t k) {
    slots_[i].key = k;
    slots_[i].value = Value{};
    ++size_;
    return slots_[i].value;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    for (const Slot& s : old) {
      if (s.key == 0) continue;
      size_t i = s.key & mask();
      while (slots_[i].key != 0) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace caesium
