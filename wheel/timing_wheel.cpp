// TimingWheel: placement, cancel, cascade and the poll cursor.  The level table and the
// invariants (I1-I5) are in timing_wheel.h.
#include "wheel/timing_wheel.h"

#include <cassert>
#include <stdexcept>
#include <string>

namespace caesium::wheel {

using detail::Bucket;
using detail::kTombstone;

namespace {

// Bits of a biased time above level L's byte: a bucket at level L covers the times that
// share them with the wheel's current time.  Level 7 has nothing above it.
constexpr uint64_t prefix_mask(int level) {
  return level == 7 ? 0 : ~((UINT64_C(1) << (8 * (level + 1))) - 1);
}

constexpr uint16_t bucket_id(int level, int slot) {
  return static_cast<uint16_t>(level * TimingWheel::kSlotsPerLevel + slot);
}

}  // namespace

TimingWheel::TimingWheel(int64_t start_ms)
    : buckets_(kWheelBuckets + 1), now_ms_(start_ms), elapsed_(biased(start_ms)) {}

bool TimingWheel::valid(Handle h) const {
  if (h.index >= high_water_) return false;
  const Node& n = node(h.index);
  return n.generation == h.generation && n.bucket != kFreeBucket;
}

bool TimingWheel::pending(Handle handle) const { return valid(handle); }

// Pops the free list, or takes the next never-used node (adding a 2 MiB chunk when the
// last one is full).  Nodes are initialised here, not when the chunk is allocated, so a
// chunk's pages are touched only as it fills.
uint32_t TimingWheel::allocate() {
  if (free_head_ != kNil) {
    const uint32_t index = free_head_;
    free_head_ = node(index).pos;
    return index;
  }
  if (high_water_ >= kMaxTimers) {
    throw std::length_error("TimingWheel: more than 2^30 pending timers");
  }
  if ((high_water_ >> kChunkShift) == chunks_.size()) {
    chunks_.push_back(std::unique_ptr<Node[]>(new Node[kChunkNodes]));
  }
  const uint32_t index = high_water_++;
  node(index).generation = 1;  // a zeroed Handle{0, 0} is never valid
  return index;
}

void TimingWheel::free_node(uint32_t index, Node& n) {
  ++n.generation;
  n.bucket = kFreeBucket;
  n.pos = free_head_;
  free_head_ = index;
}

Handle TimingWheel::insert(int64_t deadline_ms, uint64_t payload) {
  const uint32_t index = allocate();
  Node& n = node(index);
  n.deadline_ms = deadline_ms;
  n.payload = payload;
  try {
    attach(index, n);
  } catch (...) {  // the bucket could not grow: undo the allocation
    free_node(index, n);
    throw;
  }
  ++size_;
  return Handle{index, n.generation};
}

bool TimingWheel::cancel(Handle handle) {
  if (!valid(handle)) return false;
  Node& n = node(handle.index);
  detach(n);
  free_node(handle.index, n);
  --size_;
  return true;
}

bool TimingWheel::reschedule(Handle handle, int64_t deadline_ms) {
  if (!valid(handle)) return false;
  Node& n = node(handle.index);
  // Append first, then tombstone the old entry: if the append cannot allocate, the
  // timer is still where it was, unchanged.
  const uint16_t old_bucket = n.bucket;
  const uint32_t old_pos = n.pos;
  const int64_t old_deadline = n.deadline_ms;
  n.deadline_ms = deadline_ms;
  try {
    attach(handle.index, n);
  } catch (...) {
    n.deadline_ms = old_deadline;
    throw;
  }
  tombstone(old_bucket, old_pos);
  tidy(old_bucket);
  return true;
}

void TimingWheel::attach(uint32_t index, Node& n) {
  if (n.deadline_ms <= now_ms_) {
    append(kOverdue, index, n);
  } else {
    place_in_wheel(index, n);
  }
}

void TimingWheel::place_in_wheel(uint32_t index, Node& n) {
  append(bucket_for(biased(n.deadline_ms)), index, n);
}

void TimingWheel::append(uint16_t bucket, uint32_t index, Node& n) {
  Bucket& b = buckets_[bucket];
  n.pos = b.entries.push_back(index);
  n.bucket = bucket;
  if (b.live++ == 0 && bucket != kOverdue) set_occupied(bucket);
  if (n.deadline_ms < b.min_deadline_ms) b.min_deadline_ms = n.deadline_ms;
}

void TimingWheel::detach(Node& n) {
  tombstone(n.bucket, n.pos);
  tidy(n.bucket);
}

void TimingWheel::tombstone(uint16_t bucket, uint32_t pos) {
  Bucket& b = buckets_[bucket];
  b.entries[pos] = kTombstone;
  --b.live;
}

// After a tombstone: a bucket left without live entries is emptied at once (so its
// occupancy bit is exact); one with more tombstones than live entries is compacted.
// Neither happens to the bucket a poll is walking: the poll empties it when done.
void TimingWheel::tidy(uint16_t bucket) {
  if (in_poll_ && bucket == firing_) return;
  Bucket& b = buckets_[bucket];
  if (b.live == 0) {
    b.reset();
    if (bucket != kOverdue) clear_occupied(bucket);
  } else if (b.tombstones() > b.live && b.tombstones() >= 32) {
    compact(bucket);
  }
}

// Drops tombstones, keeping order (I4), and recomputes the exact minimum deadline.
// Amortised O(1) per cancel: it runs when tombstones outnumber live entries, so each
// pass is paid for by at least as many cancels since the last one.
void TimingWheel::compact(uint16_t bucket) {
  Bucket& b = buckets_[bucket];
  const uint32_t size = b.entries.size();
  uint32_t kept = 0;
  int64_t min_deadline = INT64_MAX;
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t index = b.entries[i];
    if (index == kTombstone) continue;
    if (i + 8 < size) prefetch(b.entries[i + 8]);
    Node& n = node(index);
    n.pos = kept;
    if (n.deadline_ms < min_deadline) min_deadline = n.deadline_ms;
    b.entries[kept++] = index;
  }
  b.entries.truncate(kept);
  b.entries.shrink_if_sparse();
  b.min_deadline_ms = min_deadline;
}

