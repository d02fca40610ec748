// SlotIndex: a hash index of 32-bit ids (slots of a caller's array), found by a key the
// caller derives from the id.  4 bytes per cell and at most 3/4 of the cells in use, so
// ~5.5-11 bytes per id, against ~40 for a std::unordered_set<uint32_t> (a 32-byte node
// per id plus its bucket).  The scheduler indexes millions of entries with it.
//
// The index stores neither keys nor hashes: the caller keeps a 32-bit tag of each id's
// key hash in its own record (SlotIndex::tag), hands it in on every call, and answers
// two questions about an id: is_match(id) (is this the key looked up? — compare the
// stored tag first, so the key itself is read about once per successful lookup) and
// tag_of(id) (to move ids when the table grows or an erase closes a gap).
//
// Invariants:
//   - cells_.size() is zero or a power of two >= 8, and 4 * size_ <= 3 * cells_.size();
//   - a cell holds id + 1, or 0 when empty; linear probing: an id sits in the run of
//     occupied cells that starts at its home cell, home(tag_of(id)); erasure shifts
//     later cells of the run back (no tombstones);
//   - an id appears at most once (the caller inserts only ids it did not find).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/linear_probe.h"

namespace caesium {

class SlotIndex {
 public:
  // The tag the caller stores for a key with this hash.
  static uint32_t tag(uint64_t hash) { return static_cast<uint32_t>(hash ^ (hash >> 32)); }

  // The id stored under `tag` for which is_match(id) holds; nullopt if none.
  template <class Match>
  std::optional<uint32_t> find(uint32_t tag, Match&& is_match) const {
    if (cells_.empty()) return std::nullopt;
    for (size_t i = home(tag); cells_[i] != 0; i = (i + 1) & mask()) {
      if (is_match(cells_[i] - 1)) return cells_[i] - 1;
    }
    return std::nullopt;
  }

  // REQUIRES: `id` (< 2^32 - 1) is not in the index, and tag_of(id) == tag.
  template <class TagOf>
  void insert(uint32_t tag, uint32_t id, TagOf&& tag_of) {
    assert(id != UINT32_MAX);
    if (4 * (size_ + 1) > 3 * cells_.size()) grow(tag_of);
    size_t i = home(tag);
    while (cells_[i] != 0) i = (i + 1) & mask();
    cells_[i] = id + 1;
    ++size_;
  }

  // Removes `id`, inserted under `tag`.  Returns whether it was there.
  template <class TagOf>
  bool erase(uint32_t tag, uint32_t id, TagOf&& tag_of) {
    if (cells_.empty()) return false;
    size_t i = home(tag);
    while (cells_[i] != id + 1) {
      if (cells_[i] == 0) return false;
      i = (i + 1) & mask();
    }
    // Backward-shift deletion: move each later cell of the run whose home does not lie
    // in (hole, cell] into the hole, so every id stays reachable from its home.
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); cells_[j] != 0; j = (j + 1) & mask()) {
      const size_t h = home(tag_of(cells_[j] - 1));
      const bool stays = backshift_stays(hole, j, h);
      if (stays) continue;
      cells_[hole] = cells_[j];
      hole = j;
    }
    cells_[hole] = 0;
    --size_;
    return true;
  }

  template <class F>
  void for_each(F&& fn) const {
    for (uint32_t c : cells_) {
      if (c != 0) fn(c - 1);
    }
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return cells_.capacity() * sizeof(uint32_t); }

 private:
  size_t mask() const { return cells_.size() - 1; }
  // Fibonacci hashing of the tag onto the table: the top bits of the product.
  size_t home(uint32_t t) const { return static_cast<size_t>((uint64_t{t} * 0x9E3779B97F4A7C15ull) >> shift_); }

  template <class TagOf>
  void grow(TagOf& tag_of) {
    std::vector<uint32_t> old = std::move(cells_);
    const size_t n = old.empty() ? 8 : 2 * old.size();
    cells_.assign(n, 0);
    shift_ = 64;
    for (size_t s = n; s > 1; s >>= 1) --shift_;
    for (uint32_t c : old) {
      if (c == 0) continue;
      size_t i = home(tag_of(c - 1));
      while (cells_[i] != 0) i = (i + 1) & mask();
      cells_[i] = c;
    }
  }

  std::vector<uint32_t> cells_;
  size_t size_ = 0;
  unsigned shift_ = 64;
};

}  // namespace caesium
