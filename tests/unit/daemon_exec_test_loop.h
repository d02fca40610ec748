// A private libuv loop for one test, with hang guards; and a sample invocation.
//
// run_until() and drain() stop after `limit_ms` of loop time and report failure: a
// bound on a hang, not a timing assertion (nothing asserts how fast anything is).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>

#include "node/core/io.h"

namespace caesium::test {

// Every field set to something recognisable (scheduled = 2026-03-29T01:30:00.250Z).
inline node::Invocation sample_invocation(const std::string& handler) {
  node::Invocation inv;
  inv.id = 42;
  inv.handler = handler;
  inv.volume = "billing";
  inv.entity = "acme";
  inv.entry = "nightly-report";
  inv.scheduled_utc_ms = 1'774'747'800'250;
  inv.fire_id = "f-0001";
  inv.attempt = 3;
  inv.possible_duplicate = true;
  inv.sequence = 17;
  return inv;
}

class TestLoop {
 public:
  TestLoop() { uv_loop_init(&loop_); }
  ~TestLoop() {
    // A test that failed may leave handles open: close them so the next test starts
    // clean (their owners are gone, so nothing will use them again).
    if (uv_loop_close(&loop_) == UV_EBUSY) {
      uv_walk(&loop_, [](uv_handle_t* h, void*) { if (!uv_is_closing(h)) uv_close(h, nullptr); }, nullptr);
      for (int i = 0; i < 100 && uv_run(&loop_, UV_RUN_NOWAIT) != 0; ++i) {}
      uv_loop_close(&loop_);
    }
  }
  TestLoop(const TestLoop&) = delete;
  TestLoop& operator=(const TestLoop&) = delete;

  uv_loop_t* get() { return &loop_; }

  // Runs the loop until `done()` holds; false if `limit_ms` passed first.
  bool run_until(const std::function<bool()>& done, int64_t limit_ms = 20'000) {
    return spin([&] { return done(); }, limit_ms);
  }

  // Runs the loop until it has no live handle left (every child reaped, every handle
  // closed); false if `limit_ms` passed first.
  bool drain(int64_t limit_ms = 20'000) {
    return spin([&] { return uv_loop_alive(&loop_) == 0; }, limit_ms);
  }

  // Runs the loop for about `ms` of loop time (used to give something the chance to
  // happen that must not happen).
  void run_for(int64_t ms) {
    const uint64_t until = uv_now(&loop_) + static_cast<uint64_t>(ms);
    spin([&] { return uv_now(&loop_) >= until; }, ms + 1000);
  }

 private:
  bool spin(const std::function<bool()>& stop, int64_t limit_ms) {
    // An unreferenced ticker wakes the loop regularly without keeping it alive.
    uv_timer_t tick;
    uv_timer_init(&loop_, &tick);
    uv_timer_start(&tick, [](uv_timer_t*) {}, 5, 5);
    uv_unref(reinterpret_cast<uv_handle_t*>(&tick));
    uv_update_time(&loop_);
    const uint64_t deadline = uv_now(&loop_) + static_cast<uint64_t>(limit_ms);
    bool ok = stop();
    while (!ok && uv_now(&loop_) < deadline) {
      uv_run(&loop_, UV_RUN_ONCE);
      ok = stop();
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);  // runs the ticker's close
    return ok;
  }

  uv_loop_t loop_;
};

}  // namespace caesium::test
