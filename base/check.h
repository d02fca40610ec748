// Assertions that stay on in release builds (TigerBeetle keeps its asserts in production).
// CAESIUM_ASSERT is for what the code believes about its own state — never for anything
// the network, a file or a user controls (those are errors: base/result.h).  It is cheap
// by contract: one comparison or a small bounded loop.  Costlier checks (a walk over every
// occurrence) run behind a runtime switch (SchedulerOptions::check_invariants), which the
// simulator and debug builds turn on.
#pragma once

namespace caesium {

// Reports the failed condition with its place and aborts the process.
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line);

}  // namespace caesium

#define CAESIUM_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::caesium::assertion_failed(#condition, __FILE__, __LINE__))
