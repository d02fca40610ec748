#include "node/daemon/runtime/deferred_queue.h"

#include <uv.h>

#include <cassert>
#include <cstdint>
#include <vector>

namespace caesium::daemon {

// The queue's heap block.  `closed` is set when the owning DeferredQueue is destroyed;
// the block itself lives on until the timer's close callback.  `generation` changes on
// every clear(), so a batch in progress notices that it was dropped.
struct DeferredQueue::State {
  uv_timer_t timer{};
  std::vector<std::function<void()>> queue;
  size_t in_batch = 0;  // closures of the running batch not yet run
  uint64_t generation = 0;
  bool closed = false;
};

namespace {

void run_batch(uv_timer_t* timer) {
  auto* s = static_cast<DeferredQueue::State*>(timer->data);
  std::vector<std::function<void()>> batch;
  batch.swap(s->queue);
  const uint64_t generation = s->generation;
  s->in_batch = batch.size();
  for (auto& fn : batch) {
    // A closure may clear the queue or destroy its owner: stop at once if so.  The
    // block `s` is still valid here, since its close callback runs on a later turn.
    if (s->closed || s->generation != generation) break;
    --s->in_batch;
    fn();
  }
  if (s->closed || s->generation != generation) return;
  s->in_batch = 0;
  if (!s->queue.empty()) uv_timer_start(&s->timer, run_batch, 0, 0);
}

}  // namespace

DeferredQueue::DeferredQueue(uv_loop_s* loop) : state_(new State) {
  const int rc = uv_timer_init(loop, &state_->timer);
  assert(rc == 0);
  (void)rc;
  state_->timer.data = state_;
}

DeferredQueue::~DeferredQueue() {
  state_->closed = true;
  state_->queue.clear();
  uv_close(reinterpret_cast<uv_handle_t*>(&state_->timer),
           [](uv_handle_t* h) { delete static_cast<State*>(h->data); });
}

void DeferredQueue::post(std::function<void()> fn) {
  state_->queue.push_back(std::move(fn));
  // While a batch runs the timer is not active; run_batch re-arms it at the end.
  if (state_->in_batch == 0 && !uv_is_active(reinterpret_cast<uv_handle_t*>(&state_->timer))) {
    uv_timer_start(&state_->timer, run_batch, 0, 0);
  }
}

void DeferredQueue::clear() {
  state_->queue.clear();
  state_->in_batch = 0;
  ++state_->generation;
  uv_timer_stop(&state_->timer);
}

size_t DeferredQueue::pending() const { return state_->queue.size() + state_->in_batch; }

}  // namespace caesium::daemon
