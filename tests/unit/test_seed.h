// Seeds for randomized tests (preamble: every randomized test takes a seed, prints it on
// failure and can be replayed).  CAESIUM_SEED=<n> replaces the test's fixed default.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace caesium::test {

inline uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("CAESIUM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

#if defined(__SANITIZE_ADDRESS__)
#define CAESIUM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAESIUM_TEST_SANITIZED 1
#endif
#endif

// How many seeds an expensive randomized test runs: `release` in ordinary builds, the
// smaller `sanitized` under ASan (about 10x slower; it looks for memory errors, which a
// few seeds find as well as many — the release build runs them all).
constexpr uint64_t seed_count(uint64_t release, uint64_t sanitized) {
#ifdef CAESIUM_TEST_SANITIZED
  (void)release;
  return sanitized;
#else
  (void)sanitized;
  return release;
#endif
}

}  // namespace caesium::test
