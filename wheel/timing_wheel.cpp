// TimingWheel: placement, cancel, cascade and the poll cursor.  The level table and the
// invariants (I1-I5) are in timing_wheel.h.
#include "wheel/timing_wheel.h"

#include <sys/mman.h>

#include <cassert>
#include <cstdlib>
#include <cstring>
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

// Takes the next never-used node, growing the slab when it is full.  Nodes are
// initialised here, not when memory is allocated, so pages are touched only as the slab
// fills.
uint32_t TimingWheel::allocate_fresh() {
  if (high_water_ >= kMaxTimers) {
    throw std::length_error("TimingWheel: more than 2^30 pending timers");
  }
  if (high_water_ == slab_capacity()) grow_slab(size_t{high_water_} + 1);
  const uint32_t index = high_water_++;
  node(index).generation = 1;  // a zeroed Handle{0, 0} is never valid
  return index;
}

size_t TimingWheel::slab_capacity() const {
  if (chunks_.empty()) return 0;
  return first_chunk_nodes_ + (chunks_.size() - 1) * size_t{kChunkNodes};
}

// Chunk 0 starts at 64 nodes and doubles (by realloc: nodes are addressed by index, so
// they may move) until it is a full chunk, so that a small wheel — the simulator runs
// many — costs a few KiB, not 2 MiB.  Every later chunk is exactly one 2 MiB huge page,
// aligned to it, and on Linux we ask for a transparent huge page: timers are touched in
// random order (cancel, reschedule), and with 4 KiB pages nearly every such touch at
// millions of timers would also miss the TLB.
void TimingWheel::grow_slab(size_t nodes) {
  while (slab_capacity() < nodes) {
    if (chunks_.empty() || first_chunk_nodes_ < kChunkNodes) {
      uint32_t capacity = first_chunk_nodes_ == 0 ? 64 : first_chunk_nodes_ * 2;
      while (capacity < nodes && capacity < kChunkNodes) capacity *= 2;
      if (capacity > kChunkNodes) capacity = kChunkNodes;
      void* old = chunks_.empty() ? nullptr : chunks_[0].release();
      void* p = std::realloc(old, sizeof(Node) * capacity);
      if (p == nullptr) {
        if (old != nullptr) chunks_[0].reset(static_cast<Node*>(old));
        throw std::bad_alloc();
      }
      if (chunks_.empty()) chunks_.emplace_back();
      chunks_[0].reset(static_cast<Node*>(p));
      first_chunk_nodes_ = capacity;
      continue;
    }
    constexpr size_t kBytes = sizeof(Node) * kChunkNodes;
    void* p = std::aligned_alloc(kBytes, kBytes);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, kBytes, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
    ChunkPtr chunk(static_cast<Node*>(p));
    chunks_.push_back(std::move(chunk));
  }
}

void TimingWheel::reserve(size_t timers) {
  const size_t wanted = timers < kMaxTimers ? timers : kMaxTimers;
  const size_t before = slab_capacity();
  if (wanted <= before) return;
  grow_slab(wanted);
  // Fault the new pages in now, so that inserts do not.  Chunk c holds the indices
  // [c * kChunkNodes, c * kChunkNodes + its capacity).
  for (size_t i = before; i < slab_capacity();) {
    const size_t chunk = i >> kChunkShift;
    const size_t end = chunk == 0 ? first_chunk_nodes_ : (chunk + 1) << kChunkShift;
    std::memset(static_cast<void*>(&node(static_cast<uint32_t>(i))), 0, (end - i) * sizeof(Node));
    i = end;
  }
}

void TimingWheel::make_room_slow(uint16_t bucket) {
  Bucket& b = buckets_[bucket];
  const bool busy = in_poll_ && bucket == firing_;  // a poll is walking its positions
  if (!busy && b.tombstones() > 0 && b.tombstones() >= b.live) {
    compact(bucket);
  } else {
    b.entries.grow();
  }
}

void TimingWheel::emptied(uint16_t bucket) {
  if (in_poll_ && bucket == firing_) return;
  buckets_[bucket].reset();
  if (bucket != kOverdue) clear_occupied(bucket);
}

// Drops tombstones, keeping order (I4), and recomputes the exact minimum deadline.
// Amortised O(1): it runs on a full bucket at least half tombstones, so each pass is
// paid for by at least as many earlier cancels.  Afterwards the bucket has room.
void TimingWheel::compact(uint16_t bucket) {
  Bucket& b = buckets_[bucket];
  const uint32_t size = b.entries.size();
  uint32_t kept = 0;
  int64_t min_deadline = INT64_MAX;
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t index = b.entries[i];
    if (index == kTombstone) continue;
    if (i + kPrefetchAhead < size) __builtin_prefetch(prefetch_address(b.entries[i + kPrefetchAhead]));
    Node& n = node(index);
    n.pos = kept;
    if (n.deadline_ms < min_deadline) min_deadline = n.deadline_ms;
    b.entries[kept++] = index;
  }
  b.entries.truncate(kept);
  b.entries.shrink_if_sparse();
  b.min_deadline_ms = min_deadline;
}

void TimingWheel::clear_occupied(uint16_t bucket) {
  const int level = bucket / kSlotsPerLevel;
  const int slot = bucket % kSlotsPerLevel;
  occupied_[level][slot / 64] &= ~(UINT64_C(1) << (slot % 64));
  const uint64_t* words = occupied_[level];
  if ((words[0] | words[1] | words[2] | words[3]) == 0) level_mask_ &= ~(1u << level);
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

bool TimingWheel::advance() noexcept {
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
      if (i + kPrefetchAhead < size) __builtin_prefetch(prefetch_address(moving[i + kPrefetchAhead]));
      const uint32_t index = moving[i];
      if (index == kTombstone) continue;
      Node& n = node(index);
      const uint16_t to = bucket_for(biased(n.deadline_ms));
      make_room(to);
      push(to, index, n);
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
  bytes += slab_capacity() * sizeof(Node);
  bytes += buckets_.capacity() * sizeof(Bucket);
  for (const Bucket& b : buckets_) bytes += size_t{b.entries.capacity()} * sizeof(uint32_t);
  return bytes;
}

}  // namespace caesium::wheel
