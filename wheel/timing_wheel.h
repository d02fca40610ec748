// TimingWheel: a hierarchical timing wheel — a data structure, with no clock inside.
//
// The caller passes time in (absolute milliseconds, any int64 origin: Unix-epoch ms or a
// monotonic count starting near 0), asks for due timers with poll(now_ms), and asks when
// to call next with next_deadline().  Resolution is 1 ms.
//
// Levels (tokio-style; 8 levels x 256 slots cover the whole int64 range, so there is no
// overflow list and no "rounds").  A timer sits at the level of the most significant byte
// in which its deadline differs from the wheel's current time, in the slot named by that
// byte of the deadline:
//
//   level  slot width       level span       holds deadlines that differ from now first in
//     0    1 ms             256 ms           byte 0 (bits 0-7)   — one deadline per slot
//     1    256 ms           65.5 s           byte 1 (bits 8-15)
//     2    65.5 s           4.66 h           byte 2 (bits 16-23)
//     3    4.66 h           49.7 days        byte 3
//     4    49.7 days        34.8 years       byte 4
//     5    34.8 years       8,919 years      byte 5
//     6    8,919 years      2.28 M years     byte 6
//     7    2.28 M years     584 M years      byte 7 (the rest of int64)
//
// Times are compared as uint64 after flipping the sign bit, which keeps int64 order, so
// every int64 deadline (INT64_MIN..INT64_MAX) is held exactly.  A timer with deadline d
// moves down (cascades) at most 7 times before it fires; a 1 h timer typically moves
// twice (level 2 -> 1 -> 0).
//
// Guarantees
//   - Never early, at most one tick late: a timer with deadline d fires in the first
//     poll(now_ms) with now_ms >= d (one tick = 1 ms = the resolution).
//   - Order: within a poll, timers fire in order of (effective deadline, insertion
//     order), where effective deadline = max(deadline, now() when inserted or
//     rescheduled) and a reschedule counts as a new insertion.  So equal deadlines come
//     out in insertion order, and a timer inserted with a deadline already past (d <=
//     now()) is due at now(): it fires at the next poll, before anything later.
//     Expired::deadline_ms always reports the deadline as given.
//   - Time never goes backwards: poll(now_ms) with now_ms < now() is a no-op returning 0.
//   - Callbacks: poll's callback may insert, cancel and reschedule (see poll()).
//
// Invariants (between polls; check_invariants() verifies all of them):
//   I1  every pending timer is in exactly one bucket, at the position its node records;
//       every other entry of that bucket's array is a tombstone.
//   I2  the overdue bucket holds exactly the pending timers with deadline <= now();
//       every other pending timer with deadline d sits in bucket_for(now(), d).
//       Consequence: at level L > 0 every occupied slot index is greater than now's byte
//       L, so no level wraps around, all timers of level L are earlier than all timers
//       of level L + 1, and the lowest set bit of the lowest non-empty level is the
//       earliest bucket.  All pending timers with the same deadline share one bucket.
//   I3  a bucket's bit in the occupancy bitmap is set iff it has live entries; bit L of
//       level_mask_ is set iff level L has any bit set.
//   I4  within a bucket, entries are in (effective deadline, insertion) order restricted
//       to equal deadlines: appends and cascades preserve relative order, compaction is
//       stable.
//   I5  free slab nodes form a singly linked list through Node::pos; a free node's
//       generation differs from every handle ever issued for it.
//   During poll, "now()" in I2 reads "the time the poll has reached"; see poll().
//
// Complexity: insert, cancel, reschedule O(1) (amortised: a bucket array may grow or be
// compacted); poll O(fired + cascaded + levels), each timer cascading at most 7 times,
// so expiry is amortised O(1) per timer; an idle jump of any length costs a bit scan
// per level, never a per-tick loop.  Cancel leaves a tombstone; a full bucket whose
// tombstones are at least half of it is compacted instead of grown, so compaction is
// paid for by earlier cancels.
//
// Memory (details in docs/wheel.md): a 32-byte node per timer in a slab of 32-bit
// indices with a free list — chunk 0 grows from 64 nodes to 2 MiB, then 2 MiB chunks
// (one transparent huge page each) — plus a 4-byte entry per timer in its bucket's
// array, plus 64 KiB of fixed tables.  No allocation per timer.  Measured: 38-41 B per
// pending timer at 1M-10M.  Bound: a bucket array grows only when more than half of it
// is live, so it holds < 4 entries per live timer at its peak: <= 32 + 16 = 48 B per
// timer at the high-water mark.  Memory follows the high-water mark: the slab never
// shrinks (bucket arrays over 4 KiB are returned when their bucket empties).
// Up to kMaxTimers pending timers.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/result.h"
#include "wheel/bucket.h"

