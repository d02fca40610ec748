// DeferredQueue: a loop helper shared by the handler executors (exec/) and the HTTP
// client (http/).
//
// A libuv handle's memory must stay valid until its close callback has run, which is
// on a later loop iteration.  Executors and the HTTP client therefore keep their handles in heap
// blocks that free themselves in the last close callback, so the C++ object that
// owns them can be destroyed at any moment, even from inside one of its own callbacks
// (a `done` callback may reload or destroy the HandlerSet).
#pragma once

#include <cstddef>
#include <functional>

struct uv_loop_s;

namespace caesium::daemon {

// Runs closures on a later loop iteration (through a zero-delay timer), in the order
// they were posted.  It exists so that an executor never calls `done` re-entrantly
// from `run`, even when the answer is known at once (noop, unknown handler, a program
// that cannot be spawned).
//
// Closures posted while a batch runs go to the next batch.  clear() and destruction
// drop every closure not yet run, including the rest of the batch in progress.
class DeferredQueue {
 public:
  explicit DeferredQueue(uv_loop_s* loop);
  ~DeferredQueue();
  DeferredQueue(const DeferredQueue&) = delete;
  DeferredQueue& operator=(const DeferredQueue&) = delete;

  void post(std::function<void()> fn);
  // Drops every pending closure; none of them will run.
  void clear();
  // Closures posted and not yet run (nor dropped).
  size_t pending() const;

  struct State;  // public for the C callback in deferred_queue.cpp

 private:
  State* state_;  // freed by the timer's close callback, after this object is gone
};

}  // namespace caesium::daemon
