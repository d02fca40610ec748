// The simulator's agenda: a binary min-heap of small fixed-size events ordered by
// (time_ms, seq).  seq is the insertion counter, so events at the same virtual instant
// run in the order they were scheduled — the order is a function of the seed alone.
//
// Events are plain 40-byte values; anything variable (message bytes, fault actions)
// lives in a Pool and the event holds its slot, so the heap never allocates per event
// beyond its own amortised growth and byte strings are moved, never copied.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

namespace caesium::sim {

enum class EventKind : uint8_t {
  kDatagram = 0,        // node = receiver, slot = Pool<InFlight>
  kStream = 1,          // node = receiver, slot = Pool<InFlight>
  kTick = 2,            // node, generation, a = tick token
  kSyncDone = 3,        // node, generation, a = storage seq
  kInvocationDone = 4,  // node, generation, a = execution index, aux = outcome
  kAction = 5,          // slot = Pool<std::function<void()>>: faults, workload
  kConnect = 6,         // node = source, generation, a = destination, slot = attempt token;
                        // aux 0: a connect attempt ends, 1: the reconnect back-off ran out
};

struct Event {
  int64_t time_ms = 0;
  uint64_t seq = 0;
  uint64_t a = 0;
  uint32_t node = 0;
  uint32_t generation = 0;
  uint32_t slot = 0;
  EventKind kind = EventKind::kAction;
  uint8_t aux = 0;
  bool deferred = false;  // already delayed once by a slow node
};

class EventQueue {
 public:
  // Schedules e (its seq is assigned here).  Returns the seq.
  uint64_t push(Event e) {
    e.seq = next_seq_++;
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    return e.seq;
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // REQUIRES: !empty()
  const Event& top() const { return heap_.front(); }
  Event pop() {
    assert(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time_ms != y.time_ms ? x.time_ms > y.time_ms : x.seq > y.seq;
    }
  };
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

// Slots for event payloads, reused through a free list.
template <class T>
class Pool {
 public:
  uint32_t put(T value) {
    if (!free_.empty()) {
      const uint32_t slot = free_.back();
      free_.pop_back();
      items_[slot] = std::move(value);
      return slot;
    }
    items_.push_back(std::move(value));
    return static_cast<uint32_t>(items_.size() - 1);
  }
  T& at(uint32_t slot) { return items_[slot]; }
  // Moves the value out and frees the slot.
  T take(uint32_t slot) {
    T out = std::move(items_[slot]);
    free_.push_back(slot);
    return out;
  }
  size_t live() const { return items_.size() - free_.size(); }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> free_;
};

}  // namespace caesium::sim
