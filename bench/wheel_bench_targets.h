// The three timer structures that `caesium-bench wheel` compares, behind one small
// interface (timer i of n; deadlines as offsets in ms from the structure's start):
//
//   insert(i, offset_ms)      arm timer i
//   reschedule(i, offset_ms)  move active timer i
//   cancel(i)                 disarm timer i
//   expire(offset_ms)         fire everything due at start + offset_ms; returns the count
//   bytes()                   memory the structure holds for its timers
//
// Each structure gets its memory for n timers allocated and touched before the timed
// phases (libuv: the handle array, uv_timer_init'ed; wheel: reserve(n); heap: the
// vector reserved and touched), so insert measures steady-state inserts, not page faults.
//
// WheelTarget    caesium::wheel::TimingWheel.
// LibuvTarget    libuv's own timers: uv_timer_t handles preallocated in one array and
//                uv_timer_init'ed (not timed), then uv_timer_start / uv_timer_stop, which
//                keep libuv's binary min-heap.  Expiry is uv_run(UV_RUN_NOWAIT), which
//                reads the clock (uv_update_time) and runs every due timer through its
//                callback.  libuv cannot be told the time, so while a LibuvTarget lives the
//                benchmark's settable monotonic clock (wheel_bench_clock.h) stands in for
//                the real one: expire(t) sets it to start + t and calls uv_run once — the
//                same simulated time the other two structures get.
// HeapTarget     std::priority_queue of (deadline, sequence, id, generation), with lazy
//                deletion: cancel bumps the timer's generation in a side table, reschedule
//                bumps it and pushes a new entry, and a popped entry whose generation is
//                stale is dropped.  So its cancel is O(1) and cheap, the price being paid
//                at expiry and in memory (dead entries stay in the heap until popped).
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "bench/wheel_bench_clock.h"
#include "wheel/timing_wheel.h"

namespace caesium::bench {

inline uint64_t g_fired_payload_sum = 0;  // keeps the callbacks from being optimised away

class WheelTarget {
 public:
  static constexpr const char* kName = "wheel";
  WheelTarget(size_t n, int64_t start_ms) : start_ms_(start_ms), wheel_(start_ms), handles_(n) {
    wheel_.reserve(n);  // the slab, allocated and touched up front, as libuv's handles are
  }

  void insert(size_t i, int64_t offset_ms) { handles_[i] = wheel_.insert(start_ms_ + offset_ms, i); }
  void reschedule(size_t i, int64_t offset_ms) { wheel_.reschedule(handles_[i], start_ms_ + offset_ms); }
  void cancel(size_t i) { wheel_.cancel(handles_[i]); }
  size_t expire(int64_t offset_ms) {
    return wheel_.poll(start_ms_ + offset_ms, [](const wheel::Expired& e) { g_fired_payload_sum += e.payload; });
  }
  size_t bytes() const { return wheel_.memory_bytes(); }
  size_t size() const { return wheel_.size(); }

 private:
  int64_t start_ms_;
  wheel::TimingWheel wheel_;
  std::vector<wheel::Handle> handles_;  // the caller's handles: not the structure's memory
};

class HeapTarget {
 public:
  static constexpr const char* kName = "priority_queue";
  HeapTarget(size_t n, int64_t start_ms) : start_ms_(start_ms), timers_(n) {
    heap_.reserve_touched(n);  // room for the first n entries, touched up front
  }

  void insert(size_t i, int64_t offset_ms) {
    timers_[i].payload = i;
    timers_[i].active = true;
    heap_.push(Entry{start_ms_ + offset_ms, seq_++, static_cast<uint32_t>(i), timers_[i].generation});
    ++size_;
  }
  void reschedule(size_t i, int64_t offset_ms) {
    Timer& t = timers_[i];
    if (!t.active) return;
    ++t.generation;
    heap_.push(Entry{start_ms_ + offset_ms, seq_++, static_cast<uint32_t>(i), t.generation});
  }
  void cancel(size_t i) {
    Timer& t = timers_[i];
    if (!t.active) return;
    ++t.generation;
    t.active = false;
    --size_;
  }
  size_t expire(int64_t offset_ms) {
    const int64_t now_ms = start_ms_ + offset_ms;
    size_t fired = 0;
    while (!heap_.empty() && heap_.top().deadline_ms <= now_ms) {
      const Entry e = heap_.top();
      heap_.pop();
      Timer& t = timers_[e.id];
      if (!t.active || t.generation != e.generation) continue;  // cancelled or moved
      t.active = false;
      --size_;
      ++fired;
      g_fired_payload_sum += t.payload;
    }
    return fired;
  }
  size_t bytes() const { return heap_.capacity() * sizeof(Entry) + timers_.capacity() * sizeof(Timer); }
  size_t size() const { return size_; }

 private:
  struct Entry {
    int64_t deadline_ms;
    uint64_t seq;  // insertion order among equal deadlines, as the wheel does
    uint32_t id;
    uint32_t generation;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.deadline_ms != b.deadline_ms ? a.deadline_ms > b.deadline_ms : a.seq > b.seq;
    }
  };
  struct Timer {
    uint64_t payload = 0;
    uint32_t generation = 0;
    bool active = false;
  };
  // std::priority_queue with its container's capacity visible, for bytes().
  struct Heap : std::priority_queue<Entry, std::vector<Entry>, Later> {
    size_t capacity() const { return c.capacity(); }
    void reserve_touched(size_t n) {
      c.resize(n);
      c.clear();
    }
  };

  int64_t start_ms_;
  Heap heap_;
  std::vector<Timer> timers_;
  uint64_t seq_ = 0;
  size_t size_ = 0;
};

class LibuvTarget {
 public:
  static constexpr const char* kName = "libuv";
  LibuvTarget(size_t n, int64_t start_ms) : start_ms_(static_cast<uint64_t>(start_ms)), n_(n), handles_(new uv_timer_t[n]) {
    fake_monotonic_set_ms(start_ms_);
    uv_loop_init(&loop_);  // the loop's now is start_ms
    for (size_t i = 0; i < n; ++i) {
      uv_timer_init(&loop_, &handles_[i]);
      handles_[i].data = reinterpret_cast<void*>(i);
    }
  }
  LibuvTarget(const LibuvTarget&) = delete;
  LibuvTarget& operator=(const LibuvTarget&) = delete;
  ~LibuvTarget() {
    for (size_t i = 0; i < n_; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&handles_[i]), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    fake_monotonic_off();
  }

  void insert(size_t i, int64_t offset_ms) {
    uv_timer_start(&handles_[i], on_timer, static_cast<uint64_t>(offset_ms), 0);
  }
  void reschedule(size_t i, int64_t offset_ms) { insert(i, offset_ms); }  // uv re-arms in place
  void cancel(size_t i) { uv_timer_stop(&handles_[i]); }
  // The clock reads start + offset; one non-blocking turn of the loop fires what is due.
  size_t expire(int64_t offset_ms) {
    fake_monotonic_set_ms(start_ms_ + static_cast<uint64_t>(offset_ms));
    fired_ = 0;
    uv_run(&loop_, UV_RUN_NOWAIT);
    return fired_;
  }
  size_t bytes() const { return n_ * sizeof(uv_timer_t); }

 private:
  static void on_timer(uv_timer_t* t) {
    g_fired_payload_sum += reinterpret_cast<uintptr_t>(t->data);
    ++fired_;
  }
  static inline size_t fired_ = 0;

  uint64_t start_ms_;
  size_t n_;
  uv_loop_t loop_;
  std::unique_ptr<uv_timer_t[]> handles_;
};

}  // namespace caesium::bench
