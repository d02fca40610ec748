// A settable monotonic clock for driving libuv in `caesium-bench wheel`.
//
// libuv reads time only through clock_gettime (uv_update_time, and uv_run before it runs
// timers), and has no API to set a loop's "now".  To expire libuv's timers at simulated
// times — exactly as the wheel and the priority queue are polled — this benchmark binary
// defines clock_gettime itself (wheel_bench_clock.cpp), which the dynamic linker lets
// override libc's for libuv.so.  While a fake time is set, CLOCK_MONOTONIC and
// CLOCK_MONOTONIC_COARSE read it; otherwise, and for every other clock, the call goes to
// libc unchanged.  The benchmark's own stopwatch (thread_cpu_ns) is not affected.
#pragma once

#include <cstdint>

namespace caesium::bench {

// From now on the monotonic clocks read `ms` milliseconds.
void fake_monotonic_set_ms(uint64_t ms);
// Back to the real clock.
void fake_monotonic_off();
// True if the override is in effect for libuv (checked once by the benchmark).
bool fake_monotonic_works();
// CPU time of the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID): what the
// benchmark's stopwatch reads, so that time the thread spends descheduled on a shared
// machine is not charged to the structure being measured.
double thread_cpu_ns();

}  // namespace caesium::bench
