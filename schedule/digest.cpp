#include "schedule/digest.h"

#include <algorithm>
#include <cassert>

namespace caesium::schedule {

namespace {

// Bucket order: (key_hash, entry_hash).  Never the address, so that equal key hashes
// (a 64-bit collision) still come out in a deterministic order.
bool item_less(uint64_t kh_a, uint64_t eh_a, uint64_t kh_b, uint64_t eh_b) {
  return kh_a != kh_b ? kh_a < kh_b : eh_a < eh_b;
}

size_t pow16(unsigned level) { return size_t{1} << (4 * level); }

}  // namespace

bool HashRange::well_formed() const {
  if (bits > 64) return false;
  if (bits == 64) return true;
  return (prefix & (~uint64_t{0} >> bits)) == 0;
}

HashRange HashRange::child(unsigned step, uint64_t i) const {
  assert(step >= 1);
  assert(bits + step <= 64);
  assert(step >= 64 || i < (uint64_t{1} << step));
  const unsigned child_bits = bits + step;
  return HashRange{prefix | (i << (64 - child_bits)), child_bits};
}

Digest::Digest() { rebuild(0); }

// Where an item goes among the slots: after those ordered before (key_hash, entry_hash).
// The entry hash is read from an item only when the key hashes tie, which in practice
// never happens, so a search reads the bucket alone.
Digest::Bucket::const_iterator Digest::upper_slot(const Bucket& bucket, uint64_t key_hash, uint64_t entry_hash) {
  return std::upper_bound(bucket.begin(), bucket.end(), key_hash, [&](uint64_t kh, const Slot& s) {
    return kh != s.key_hash ? kh < s.key_hash : entry_hash < s.item->entry_hash;
  });
}

size_t Digest::position_of(const Bucket& bucket, const DigestItem* item, uint64_t entry_hash) const {
  const uint64_t kh = item->key_hash;
  auto it = std::lower_bound(bucket.begin(), bucket.end(), kh, [&](const Slot& s, uint64_t) {
    if (s.key_hash != kh) return s.key_hash < kh;
    return (s.item == item ? entry_hash : s.item->entry_hash) < entry_hash;
  });
  // Equal (key_hash, entry_hash) pairs could only come from two keys that collide in both
  // hashes; scan the run for the address to be exact anyway.
  while (it != bucket.end() && it->item != item) ++it;
  assert(it != bucket.end());
  return static_cast<size_t>(it - bucket.begin());
}

void Digest::add_to_path(size_t bucket, uint64_t delta, int sign) {
  for (unsigned l = depth_ + 1; l-- > 0;) {
    NodeSummary& node = levels_[l][bucket >> (4 * (depth_ - l))];
    if (sign < 0) {
      node.sum -= delta;
      --node.count;
    } else {
      node.sum += delta;
      if (sign > 0) ++node.count;
    }
  }
}

void Digest::insert(const DigestItem* item) {
  const size_t b = bucket_of(item->key_hash);
  Bucket& bucket = buckets_[b];
  bucket.insert(upper_slot(bucket, item->key_hash, item->entry_hash), Slot{item->key_hash, item});
  add_to_path(b, item->entry_hash, +1);
  maybe_resize();
}

void Digest::erase(const DigestItem* item) {
  const size_t b = bucket_of(item->key_hash);
  Bucket& bucket = buckets_[b];
  bucket.erase(bucket.begin() + static_cast<std::ptrdiff_t>(position_of(bucket, item, item->entry_hash)));
  add_to_path(b, item->entry_hash, -1);
  maybe_resize();
}

void Digest::update(const DigestItem* item, uint64_t old_entry_hash) {
  const size_t b = bucket_of(item->key_hash);
  place(b, position_of(buckets_[b], item, old_entry_hash), item, old_entry_hash);
}

void Digest::replace(const DigestItem* old_item, const DigestItem* new_item) {
  assert(old_item->key_hash == new_item->key_hash);
  const size_t b = bucket_of(old_item->key_hash);
  place(b, position_of(buckets_[b], old_item, old_item->entry_hash), new_item, old_item->entry_hash);
}

// Puts `item` at bucket b's position pos (where the item it replaces, whose entry hash
// was old_entry_hash, sat) and moves the sums by the change of entry hash.
void Digest::place(size_t b, size_t pos, const DigestItem* item, uint64_t old_entry_hash) {
  Bucket& bucket = buckets_[b];
  bucket[pos].item = item;
  // The position only depends on entry_hash among items with the same key hash, which
  // in practice never exist; re-place the item only then.
  const bool has_twin = (pos > 0 && bucket[pos - 1].key_hash == item->key_hash) ||
                        (pos + 1 < bucket.size() && bucket[pos + 1].key_hash == item->key_hash);
  if (has_twin) {
    bucket.erase(bucket.begin() + static_cast<std::ptrdiff_t>(pos));
    bucket.insert(upper_slot(bucket, item->key_hash, item->entry_hash), Slot{item->key_hash, item});
  }
  add_to_path(b, item->entry_hash - old_entry_hash, 0);
}

void Digest::maybe_resize() {
  const size_t n = size();
  const size_t buckets = pow16(depth_);
  if (depth_ < kMaxDepth && n > kGrowMean * buckets) {
    rebuild(depth_ + 1);
  } else if (depth_ > 0 && n < buckets) {
    rebuild(depth_ - 1);
  }
}

void Digest::rebuild(unsigned new_depth) {
  std::vector<Bucket> old = std::move(buckets_);
  depth_ = new_depth;
  buckets_.assign(pow16(depth_), Bucket{});
  // Old buckets in order, each sorted: the items arrive in global (key_hash, entry_hash)
  // order, so every new bucket is filled already sorted.
  for (Bucket& ob : old) {
    for (const Slot& slot : ob) buckets_[bucket_of(slot.key_hash)].push_back(slot);
    Bucket().swap(ob);  // release memory as we go: a resize at 1M items is ~8 MB of buckets
  }
  levels_.assign(depth_ + 1, {});
  for (unsigned l = 0; l <= depth_; ++l) levels_[l].assign(pow16(l), NodeSummary{});
  for (size_t b = 0; b < buckets_.size(); ++b) {
    NodeSummary& s = levels_[depth_][b];
    for (const Slot& slot : buckets_[b]) s.add(slot.item->entry_hash);
  }
  for (unsigned l = depth_; l-- > 0;) {
    for (size_t i = 0; i < levels_[l + 1].size(); ++i) levels_[l][i >> 4].add(levels_[l + 1][i]);
  }
}

NodeSummary Digest::summarize(HashRange range) const {
  assert(range.well_formed());
  NodeSummary s;
  if (range.bits <= 4 * depth_) {
    // The smallest dense level at or below the range: sum its 1..8 nodes under the prefix.
    const unsigned l = (range.bits + 3) / 4;
    const size_t first = l == 0 ? 0 : static_cast<size_t>(range.prefix >> (64 - 4 * l));
    const size_t n = size_t{1} << (4 * l - range.bits);
    for (size_t i = 0; i < n; ++i) s.add(levels_[l][first + i]);
    return s;
  }
  for_each_in(range, 0, [&](const DigestItem& item) {
    s.add(item.entry_hash);
    return true;
  });
  return s;
}

void Digest::child_summaries(HashRange range, unsigned step, std::vector<NodeSummary>* out) const {
  assert(range.well_formed());
  assert(step >= 1 && step <= 16 && range.bits + step <= 64);
  out->assign(size_t{1} << step, NodeSummary{});
  const unsigned child_bits = range.bits + step;
  if (child_bits <= 4 * depth_) {
    const unsigned l = (child_bits + 3) / 4;  // >= 1 since child_bits >= 1
    const unsigned shift = 4 * l - child_bits;
    const size_t first = static_cast<size_t>(range.prefix >> (64 - 4 * l));
    const size_t n = size_t{1} << (4 * l - range.bits);
    for (size_t i = 0; i < n; ++i) (*out)[i >> shift].add(levels_[l][first + i]);
    return;
  }
  for_each_in(range, 0, [&](const DigestItem& item) {
    (*out)[static_cast<size_t>((item.key_hash << range.bits) >> (64 - step))].add(item.entry_hash);
    return true;
  });
}

size_t Digest::memory_bytes() const {
  size_t bytes = levels_.capacity() * sizeof(levels_[0]) + buckets_.capacity() * sizeof(Bucket);
  for (const auto& level : levels_) bytes += level.capacity() * sizeof(NodeSummary);
  for (const auto& bucket : buckets_) bytes += bucket.capacity() * sizeof(Slot);
  return bytes;
}

bool Digest::check_invariants() const {
  if (levels_.size() != depth_ + 1 || buckets_.size() != pow16(depth_)) return false;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    NodeSummary s;
    const Bucket& bucket = buckets_[b];
    for (size_t i = 0; i < bucket.size(); ++i) {
      const DigestItem& item = *bucket[i].item;
      if (bucket[i].key_hash != item.key_hash) return false;
      if (bucket_of(item.key_hash) != b) return false;                           // I1
      if (i > 0 && item_less(item.key_hash, item.entry_hash,                     // I2
                             bucket[i - 1].key_hash, bucket[i - 1].item->entry_hash)) {
        return false;
      }
      s.add(item.entry_hash);
    }
    if (!(levels_[depth_][b] == s)) return false;                                // I3
  }
  for (unsigned l = 0; l < depth_; ++l) {
    for (size_t i = 0; i < levels_[l].size(); ++i) {
      NodeSummary s;
      for (size_t c = 0; c < 16; ++c) s.add(levels_[l + 1][i * 16 + c]);
      if (!(levels_[l][i] == s)) return false;                                   // I3
    }
  }
  size_t n = 0;
  for (const auto& bucket : buckets_) n += bucket.size();
  return n == size();                                                            // I4
}

}  // namespace caesium::schedule
