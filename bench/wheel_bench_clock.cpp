// The settable monotonic clock of wheel_bench_clock.h: an override of clock_gettime for
// this benchmark binary only.
#include "bench/wheel_bench_clock.h"

#include <dlfcn.h>
#include <uv.h>

#include <cstring>
#include <ctime>

namespace caesium::bench {
namespace {

using ClockFn = int (*)(clockid_t, timespec*);

bool g_fake_on = false;
uint64_t g_fake_ms = 0;

ClockFn libc_clock_gettime() {
  static const ClockFn fn = [] {
    void* sym = dlsym(RTLD_NEXT, "clock_gettime");
    ClockFn f = nullptr;
    std::memcpy(&f, &sym, sizeof f);  // object pointer to function pointer, portably
    return f;
  }();
  return fn;
}

}  // namespace

void fake_monotonic_set_ms(uint64_t ms) {
  g_fake_on = true;
  g_fake_ms = ms;
}

void fake_monotonic_off() { g_fake_on = false; }

bool fake_monotonic_works() {
  fake_monotonic_set_ms(123'456'789);
  const uint64_t seen = uv_hrtime() / 1'000'000;
  fake_monotonic_off();
  return seen == 123'456'789;
}

namespace {
double read_ns(clockid_t clock) {
  timespec ts{};
  libc_clock_gettime()(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
}  // namespace

double thread_cpu_ns() { return read_ns(CLOCK_THREAD_CPUTIME_ID); }

}  // namespace caesium::bench

// Overrides libc's clock_gettime for this executable and the libraries it loads.
extern "C" int clock_gettime(clockid_t clock, timespec* ts) noexcept {
  using namespace caesium::bench;
  if (g_fake_on && (clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_COARSE)) {
    ts->tv_sec = static_cast<time_t>(g_fake_ms / 1000);
    ts->tv_nsec = static_cast<long>((g_fake_ms % 1000) * 1'000'000);
    return 0;
  }
  return libc_clock_gettime()(clock, ts);
}