namespace caesium::wheel {

// A generational reference to a timer: slab index + generation.  A handle stays valid
// until its timer fires or is cancelled (reschedule keeps it valid); after that, every
// operation on it is a reported no-op.  Generations are 32 bits, so a handle kept while
// its slab slot is reused 2^32 times could alias; nothing else can.
struct Handle {
  uint32_t index = UINT32_MAX;
  uint32_t generation = 0;
  friend bool operator==(const Handle&, const Handle&) = default;
};

struct Expired {
  Handle handle;            // already stale when delivered: the timer has fired
  int64_t deadline_ms = 0;  // as given to insert/reschedule (may be < the poll's now)
  uint64_t payload = 0;
};

class TimingWheel {
 public:
  static constexpr int kLevels = 8;
  static constexpr int kSlotsPerLevel = 256;
  static constexpr uint32_t kMaxTimers = UINT32_C(1) << 30;

  // now() starts at start_ms; nothing is pending.
  explicit TimingWheel(int64_t start_ms);
  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;
  TimingWheel(TimingWheel&&) noexcept = default;
  TimingWheel& operator=(TimingWheel&&) noexcept = default;
  ~TimingWheel() = default;

  // Adds a timer; O(1).  Any int64 deadline is accepted; one <= now() fires at the next
  // poll.  Throws std::length_error beyond kMaxTimers pending, std::bad_alloc if memory
  // runs out (the wheel is unchanged in both cases).
  Handle insert(int64_t deadline_ms, uint64_t payload);

  // Removes a pending timer; O(1) amortised.  Returns false, changing nothing, if the
  // handle is stale (already fired or cancelled), forged, or default-constructed.
  bool cancel(Handle handle);

  // Moves a pending timer to a new deadline, keeping its handle and payload; it then
  // orders as if inserted now.  Returns false, changing nothing, for a stale handle
  // (a fired timer is not revived).
  bool reschedule(Handle handle, int64_t deadline_ms);

  // True while the timer is pending.
  bool pending(Handle handle) const;

  // Grows the slab to hold `timers` timers (capped at kMaxTimers) and touches its memory,
  // so that inserts up to that count neither allocate nor page-fault.  Like
  // vector::reserve, it never shrinks anything.  Throws std::bad_alloc.
  void reserve(size_t timers);

  // Fires every timer due at now_ms — each pending timer with (effective) deadline <=
  // now_ms — calling on_expired(const Expired&) once per timer, in the order described
  // above, and advances now() to now_ms.  Returns the number fired.
  //   - now_ms < now(): no-op, returns 0.  A poll from inside a callback: no-op, 0.
  //   - During the poll, now() already reads now_ms.  The callback may insert, cancel
  //     and reschedule any timer, itself included (cancelling itself returns false: it
  //     has fired).  A timer cancelled or rescheduled before its turn does not fire in
  //     this poll.  A timer inserted or rescheduled during the poll with a deadline <=
  //     now_ms is overdue and fires in the NEXT poll, never in this one — so a callback
  //     that re-arms itself at "now" cannot make a poll loop forever.  One with a
  //     deadline > now_ms is placed normally.
  //   - on_expired must not throw: an exception escaping it calls std::terminate.
  // Cost: O(fired + cascaded) plus a bit scan per level — independent of how far now_ms
  // jumps.
  template <class F>
  size_t poll(int64_t now_ms, F&& on_expired);

  // The same, appending the fired timers to `out`.
  size_t poll(int64_t now_ms, std::vector<Expired>& out);

  // When to poll next: nullopt when nothing is pending; now() when an overdue timer is
  // pending (see insert).  Otherwise a time > now() that is never later than the
  // earliest pending deadline, and equal to it unless the earliest bucket lies above
  // level 0 and its earliest timer was cancelled or rescheduled away since the bucket
  // was filled.  When it is early, a poll at it cascades that bucket and the next answer
  // is exact or later, so following it never spins: at most 7 early polls per bucket.
  std::optional<int64_t> next_deadline() const;

  size_t size() const { return size_; }
  int64_t now() const { return now_ms_; }

  // Bytes held by the wheel: slab chunks, bucket arrays (capacity), fixed tables.
  size_t memory_bytes() const;

  // Verifies I1-I5 and the counters; O(pending + slab).  For tests and debug builds.
  // Returns an Error describing the first violation.
  Status check_invariants() const;

 private:
  struct Node {
    int64_t deadline_ms;  // as given
    uint64_t payload;
    uint32_t generation;  // bumped when the timer leaves (fires or is cancelled)
    uint32_t pos;         // position in its bucket's array; next free index when free
    uint16_t bucket;      // bucket id, or kFreeBucket
  };
  static_assert(sizeof(Node) == 32, "the memory budget assumes 32-byte nodes");

