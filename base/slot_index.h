// SlotIndex: a hash index of 32-bit ids (slots of a caller's array), found by a key the
// caller derives from the id.  8 bytes per cell and at most 3/4 of the cells in use, so
// ~11-21 bytes per id, against ~40 for a std::unordered_set<uint32_t> (a 32-byte node per
// id plus its bucket).  The scheduler indexes millions of entries with it.
//
// The index stores no keys.  Each cell holds a 32-bit tag of the key's hash and the id;
// a lookup compares tags and asks the caller to confirm a candidate id only when its tag
// matches, so a confirmation (which reads the caller's record, a cache miss) happens about
// once per successful lookup.  The home cell is derived from the tag, so growing needs no
// keys either.
//
// Invariants:
//   - cells_.size() is zero or a power of two >= 8, and 4 * size_ <= 3 * cells_.size();
//   - linear probing; an id sits in the run of occupied cells that starts at its home
//     cell (home(tag)); erasure shifts later cells of the run back (no tombstones);
//   - an id appears at most once (the caller inserts only ids it did not find).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace caesium {

class SlotIndex {
 public:
  // The id whose key has hash `hash` and for which is_match(id) holds; nullopt if none.
  template <class Match>
  std::optional<uint32_t> find(uint64_t hash, Match&& is_match) const {
    if (cells_.empty()) return std::nullopt;
    const uint32_t t = tag(hash);
    for (size_t i = home(t); cells_[i] != 0; i = (i + 1) & mask()) {
      if (cell_tag(cells_[i]) == t && is_match(cell_id(cells_[i]))) return cell_id(cells_[i]);
    }
    return std::nullopt;
  }

  // REQUIRES: no id with an equal key is in the index; id < 2^32 - 1.
  void insert(uint64_t hash, uint32_t id) {
    assert(id != UINT32_MAX);
    if (4 * (size_ + 1) > 3 * cells_.size()) grow();
    const uint32_t t = tag(hash);
    size_t i = home(t);
    while (cells_[i] != 0) i = (i + 1) & mask();
    cells_[i] = make_cell(t, id);
    ++size_;
  }

  // Removes `id`, inserted with `hash`.  Returns whether it was there.
  bool erase(uint64_t hash, uint32_t id) {
    if (cells_.empty()) return false;
    const uint64_t want = make_cell(tag(hash), id);
    size_t i = home(tag(hash));
    while (cells_[i] != want) {
      if (cells_[i] == 0) return false;
      i = (i + 1) & mask();
    }
    // Backward-shift deletion: move each later cell of the run whose home does not lie
    // in (hole, cell] into the hole, so every id stays reachable from its home.
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); cells_[j] != 0; j = (j + 1) & mask()) {
      const size_t h = home(cell_tag(cells_[j]));
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
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
    for (uint64_t c : cells_) {
      if (c != 0) fn(cell_id(c));
    }
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return cells_.capacity() * sizeof(uint64_t); }
  void clear() {
    cells_.clear();
    cells_.shrink_to_fit();
    size_ = 0;
  }

 private:
  // A cell is (tag << 32) | (id + 1); 0 is empty.
  static uint32_t tag(uint64_t hash) { return static_cast<uint32_t>(hash ^ (hash >> 32)); }
  static uint64_t make_cell(uint32_t t, uint32_t id) { return (uint64_t{t} << 32) | (uint64_t{id} + 1); }
  static uint32_t cell_tag(uint64_t c) { return static_cast<uint32_t>(c >> 32); }
  static uint32_t cell_id(uint64_t c) { return static_cast<uint32_t>(c) - 1; }
  size_t mask() const { return cells_.size() - 1; }
  // Fibonacci hashing of the tag onto the table: the top bits of the product.
  size_t home(uint32_t t) const { return static_cast<size_t>((uint64_t{t} * 0x9E3779B97F4A7C15ull) >> shift_); }

  void grow() {
    std::vector<uint64_t> old = std::move(cells_);
    const size_t n = old.empty() ? 8 : 2 * old.size();
    cells_.assign(n, 0);
    shift_ = 64;
    for (size_t s = n; s > 1; s >>= 1) --shift_;
    for (uint64_t c : old) {
      if (c == 0) continue;
      size_t i = home(cell_tag(c));
      while (cells_[i] != 0) i = (i + 1) & mask();
      cells_[i] = c;
    }
  }

  std::vector<uint64_t> cells_;
  size_t size_ = 0;
  unsigned shift_ = 64;
};

}  // namespace caesium
