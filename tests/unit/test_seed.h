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

}  // namespace caesium::test
