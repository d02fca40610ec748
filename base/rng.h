// Rng: the only source of randomness in core code (docs/conventions.md §3).
//
// Each component owns one, seeded by its driver: the simulator derives every seed from
// the run's seed, so the same seed replays the same run bit for bit; only the daemon
// seeds from entropy.  xoshiro256** for the stream, SplitMix64 to expand a 64-bit seed.
// Not cryptographic: nonces for frame encryption come from counters, not from here.
#pragma once

#include <cassert>
#include <cstdint>
#include <iterator>
#include <utility>

namespace caesium {

// __extension__ keeps -Wpedantic quiet about the GCC/Clang 128-bit integer.
__extension__ using u128 = unsigned __int128;

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x5eed) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& word : s_) word = splitmix64(x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n).  REQUIRES: n > 0.  Lemire's multiply-shift with rejection, so
  // there is no modulo bias.
  uint64_t below(uint64_t n) {
    assert(n > 0);
    u128 m = static_cast<u128>(next_u64()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<u128>(next_u64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform in [lo, hi], inclusive.  REQUIRES: lo <= hi.
  int64_t between(int64_t lo, int64_t hi) {
    assert(lo <= hi);
    const auto span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (span == UINT64_MAX) return static_cast<int64_t>(next_u64());
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + below(span + 1));
  }

  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  bool chance(double p) { return unit() < p; }

  template <class It>
  void shuffle(It first, It last) {
    const auto n = static_cast<uint64_t>(std::distance(first, last));
    for (uint64_t i = n; i > 1; --i) {
      using std::swap;
      swap(first[static_cast<std::ptrdiff_t>(i - 1)],
           first[static_cast<std::ptrdiff_t>(below(i))]);
    }
  }

  // An independent stream derived from this one (for handing to a sub-component).
  Rng fork() { return Rng(next_u64()); }

  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace caesium
