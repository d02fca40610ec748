// Bucket: one slot of the timing wheel — an append-only array of slab indices with
// tombstones (an internal part of TimingWheel; see timing_wheel.h).
//
// Why an array and not an intrusive linked list: expiry walks whole buckets, and walking
// an array lets the CPU (and an explicit prefetch) fetch the next nodes while the current
// one is processed; a linked list makes every node a dependent cache miss, which at
// millions of timers costs ~100 ns each.  Cancel stays O(1): the node knows its position
// and writes a tombstone there.  Order of appends is kept, which is what makes equal
// deadlines come out in insertion order.
//
// Invariants (checked by TimingWheel::check_invariants):
//   - live <= size <= capacity;  live == number of entries that are not kTombstone.
//   - min_deadline_ms <= the deadline of every live entry (it can be stale-low after a
//     cancel, never too high).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace caesium::wheel::detail {

inline constexpr uint32_t kTombstone = UINT32_MAX;

// A growable array of uint32_t owned through malloc/realloc, so that growing a large
// bucket can extend in place instead of copying.  Movable, not copyable.
class EntryArray {
 public:
  EntryArray() = default;
  EntryArray(const EntryArray&) = delete;
  EntryArray& operator=(const EntryArray&) = delete;
  EntryArray(EntryArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  EntryArray& operator=(EntryArray&& other) noexcept {
    swap(other);
    return *this;
  }
  ~EntryArray() { std::free(data_); }

  void swap(EntryArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  bool full() const { return size_ == capacity_; }

  // Makes room for at least one more value.  Throws std::bad_alloc, leaving the array
  // unchanged.
  void grow() { reallocate(grown_capacity()); }

  // Appends and returns the position.  REQUIRES: !full().
  uint32_t push_back_unchecked(uint32_t value) {
    data_[size_] = value;
    return size_++;
  }

  uint32_t& operator[](uint32_t i) { return data_[i]; }
  uint32_t operator[](uint32_t i) const { return data_[i]; }
  uint32_t size() const { return size_; }
  uint32_t capacity() const { return capacity_; }

  // REQUIRES: n <= size().
  void truncate(uint32_t n) { size_ = n; }

  // Forgets the contents; keeps small buffers for reuse and returns large ones, so an
  // emptied bucket does not pin the memory of its busiest moment.
  void clear() {
    size_ = 0;
    if (capacity_ > kKeepCapacity) release();
  }

  // Returns memory when the array is mostly unused (after compaction).
  void shrink_if_sparse() {
    if (capacity_ > kKeepCapacity && size_ < capacity_ / 4) reallocate(size_ * 2 > kInitialCapacity ? size_ * 2 : kInitialCapacity);
  }

  void release() {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
  }

 private:
  static constexpr uint32_t kInitialCapacity = 8;
  static constexpr uint32_t kKeepCapacity = 1024;

  // Doubling, saturating at UINT32_MAX (the wheel caps the timer count at 2^30, so a
  // bucket never holds more than 2^31 + 32 entries).
  uint32_t grown_capacity() const {
    if (capacity_ == 0) return kInitialCapacity;
    return capacity_ < (UINT32_C(1) << 31) ? capacity_ * 2 : UINT32_MAX;
  }

  void reallocate(uint32_t capacity) {
    void* p = std::realloc(data_, sizeof(uint32_t) * capacity);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<uint32_t*>(p);
    capacity_ = capacity;
  }

  uint32_t* data_ = nullptr;
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;
};

struct Bucket {
  EntryArray entries;                   // slab indices in append order, or kTombstone
  uint32_t live = 0;                    // entries that are not tombstones
  int64_t min_deadline_ms = INT64_MAX;  // lower bound of the live entries' deadlines

  uint32_t tombstones() const { return entries.size() - live; }
  void reset() {
    entries.clear();
    live = 0;
    min_deadline_ms = INT64_MAX;
  }
};

}  // namespace caesium::wheel::detail