  static constexpr uint32_t kChunkShift = 16;  // 65,536 nodes x 32 B = 2 MiB per chunk
  static constexpr uint32_t kChunkNodes = UINT32_C(1) << kChunkShift;
  static constexpr uint16_t kWheelBuckets = kLevels * kSlotsPerLevel;
  static constexpr uint16_t kOverdue = kWheelBuckets;  // deadlines <= now()
  static constexpr uint16_t kNoBucket = UINT16_MAX - 1;
  static constexpr uint16_t kFreeBucket = UINT16_MAX;
  static constexpr uint32_t kNil = UINT32_MAX;

  // Times as uint64 with the sign bit flipped: int64 order becomes unsigned order.
  static uint64_t biased(int64_t t) { return static_cast<uint64_t>(t) ^ (UINT64_C(1) << 63); }
  static int64_t unbiased(uint64_t u) { return static_cast<int64_t>(u ^ (UINT64_C(1) << 63)); }

  Node& node(uint32_t index) { return chunks_[index >> kChunkShift][index & (kChunkNodes - 1)]; }
  const Node& node(uint32_t index) const {
    return chunks_[index >> kChunkShift][index & (kChunkNodes - 1)];
  }
  // Walks over a bucket prefetch the node this many entries ahead: far enough to cover
  // a DRAM miss at a few ns of work per entry.
  static constexpr uint32_t kPrefetchAhead = 16;
  // Where to prefetch for an entry (a tombstone names node 0, which exists whenever a
  // tombstone does).  Callers write __builtin_prefetch(prefetch_address(e)) themselves:
  // GCC 12 deems a function that only prefetches "pure" and deletes calls to it.
  const Node* prefetch_address(uint32_t entry) const {
    return &node(entry == detail::kTombstone ? 0 : entry);
  }

  bool valid(Handle h) const {
    if (h.index >= high_water_) return false;
    const Node& n = node(h.index);
    return n.generation == h.generation && n.bucket != kFreeBucket;
  }

  // Slab.  allocate() pops the free list; allocate_fresh() takes a never-used node.
  uint32_t allocate() {
    if (free_head_ == kNil) return allocate_fresh();
    const uint32_t index = free_head_;
    free_head_ = node(index).pos;
    return index;
  }
  uint32_t allocate_fresh();
  void free_node(uint32_t index, Node& n) {
    ++n.generation;
    n.bucket = kFreeBucket;
    n.pos = free_head_;
    free_head_ = index;
  }

  // Placement.  A timer due by now() goes to the overdue bucket; any other to the bucket
  // named by the first byte in which its deadline differs from elapsed_ (I2).
  // REQUIRES for bucket_for: deadline >= elapsed_ in biased order.
  uint16_t bucket_for(uint64_t deadline_biased) const {
    assert(deadline_biased >= elapsed_);
    const uint64_t differ = (deadline_biased ^ elapsed_) | 1;
    const int level = (63 - __builtin_clzll(differ)) >> 3;
    const auto slot = static_cast<int>((deadline_biased >> (8 * level)) & 0xff);
    return static_cast<uint16_t>(level * kSlotsPerLevel + slot);
  }
  uint16_t target_bucket(int64_t deadline_ms) const {
    return deadline_ms <= now_ms_ ? kOverdue : bucket_for(biased(deadline_ms));
  }

  // Buckets.  make_room() guarantees that push() cannot fail: it compacts a full bucket
  // whose tombstones are at least half of it, or else grows it (which may throw).  So
  // compaction is paid for by the inserts that refill a bucket, not by cancels, and a
  // workload that only cancels never compacts.  It can move entries of that bucket.
  void make_room(uint16_t bucket) {
    if (buckets_[bucket].entries.full()) make_room_slow(bucket);
  }
  void make_room_slow(uint16_t bucket);
  void push(uint16_t bucket, uint32_t index, Node& n) {
    detail::Bucket& b = buckets_[bucket];
    n.pos = b.entries.push_back_unchecked(index);
    n.bucket = bucket;
    if (b.live++ == 0 && bucket != kOverdue) set_occupied(bucket);
    if (n.deadline_ms < b.min_deadline_ms) b.min_deadline_ms = n.deadline_ms;
  }
  // Tombstones an entry; a bucket left with no live entries is emptied (emptied()), so
  // occupancy bits stay exact — except the bucket a poll is walking, which it empties.
  void remove_entry(uint16_t bucket, uint32_t pos) {
    detail::Bucket& b = buckets_[bucket];
    b.entries[pos] = detail::kTombstone;
    if (--b.live == 0) emptied(bucket);
  }
  void emptied(uint16_t bucket);
  void compact(uint16_t bucket);
  void set_occupied(uint16_t bucket) {
    const int level = bucket / kSlotsPerLevel;
    const int slot = bucket % kSlotsPerLevel;
    occupied_[level][slot / 64] |= UINT64_C(1) << (slot % 64);
    level_mask_ |= 1u << level;
  }
  void clear_occupied(uint16_t bucket);
  uint64_t bucket_start(int level, int slot) const;
  int lowest_slot(int level) const;

