// IdIndex: lookups by node id into records that live elsewhere (membership's sorted
// member map), as an open-addressing hash table.
//
// Why not std::unordered_map<std::string_view, Entry*>: every datagram applies several
// updates and each looks its member up.  With a thousand members per node and a thousand
// nodes in one simulator, none of it is in cache, and a node-based table costs a miss for
// the bucket, one for the list node and one for the key it views.  Here a lookup reads
// one slot (the full 64-bit hash and the entry pointer) and then the entry itself, which
// the caller wanted anyway; the key is compared only when the hashes match.
//
// Invariants:
//   - slots_.size() is zero or a power of two, and size_ <= slots_.size() / 2;
//   - linear probing without tombstones: every entry sits in the run of occupied slots
//     that starts at its home slot (hash & mask), and erase() shifts later entries of the
//     run back (Knuth's algorithm R) so that stays true.
// Each slot also carries one caller-defined mark (membership: "not alive"), so a question
// that only matters for marked entries is answered from the slot without reading the
// entry: at N = 1000 every Ping asks whether its sender is suspect or dead.  The mark is
// bit 63 of the stored hash; the home slot and comparisons use the other 63 bits.
// The table is never iterated, so its layout cannot reach any output.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/linear_probe.h"
#include "base/hash.h"

namespace caesium::gossip {

// Entry: any type whose `first` member is the id (a std::map value_type); entries must
// not move while indexed.
template <class Entry>
class IdIndex {
 public:
  // nullptr if no entry has this id.
  Entry* find(std::string_view id) const {
    const Slot* s = find_slot(id);
    return s == nullptr ? nullptr : s->entry;
  }

  // Sets the mark of the entry with this id.  REQUIRES: it is indexed.
  void set_mark(std::string_view id, bool mark) {
    Slot* s = const_cast<Slot*>(find_slot(id));
    assert(s != nullptr);
    s->hash = (s->hash & kHashBits) | (mark ? kMarkBit : 0);
  }

  // Whether the entry with this id is marked; false if absent.  Compares hashes only,
  // never reading an entry: an unmarked entry whose 63-bit hash collides with `id`'s can
  // hide a marked one (2^-63 per pair), so use it only where a wrong "false" is harmless.
  bool maybe_marked(std::string_view id) const {
    if (slots_.empty()) return false;
    const uint64_t h = hash64(id) & kHashBits;
    for (size_t i = h & mask(); slots_[i].entry != nullptr; i = (i + 1) & mask()) {
      if ((slots_[i].hash & kHashBits) == h) return (slots_[i].hash & kMarkBit) != 0;
    }
    return false;
  }

  // REQUIRES: no entry with entry->first is indexed.
  void insert(Entry* entry) {
    assert(entry != nullptr);
    assert(find(entry->first) == nullptr);
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(Slot{hash64(entry->first) & kHashBits, entry});
    ++size_;
  }

  // Removes the entry with this id, if any.
  void erase(std::string_view id) {
    if (slots_.empty()) return;
    const uint64_t h = hash64(id) & kHashBits;
    size_t i = h & mask();
    while (slots_[i].entry != nullptr && !((slots_[i].hash & kHashBits) == h && slots_[i].entry->first == id)) i = (i + 1) & mask();
    if (slots_[i].entry == nullptr) return;
    // Shift back each later member of the run that may live in the hole: one whose home
    // slot is not cyclically in (hole, j].
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); slots_[j].entry != nullptr; j = (j + 1) & mask()) {
      const size_t home = slots_[j].hash & mask();
      const bool stays = backshift_stays(hole, j, home);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kMarkBit = uint64_t{1} << 63;
  static constexpr uint64_t kHashBits = ~kMarkBit;
  struct Slot {
    uint64_t hash = 0;       // bits 0..62: hash64(id); bit 63: the mark
    Entry* entry = nullptr;  // nullptr: empty
  };

  const Slot* find_slot(std::string_view id) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hash64(id) & kHashBits;
    for (size_t i = h & mask(); slots_[i].entry != nullptr; i = (i + 1) & mask()) {
      if ((slots_[i].hash & kHashBits) == h && slots_[i].entry->first == id) return &slots_[i];
    }
    return nullptr;
  }

  size_t mask() const { return slots_.size() - 1; }

  void place(Slot slot) {
    size_t i = slot.hash & mask();
    while (slots_[i].entry != nullptr) i = (i + 1) & mask();
    slots_[i] = slot;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    for (const Slot& s : old) {
      if (s.entry != nullptr) place(s);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace caesium::gossip