void TimingWheel::set_occupied(uint16_t bucket) {
  const int level = bucket / kSlotsPerLevel;
  const int slot = bucket % kSlotsPerLevel;
  occupied_[level][slot / 64] |= UINT64_C(1) << (slot % 64);
  level_mask_ |= 1u << level;
}

void TimingWheel::clear_occupied(uint16_t bucket) {
  const int level = bucket / kSlotsPerLevel;
  const int slot = bucket % kSlotsPerLevel;
  occupied_[level][slot / 64] &= ~(UINT64_C(1) << (slot % 64));
  const uint64_t* words = occupied_[level];
  if ((words[0] | words[1] | words[2] | words[3]) == 0) level_mask_ &= ~(1u << level);
}

// The level is the most significant byte in which the deadline differs from elapsed_
// (level 0 when equal); the slot is that byte of the deadline.  REQUIRES: deadline >=
// elapsed_ (in biased order).
uint16_t TimingWheel::bucket_for(uint64_t deadline_biased) const {
  assert(deadline_biased >= elapsed_);
  const uint64_t differ = (deadline_biased ^ elapsed_) | 1;
  const int level = (63 - __builtin_clzll(differ)) >> 3;
  const int slot = static_cast<int>((deadline_biased >> (8 * level)) & 0xff);
  return bucket_id(level, slot);
}

uint64_t TimingWheel::bucket_start(int level, int slot) const {
  return (elapsed_ & prefix_mask(level)) | (static_cast<uint64_t>(slot) << (8 * level));
}

// REQUIRES: level has an occupied slot.  By I2 no slot below elapsed_'s own index is
// occupied, so the lowest set bit is the earliest bucket of the level.
int TimingWheel::lowest_slot(int level) const {
  const uint64_t* words = occupied_[level];
  for (int w = 0; w < kSlotsPerLevel / 64; ++w) {
    if (words[w] != 0) return w * 64 + __builtin_ctzll(words[w]);
  }
  assert(false && "lowest_slot on an empty level");
  return 0;
}

