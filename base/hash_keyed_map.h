// HashKeyedMap: a map from a 64-bit hash to an 8-byte value, 16 bytes a slot, for
// per-peer counters looked up on every frame where sharing a slot on a hash collision
// is harmless (a send sequence number shared by two destinations only leaves gaps).
//
// Why not FlatStringMap<uint64_t>: its slot holds the hash, a flag, a std::string key and
// the value, 56 bytes.  At N = 1000 in the simulator a node's tables are never in cache
// when its next frame arrives, so the footprint is the cost: a 16-byte slot puts four
// peers in a cache line, and a node's table in 32 KB instead of 115 KB.
//
// The key is the hash itself (hash64 of the peer's id or address): two names with the
// same 64-bit hash share an entry.  Key 0 marks an empty slot, so a hash of 0 is stored
// as 1.  Linear probing, load at most 1/2, no erasure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace caesium {

template <class Value>
class HashKeyedMap {
  static_assert(std::is_trivially_copyable_v<Value> && sizeof(Value) <= 8);

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

  size_t size() const { return size_; }

 private:
  struct Slot {
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
