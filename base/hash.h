// Hashing: xxh3 everywhere a stable 64-bit hash is needed (digests, jitter, sharding).
// Stable across runs and machines, so it may reach messages and reports.
#pragma once

#include <cstdint>
#include <string_view>

// Inlined (the library's header carries the whole implementation): most of what is
// hashed is a short id, where a call into the shared library and its dispatch cost more
// than the hash.  The same algorithm, so the same values.
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace caesium {

inline uint64_t hash64(const void* data, size_t size, uint64_t seed = 0) {
  return XXH3_64bits_withSeed(data, size, seed);
}

inline uint64_t hash64(std::string_view s, uint64_t seed = 0) {
  return XXH3_64bits_withSeed(s.data(), s.size(), seed);
}

// Mixes a second value into a hash (order-sensitive).
inline uint64_t hash_combine(uint64_t h, uint64_t v) {
  return XXH3_64bits_withSeed(&v, sizeof v, h);
}

}  // namespace caesium