std::optional<int64_t> TimingWheel::next_deadline() const {
  if (buckets_[kOverdue].live > 0) return now_ms_;
  if (level_mask_ == 0) return std::nullopt;
  const int level = __builtin_ctz(level_mask_);
  const int slot = lowest_slot(level);
  const int64_t start = unbiased(bucket_start(level, slot));
  const int64_t min_deadline = buckets_[bucket_id(level, slot)].min_deadline_ms;
  return min_deadline > start ? min_deadline : start;
}

size_t TimingWheel::poll(int64_t now_ms, std::vector<Expired>& out) {
  return poll(now_ms, [&out](const Expired& e) { out.push_back(e); });
}

bool TimingWheel::begin_poll(int64_t now_ms) {
  if (in_poll_ || now_ms < now_ms_) return false;
  in_poll_ = true;
  now_ms_ = now_ms;
  // First the timers that were already overdue when the poll began: they are earlier
  // than anything in the wheel.  Entries appended during the poll lie beyond fire_end_.
  firing_ = kOverdue;
  fire_pos_ = 0;
  fire_end_ = buckets_[kOverdue].entries.size();
  return true;
}

bool TimingWheel::advance() {
  Bucket& done = buckets_[firing_];
  if (firing_ == kOverdue) {
    // Keep what callbacks appended (it fires next poll), moved to the front.
    const uint32_t size = done.entries.size();
    uint32_t kept = 0;
    for (uint32_t i = fire_end_; i < size; ++i) {
      const uint32_t index = done.entries[i];
      if (index == kTombstone) continue;
      node(index).pos = kept;
      done.entries[kept++] = index;
    }
    assert(kept == done.live);
    if (kept == 0) {
      done.reset();
    } else {
      done.entries.truncate(kept);
    }
  } else {
    assert(done.live == 0);
    done.reset();
    clear_occupied(firing_);
  }
  firing_ = kNoBucket;

  const uint64_t target = biased(now_ms_);
  while (level_mask_ != 0) {
    const int level = __builtin_ctz(level_mask_);
    const int slot = lowest_slot(level);
    const uint64_t start = bucket_start(level, slot);
    if (start > target) break;
    elapsed_ = start;
    const uint16_t id = bucket_id(level, slot);
    if (level == 0) {
      firing_ = id;
      fire_pos_ = 0;
      fire_end_ = buckets_[id].entries.size();
      return true;
    }
    // Cascade: every timer of the bucket now differs from elapsed_ only below this
    // level, so it moves strictly down.  Walking in order and appending keeps I4.  The
    // array is taken out first so the bucket is empty (and reusable) while we walk.
    detail::EntryArray moving;
    moving.swap(buckets_[id].entries);
    buckets_[id].reset();
    clear_occupied(id);
    const uint32_t size = moving.size();
    for (uint32_t i = 0; i < size; ++i) {
      if (i + 8 < size) prefetch(moving[i + 8]);
      const uint32_t index = moving[i];
      if (index == kTombstone) continue;
      place_in_wheel(index, node(index));
    }
    moving.truncate(0);
    if (moving.capacity() <= 1024) buckets_[id].entries.swap(moving);
  }
  return false;
}

void TimingWheel::end_poll() {
  elapsed_ = biased(now_ms_);
  in_poll_ = false;
  firing_ = kNoBucket;
}

size_t TimingWheel::memory_bytes() const {
  size_t bytes = sizeof(*this);
  bytes += chunks_.capacity() * sizeof(chunks_[0]);
  bytes += chunks_.size() * kChunkNodes * sizeof(Node);
  bytes += buckets_.capacity() * sizeof(Bucket);
  for (const Bucket& b : buckets_) bytes += size_t{b.entries.capacity()} * sizeof(uint32_t);
  return bytes;
}

}  // namespace caesium::wheel
