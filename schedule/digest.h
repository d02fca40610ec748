// Digest: an incrementally maintained hash tree over a volume store, for anti-entropy.
//
// Every record contributes one DigestItem: key_hash = xxh3(key) and entry_hash = xxh3 of
// (key hash, version, tombstone flag, value hash).  Items are placed in a prefix tree on
// the bits of key_hash, most significant bit first.  A node of the tree is a key-hash
// prefix (prefix, prefix_bits); its summary is
//     sum   = Σ entry_hash of the items under it   (mod 2^64)
//     count = number of items under it.
// Summaries are additive, so a change updates each ancestor by one add/subtract: O(depth).
// Sum rather than XOR: XOR cancels equal terms pairwise, a sum does not; each key appears
// once per store anyway, so either would be sound, and the sum costs the same.  Two
// different item sets have equal (sum, count) with probability ~2^-64 (xxh3 outputs are
// independent-looking; records come from authenticated peers, so crafted collisions are
// out of scope, see docs/store.md).
//
// Layout (the "dense" part, D = depth() nibbles, 0 <= D <= kMaxDepth):
//   levels_[l] for l in 0..D holds the summary of every node of nibble depth l (16^l of
//   them, indexed by the top 4l bits of the key hash).  buckets_[b] (16^D of them) holds
//   the items whose top 4D bits are b, sorted by (key_hash, entry_hash), each beside a
//   copy of its key hash: a search in a bucket then reads the bucket alone and one item,
//   not an item at every step of the binary search (2-6 cache misses a lookup when the
//   items are not in cache, which at 100k+ records they are not).  Nodes deeper than D,
//   and nodes at bit depths that are not multiples of 4, are computed on demand: from the
//   next dense level below (at most 8 nodes summed) or by scanning one bucket.
// D follows the size: it grows when the mean bucket holds more than kGrowMean items and
// shrinks when it holds fewer than one, so memory stays ~3 B per item at 1M items and
// updates touch ~D+1 cache lines.  A resize rebuilds in O(n + 16^D) (amortized O(1)).
//
// Invariants (check_invariants()):
//   I1  every item is in exactly one bucket, the one named by its top 4D key-hash bits;
//   I2  each bucket is sorted by (key_hash, entry_hash) (so even two keys whose 64-bit
//       hashes collide come out in an order that does not depend on addresses);
//   I3  levels_[D][b] == summary of bucket b, and levels_[l][i] == Σ of its 16 children;
//   I4  size() == levels_[0][0].count.
// The tree never reads the item's key or value: only key_hash and entry_hash, which the
// owner must not change while the item is inserted except through update().
//
// Iteration order reaching the outside (items of a range) is key-hash order: deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/hash.h"

namespace caesium::schedule {

struct DigestItem {
  uint64_t key_hash = 0;
  uint64_t entry_hash = 0;
};

struct NodeSummary {
  uint64_t sum = 0;
  uint64_t count = 0;

  void add(uint64_t entry_hash) { sum += entry_hash; ++count; }
  void add(const NodeSummary& o) { sum += o.sum; count += o.count; }
  // A 64-bit fingerprint of the node: equal iff (sum, count) equal, w.h.p.
  uint64_t fingerprint() const { return hash_combine(sum, count); }
  friend bool operator==(const NodeSummary&, const NodeSummary&) = default;
};

// A key-hash prefix: the top `bits` bits of `prefix` (the rest must be zero).
struct HashRange {
  uint64_t prefix = 0;
  unsigned bits = 0;

  // Lowest and highest key hash inside the range.
  uint64_t lo() const { return prefix; }
  uint64_t hi() const {
    if (bits == 0) return ~uint64_t{0};
    return bits >= 64 ? prefix : prefix | (~uint64_t{0} >> bits);
  }
  bool contains(uint64_t key_hash) const { return key_hash >= lo() && key_hash <= hi(); }
  // True when bits <= 64 and no bit below the prefix is set.
  bool well_formed() const;
  // The i-th of the 2^step sub-ranges, in key-hash order.  REQUIRES: bits + step <= 64.
  HashRange child(unsigned step, uint64_t i) const;
  friend bool operator==(const HashRange&, const HashRange&) = default;
};

class Digest {
 public:
  static constexpr unsigned kMaxDepth = 6;  // 16M buckets: plenty for 10^9 items
  static constexpr size_t kGrowMean = 48;   // items per bucket before going one level deeper

