// SortedBlocks: an ordered set of pointers (or other small trivially copyable items) kept
// in sorted blocks of up to 256, for the volume store's key order.  ~8-12 bytes per item,
// against 48 for a std::set node; a lookup binary-searches the blocks' first items and
// then one block, touching about as many records as a red-black tree's descent does
// (log2 n comparisons, each a look at an item) but no tree nodes.
//
// Less is a strict weak order over items and, transparently, over lookup keys (like
// std::set with is_transparent).  Items that compare equal are not allowed.
//
// Fill: a full block splits in half, except that an item whose place is past the end of a
// full block starts a new block of its own — so ascending inserts (keys with a counter,
// timestamps) fill blocks completely instead of leaving them half empty.  After an erase a
// block under a quarter full is merged into a neighbour when the two fit in one block.
//
// Invariants (check()):
//   - every block holds 1..kBlock items, in strictly increasing order, and the last item
//     of a block is less than the first of the next;
//   - firsts_[b] == blocks_[b]->items[0]; size_ is the sum of the blocks' counts.
// Iterators are invalidated by any insert or erase.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace caesium {

template <class T, class Less>
class SortedBlocks {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr uint32_t kBlock = 256;

  class const_iterator {
   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = const T&;
    using pointer = const T*;
    using iterator_category = std::forward_iterator_tag;
    const_iterator() = default;
    const T& operator*() const { return s_->blocks_[b_]->items[i_]; }
    const_iterator& operator++() {
      if (++i_ == s_->blocks_[b_]->n) {
        ++b_;
        i_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.b_ == b.b_ && a.i_ == b.i_; }

   private:
    friend class SortedBlocks;
    const_iterator(const SortedBlocks* s, size_t b, uint32_t i) : s_(s), b_(b), i_(i) {}
    const SortedBlocks* s_ = nullptr;
    size_t b_ = 0;
    uint32_t i_ = 0;
  };

  const_iterator begin() const { return const_iterator(this, 0, 0); }
  const_iterator end() const { return const_iterator(this, blocks_.size(), 0); }

  // The first item not less than `key`.
  template <class K>
  const_iterator lower_bound(const K& key) const {
    const size_t j = blocks_with_first_less(key);
    if (j == 0) return begin();
    const Block& blk = *blocks_[j - 1];
    const T* p = std::lower_bound(blk.items, blk.items + blk.n, key, Less{});
    return at(j - 1, static_cast<uint32_t>(p - blk.items));
  }

  // The first item greater than `key`.
  template <class K>
  const_iterator upper_bound(const K& key) const {
    const size_t j = static_cast<size_t>(
        std::partition_point(firsts_.begin(), firsts_.end(), [&](const T& f) { return !Less{}(key, f); }) -
        firsts_.begin());
    if (j == 0) return begin();
    const Block& blk = *blocks_[j - 1];
    const T* p = std::upper_bound(blk.items, blk.items + blk.n, key, Less{});
    return at(j - 1, static_cast<uint32_t>(p - blk.items));
  }

  // REQUIRES: no item equal to `item` is present.
  void insert(const T& item) {
    ++size_;
    if (blocks_.empty()) {
      insert_block(0);
      put(0, 0, item);
      return;
    }
    const size_t j = blocks_with_first_less(item);
    size_t b = j == 0 ? 0 : j - 1;
    Block* blk = blocks_[b].get();
    uint32_t pos = static_cast<uint32_t>(std::lower_bound(blk->items, blk->items + blk->n, item, Less{}) - blk->items);
    if (blk->n == kBlock) {
      if (pos == kBlock) {  // past the end of a full block: an ascending run, start a new block
        insert_block(b + 1);
        put(b + 1, 0, item);
        return;
      }
      // Split in half; the upper half moves to a new block after this one.
      constexpr uint32_t half = kBlock / 2;
      insert_block(b + 1);
      blk = blocks_[b].get();
      Block* upper = blocks_[b + 1].get();
      std::memcpy(upper->items, blk->items + half, sizeof(T) * (kBlock - half));
      upper->n = kBlock - half;
      blk->n = half;
      firsts_[b + 1] = upper->items[0];
      if (pos > half) {  // (at pos == half the item precedes upper's first: it ends blk)
        ++b;
        pos -= half;
      }
    }
    put(b, pos, item);
  }