  bool begin_poll(int64_t now_ms);
  // Finishes the bucket being fired, cascades, and finds the next due level-0 bucket.
  // noexcept: moving timers down may need memory, and running out of it in the middle of
  // a poll terminates rather than leave the wheel half-cascaded.
  bool advance() noexcept;
  void end_poll();

  // Takes a due timer out for delivery: frees its node and returns what to report.
  Expired take(uint32_t index) {
    Node& n = node(index);
    const Expired e{Handle{index, n.generation}, n.deadline_ms, n.payload};
    --buckets_[firing_].live;
    free_node(index, n);
    --size_;
    return e;
  }

  template <class F>
  static void deliver(F& on_expired, const Expired& e) noexcept {
    on_expired(e);
  }

  struct FreeChunk {
    void operator()(Node* p) const { std::free(p); }
  };
  using ChunkPtr = std::unique_ptr<Node[], FreeChunk>;
  size_t slab_capacity() const;
  void grow_slab(size_t nodes);

  std::vector<ChunkPtr> chunks_;
  uint32_t first_chunk_nodes_ = 0;  // chunk 0 grows up to kChunkNodes; the rest are full
  std::vector<detail::Bucket> buckets_;  // kWheelBuckets wheel slots + overdue
  uint64_t occupied_[kLevels][kSlotsPerLevel / 64] = {};
  uint32_t level_mask_ = 0;
  uint32_t high_water_ = 0;  // slab nodes ever used
  uint32_t free_head_ = kNil;
  size_t size_ = 0;
  int64_t now_ms_;
  uint64_t elapsed_;  // biased time the wheel's placement is relative to (<= now)

  // Poll state: the bucket being fired and the range of its array still to fire.
  bool in_poll_ = false;
  uint16_t firing_ = kNoBucket;
  uint32_t fire_pos_ = 0;
  uint32_t fire_end_ = 0;
};

// The O(1) operations are inline: they are a handful of instructions around one or two
// cache misses, and a call per operation would cut how many misses the CPU overlaps.

inline Handle TimingWheel::insert(int64_t deadline_ms, uint64_t payload) {
  const uint16_t bucket = target_bucket(deadline_ms);
  make_room(bucket);  // may throw, before anything changed
  const uint32_t index = allocate();
  Node& n = node(index);
  n.deadline_ms = deadline_ms;
  n.payload = payload;
  push(bucket, index, n);
  ++size_;
  return Handle{index, n.generation};
}

inline bool TimingWheel::cancel(Handle handle) {
  if (!valid(handle)) return false;
  Node& n = node(handle.index);
  const uint16_t bucket = n.bucket;
  const uint32_t pos = n.pos;
  free_node(handle.index, n);
  --size_;
  remove_entry(bucket, pos);
  return true;
}

inline bool TimingWheel::reschedule(Handle handle, int64_t deadline_ms) {
  if (!valid(handle)) return false;
  const uint16_t bucket = target_bucket(deadline_ms);
  make_room(bucket);  // may throw, before anything changed; may move this timer's entry
  Node& n = node(handle.index);
  const uint16_t old_bucket = n.bucket;
  const uint32_t old_pos = n.pos;
  n.deadline_ms = deadline_ms;
  push(bucket, handle.index, n);  // first, so old_bucket is not emptied if it is `bucket`
  remove_entry(old_bucket, old_pos);
  return true;
}

inline bool TimingWheel::pending(Handle handle) const { return valid(handle); }

template <class F>
size_t TimingWheel::poll(int64_t now_ms, F&& on_expired) {
  if (!begin_poll(now_ms)) return 0;
  size_t fired = 0;
  do {
    detail::Bucket& b = buckets_[firing_];
    // b.entries is re-read on every step: a callback may append to the overdue bucket
    // (which can move its array); entries at or beyond fire_end_ are not this poll's.
    while (fire_pos_ < fire_end_) {
      const uint32_t index = b.entries[fire_pos_++];
      if (index == detail::kTombstone) continue;
      if (fire_pos_ + kPrefetchAhead < fire_end_) __builtin_prefetch(prefetch_address(b.entries[fire_pos_ + kPrefetchAhead]));
      const Expired e = take(index);
      ++fired;
      deliver(on_expired, e);
    }
  } while (advance());
  end_poll();
  return fired;
}

}  // namespace caesium::wheel