  Digest();

  // REQUIRES: item not inserted yet; it stays valid (same address) until erase().
  void insert(const DigestItem* item);
  // REQUIRES: item inserted.
  void erase(const DigestItem* item);
  // The item's entry_hash changed from old_entry_hash (key_hash must not change).  O(D).
  void update(const DigestItem* item, uint64_t old_entry_hash);
  // `new_item` takes the place of `old_item` (inserted; unchanged since).  REQUIRES: the
  // same key_hash.  O(D), like update.
  void replace(const DigestItem* old_item, const DigestItem* new_item);

  size_t size() const { return static_cast<size_t>(levels_[0][0].count); }
  unsigned depth() const { return depth_; }
  NodeSummary root() const { return levels_[0][0]; }

  // Summary of any range.  REQUIRES: range.well_formed().
  NodeSummary summarize(HashRange range) const;
  // Summaries of the 2^step sub-ranges of `range`, in order, into *out (resized).
  // REQUIRES: range.well_formed(), 1 <= step, range.bits + step <= 64, step <= 16.
  void child_summaries(HashRange range, unsigned step, std::vector<NodeSummary>* out) const;

  // Calls fn(const DigestItem&) for each item in `range` with key_hash >= from, in
  // (key_hash, entry_hash) order, until fn returns false.
  template <class F>
  void for_each_in(HashRange range, uint64_t from, F&& fn) const;
  // Calls fn(const DigestItem&) for every item whose key hash is key_hash.
  template <class F>
  void for_each_with_key_hash(uint64_t key_hash, F&& fn) const {
    for_each_in(HashRange{key_hash, 64}, key_hash, [&](const DigestItem& it) { fn(it); return true; });
  }

  // Heap bytes held by the tree itself (not the items).
  size_t memory_bytes() const;
  // True when invariants I1..I4 hold (and every slot's key hash is its item's); O(n + 16^D).
  // For tests and debug builds.
  bool check_invariants() const;

 private:
  struct Slot {
    uint64_t key_hash;  // == item->key_hash
    const DigestItem* item;
  };
  using Bucket = std::vector<Slot>;

  size_t bucket_of(uint64_t key_hash) const {
    return depth_ == 0 ? 0 : static_cast<size_t>(key_hash >> (64 - 4 * depth_));
  }
  // Adds (sign = +1) or removes (sign = -1) one item's hash on the path to the root;
  // sign = 0 changes the sum by `delta` without changing counts (an update).
  void add_to_path(size_t bucket, uint64_t delta, int sign);
  static Bucket::const_iterator upper_slot(const Bucket& bucket, uint64_t key_hash, uint64_t entry_hash);
  size_t position_of(const Bucket& bucket, const DigestItem* item, uint64_t entry_hash) const;
  void place(size_t b, size_t pos, const DigestItem* item, uint64_t old_entry_hash);
  void maybe_resize();
  void rebuild(unsigned new_depth);

  unsigned depth_ = 0;
  std::vector<std::vector<NodeSummary>> levels_;  // levels_[l].size() == 16^l, l = 0..depth_
  std::vector<Bucket> buckets_;                    // 16^depth_
};

template <class F>
void Digest::for_each_in(HashRange range, uint64_t from, F&& fn) const {
  const uint64_t lo = from > range.lo() ? from : range.lo();
  const uint64_t hi = range.hi();
  if (lo > hi) return;
  for (size_t b = bucket_of(lo), last = bucket_of(hi); b <= last; ++b) {
    const Bucket& bucket = buckets_[b];
    // Buckets are sorted by key hash: binary search the start, stop past hi.
    size_t i = 0, n = bucket.size();
    for (size_t step = n; step > 0;) {
      const size_t half = step / 2;
      if (bucket[i + half].key_hash < lo) {
        i += half + 1;
        step -= half + 1;
      } else {
        step = half;
      }
    }
    for (; i < n && bucket[i].key_hash <= hi; ++i) {
      if (!fn(*bucket[i].item)) return;
    }
  }
}

}  // namespace caesium::schedule