  // Removes the item equal to `item`; returns whether there was one.
  bool erase(const T& item) {
    if (blocks_.empty()) return false;
    const size_t b = block_of(item);
    Block* blk = blocks_[b].get();
    const T* p = std::lower_bound(blk->items, blk->items + blk->n, item, Less{});
    if (p == blk->items + blk->n || Less{}(item, *p)) return false;
    const uint32_t pos = static_cast<uint32_t>(p - blk->items);
    std::memmove(blk->items + pos, blk->items + pos + 1, sizeof(T) * (blk->n - pos - 1));
    --blk->n;
    --size_;
    if (blk->n == 0) {
      erase_block(b);
      return true;
    }
    firsts_[b] = blk->items[0];
    if (blk->n < kBlock / 4) {
      if (b + 1 < blocks_.size() && blk->n + blocks_[b + 1]->n <= kBlock) merge_into(b, b + 1);
      else if (b > 0 && blocks_[b - 1]->n + blk->n <= kBlock) merge_into(b - 1, b);
    }
    return true;
  }

  // Puts `new_item` in the place of the item equal to `old_item`; returns whether there
  // was one.  REQUIRES: the two are equal under Less (a new version of the same key).
  bool replace(const T& old_item, const T& new_item) {
    if (blocks_.empty()) return false;
    const size_t b = block_of(old_item);
    Block& blk = *blocks_[b];
    T* p = std::lower_bound(blk.items, blk.items + blk.n, old_item, Less{});
    if (p == blk.items + blk.n || Less{}(old_item, *p)) return false;
    *p = new_item;
    firsts_[b] = blk.items[0];
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t block_count() const { return blocks_.size(); }
  size_t memory_bytes() const {
    return blocks_.size() * sizeof(Block) + blocks_.capacity() * sizeof(void*) + firsts_.capacity() * sizeof(T);
  }

  bool check() const {
    if (blocks_.size() != firsts_.size()) return false;
    size_t n = 0;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const Block& blk = *blocks_[b];
      if (blk.n == 0 || blk.n > kBlock) return false;
      if (Less{}(firsts_[b], blk.items[0]) || Less{}(blk.items[0], firsts_[b])) return false;
      for (uint32_t i = 1; i < blk.n; ++i) {
        if (!Less{}(blk.items[i - 1], blk.items[i])) return false;
      }
      if (b > 0 && !Less{}(blocks_[b - 1]->items[blocks_[b - 1]->n - 1], blk.items[0])) return false;
      n += blk.n;
    }
    return n == size_;
  }

 private:
  struct Block {
    uint32_t n = 0;
    T items[kBlock];
  };

  // How many blocks start with an item less than `key`.
  template <class K>
  size_t blocks_with_first_less(const K& key) const {
    return static_cast<size_t>(
        std::partition_point(firsts_.begin(), firsts_.end(), [&](const T& f) { return Less{}(f, key); }) -
        firsts_.begin());
  }

  // The block that holds `item` if it is present.  REQUIRES: !blocks_.empty().
  size_t block_of(const T& item) const {
    const size_t j = blocks_with_first_less(item);
    // An item equal to a block's first is in that block, not the one before.
    if (j < blocks_.size() && !Less{}(item, firsts_[j])) return j;
    return j == 0 ? 0 : j - 1;
  }

  const_iterator at(size_t b, uint32_t i) const {
    if (i == blocks_[b]->n) return const_iterator(this, b + 1, 0);
    return const_iterator(this, b, i);
  }

  void insert_block(size_t b) {
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(b), std::unique_ptr<Block>(new Block));
    firsts_.insert(firsts_.begin() + static_cast<std::ptrdiff_t>(b), T{});
  }
  void erase_block(size_t b) {
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(b));
    firsts_.erase(firsts_.begin() + static_cast<std::ptrdiff_t>(b));
  }
  void put(size_t b, uint32_t pos, const T& item) {
    Block& blk = *blocks_[b];
    std::memmove(blk.items + pos + 1, blk.items + pos, sizeof(T) * (blk.n - pos));
    blk.items[pos] = item;
    ++blk.n;
    firsts_[b] = blk.items[0];
  }
  // Appends block `from` (the one right after `to`) to `to` and drops it.
  void merge_into(size_t to, size_t from) {
    Block& dst = *blocks_[to];
    const Block& src = *blocks_[from];
    std::memcpy(dst.items + dst.n, src.items, sizeof(T) * src.n);
    dst.n += src.n;
    erase_block(from);
  }

  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<T> firsts_;  // firsts_[b] == blocks_[b]->items[0]: searched without touching blocks
  size_t size_ = 0;
};

}  // namespace caesium
